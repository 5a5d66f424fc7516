"""One process of a multi-process training run for the distributed tests (not a test itself).

``python distributed_worker.py ALGO OUT_DIR ITERATIONS [kill_at]``: JAX's process settings come
from the environment (``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``);
each process writes ``OUT_DIR/result_<process>.npz``: its learner parameters and env-step
counts after ITERATIONS iterations. With ``kill_at`` the process with id 1 exits with status 3
at the start of that iteration (a process that dies).
"""

from __future__ import annotations

import os
import sys

import jax
import numpy as np


def build(algo: str) -> object:
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.ppo import PPOConfig

    if algo == "dqn":
        return (
            DQNConfig()
            .environment("CartPole-v1")
            # A fragment of one env step (the "auto" one would be n_step's 2): the update
            # counts the test expects.
            .env_runners(num_env_runners=0, num_envs_per_env_runner=4, rollout_fragment_length=1)
            .training(
                train_batch_size_per_learner=8,
                num_steps_sampled_before_learning_starts=32,
                replay_buffer_config={"capacity": 1024},
                n_step=2,
            )
            .learners(num_learners=4, same_actions_as_one_process=True, process_timeout_s=10)
            .rl_module(model_config={"fcnet_hiddens": [16]})
            .reporting(min_sample_timesteps_per_iteration=40)
            .debugging(seed=3)
            .build_algo()
        )
    if algo != "ppo":
        raise SystemExit(f"unknown algorithm {algo!r}")
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4, rollout_fragment_length=8)
        .training(train_batch_size=32, minibatch_size=8, num_epochs=2, lr=1e-3)
        .learners(num_learners=4, same_actions_as_one_process=True, process_timeout_s=10)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=3)
    )
    return config.build_algo()


def main() -> None:
    algo_name, out_dir, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
    kill_at = int(sys.argv[4]) if len(sys.argv) > 4 else None
    algo = build(algo_name)
    from rljax import distributed

    result: dict = {}
    for i in range(iterations):
        if kill_at is not None and i == kill_at and jax.process_index() == 1:
            os._exit(3)
        result = algo.train()  # type: ignore[attr-defined]
    state = algo.state  # type: ignore[attr-defined]
    params = distributed.local_copy(state.learner.params if algo_name == "dqn" else state.params)
    flat = {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree.leaves_with_path(params)}
    np.savez(
        os.path.join(out_dir, f"result_{jax.process_index()}.npz"),
        num_env_steps_sampled_lifetime=result["num_env_steps_sampled_lifetime"],
        num_env_steps_sampled=result["env_runners"]["num_env_steps_sampled"],
        num_episodes=result["env_runners"].get("num_episodes", -1),
        num_updates=np.asarray(distributed.local_copy(getattr(state, "num_updates", -1))),
        # 1 where the replay buffer's rows are split over the processes (each holds a shard).
        buffer_split=int(
            algo_name == "dqn" and not state.buffer.storage["obs"].is_fully_replicated
        ),
        process_count=jax.process_count(),
        device_count=jax.device_count(),
        **flat,
    )
    if algo_name == "dqn":  # the replay buffer too: each process's shard of it, gathered
        algo.save_to_path(os.path.join(out_dir, "ckpt"), include_replay_buffer=True)  # type: ignore[attr-defined]
    algo.stop()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
