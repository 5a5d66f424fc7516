"""Run in a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=4 (see the test)."""

import json
import sys

import jax
import numpy as np

from rljax.algorithms.ppo import PPOConfig


def main() -> None:
    assert len(jax.devices()) == 4, jax.devices()
    cfg = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=8, rollout_fragment_length=64)
        .learners(num_learners=4)
        .training(lr=1e-3, minibatch_size=32, num_epochs=2, train_batch_size_per_learner=128)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=0)
    )
    algo = cfg.build_algo()
    assert algo.mesh is not None and algo.mesh.devices.size == 4
    state0 = jax.device_get(algo.state)
    algo.runner_state, batch, _ = algo._sample(algo._runner_params(), algo.runner_state)
    batch = jax.device_get(batch)

    sharded_batch = jax.device_put(batch, algo._batch_sharding)
    assert len(sharded_batch.obs.sharding.device_set) == 4
    hlo = (
        algo._jit_update.lower(jax.device_put(state0, algo._state_sharding), sharded_batch)
        .compile()
        .as_text()
    )
    s4, m4 = algo._jit_update(jax.device_put(state0, algo._state_sharding), sharded_batch)
    dev0 = jax.devices()[0]
    s1, m1 = jax.jit(algo._update)(jax.device_put(state0, dev0), jax.device_put(batch, dev0))

    # The same update on a mesh of 2 devices (two of the four shards on each).
    from rljax.learners.devices import data_sharding, make_mesh, replicated

    mesh2 = make_mesh(jax.devices()[:2])
    upd2 = jax.jit(
        algo._update,
        in_shardings=(replicated(mesh2), data_sharding(mesh2)),
        out_shardings=(replicated(mesh2), replicated(mesh2)),
    )
    s2, _ = upd2(
        jax.device_put(state0, replicated(mesh2)), jax.device_put(batch, data_sharding(mesh2))
    )
    diffs2 = jax.tree.leaves(
        jax.tree.map(
            lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))), s2.params, s1.params
        )
    )

    diffs = jax.tree.leaves(
        jax.tree.map(
            lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))), s4.params, s1.params
        )
    )
    moved = jax.tree.leaves(
        jax.tree.map(
            lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))),
            s1.params,
            state0.params,
        )
    )
    result = algo.train()

    host = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2, num_envs_per_env_runner=4, rollout_fragment_length=16)
        .learners(num_learners=2)
        .training(minibatch_size=16, num_epochs=1, train_batch_size_per_learner=64)
        .debugging(seed=0)
        .build_algo()
    )
    host_result = host.train()
    host.stop()
    algo.stop()
    print(
        json.dumps(
            {
                "max_param_diff": max(diffs),
                "max_param_diff_2_devices": max(diffs2),
                "max_param_change": max(moved),
                "policy_loss_4": float(m4["policy_loss"]),
                "policy_loss_1": float(m1["policy_loss"]),
                "all_reduce_in_hlo": "all-reduce" in hlo,
                "train_steps": result["env_runners"]["num_env_steps_sampled"],
                "host_train_steps": host_result["env_runners"]["num_env_steps_sampled"],
                "host_sampling_timer": host_result["timers"]["env_runner_sampling_timer"],
            }
        )
    )


if __name__ == "__main__":
    sys.exit(main())
