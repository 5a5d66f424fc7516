"""Run in a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=4 (see the test):
PPO on rljax's JAX CartPole with 1, 2 and 4 learners (the same total batch and envs, sharded
over the devices), two iterations each; prints the largest parameter difference from one
device, each run's episodes and its first update's losses."""

import json

import jax
import numpy as np

from rljax.algorithms.ppo import PPOConfig


def run(learners: int) -> tuple[dict, dict]:
    n = max(learners, 1)
    algo = (
        PPOConfig()
        .environment("rljax:CartPole-v1")
        .env_runners(num_envs_per_env_runner=8)
        .learners(num_learners=learners)
        .training(train_batch_size_per_learner=512 // n, minibatch_size=128 // n, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=0)
        .build_algo()
    )
    try:
        assert algo.fused and (algo.mesh is None) == (learners <= 1)
        results = [algo.train() for _ in range(2)]
        params = jax.device_get(algo.state.params)
    finally:
        algo.stop()
    episodes = [
        (r["env_runners"]["num_episodes"], r["env_runners"]["episode_return_mean"]) for r in results
    ]
    first = results[0]["learners"]["default_policy"]  # from the same parameters and batch
    return params, {"episodes": episodes, "losses": [first["policy_loss"], first["vf_loss"]]}


def main() -> None:
    assert len(jax.devices()) == 4, jax.devices()
    one, seen1 = run(0)
    out = {"runs": {"1": seen1}, "max_abs_diff": {}}
    for learners in (2, 4):
        params, seen = run(learners)
        diffs = jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))), params, one)
        out["max_abs_diff"][str(learners)] = max(jax.tree.leaves(diffs))
        out["runs"][str(learners)] = seen
    print(json.dumps(out))


if __name__ == "__main__":
    main()
