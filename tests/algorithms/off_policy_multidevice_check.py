"""Run in a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=2 (see the test).

``python off_policy_multidevice_check.py [DQN|TD3]``: the algorithm with ``num_learners=2``
(each learner samples 16 of the 32 replayed transitions; gradients are all-reduced) must train
exactly as one learner with a batch of 32: same samples, same keys.
"""

import json
import sys

import jax
import numpy as np

from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.td3 import TD3Config

# algorithm -> (config class, env, extra training settings, the learner's parameters)
ALGOS = {
    "DQN": (DQNConfig, "CartPole-v1", {"n_step": 2}, lambda learner: learner.params),
    "TD3": (TD3Config, "Pendulum-v1", {}, lambda learner: (learner.actor, learner.critic)),
}


def _run(algo_name: str, num_learners: int, batch: int):
    config_class, env, training, params = ALGOS[algo_name]
    algo = (
        config_class()
        .environment(env)
        .env_runners(num_envs_per_env_runner=2)
        .learners(num_learners=num_learners)
        .training(
            train_batch_size_per_learner=batch,
            num_steps_sampled_before_learning_starts=32,
            replay_buffer_config={"capacity": 1024},
            **training,
        )
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        results = [algo.train() for _ in range(2)]
        hlo = ""
        if algo.mesh is not None:
            hlo = (
                algo._jit_cycle.lower(
                    algo.state,
                    algo._sample(algo._runner_params(), algo.runner_state)[1],
                )
                .compile()
                .as_text()
            )
        return jax.device_get(params(algo.state.learner)), results[-1], hlo
    finally:
        algo.stop()


def main(algo_name: str) -> None:
    assert len(jax.devices()) == 2, jax.devices()
    p2, r2, hlo = _run(algo_name, 2, 16)
    p1, r1, _ = _run(algo_name, 0, 32)
    diff = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for a, b in zip(jax.tree.leaves(p1), jax.tree.leaves(p2), strict=True)
    )
    print(
        json.dumps(
            {
                "max_param_diff": diff,
                "all_reduce_in_hlo": "all-reduce" in hlo,
                "steps_1": r1["num_env_steps_sampled_lifetime"],
                "steps_2": r2["num_env_steps_sampled_lifetime"],
                "loss_1": r1["learners"]["default_policy"]["qf_loss"],
                "loss_2": r2["learners"]["default_policy"]["qf_loss"],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "DQN")
