"""SAC on Pendulum-v1: env steps/s with learning, achieved GFLOP/s, time to -250, vs RLlib.

Both variants train the seed tutorial's SAC (256x256 ReLU actor and twin critics, batch 256,
tau 0.005, learning rates 3e-4, a 100k uniform buffer, one update per env step, learning from
1000 env steps, one env), built by the same chained config: only the import differs. The return
is the mean over the episodes finished in the iteration (at most the last 10), as both report it.

rljax's arithmetic rate is the update's FLOPs (XLA's cost analysis of the jitted update) times
the updates run per second, over the iterations after the first.

Usage::

    python benchmarks/sac_pendulum.py              # rljax
    python benchmarks/sac_pendulum.py --compare    # plus RLlib when installed
"""

from __future__ import annotations

import os
from typing import Any

import off_policy_bench

SETTINGS = {
    "env": "Pendulum-v1",
    "seed": 0,
    "target_return": -250.0,
    "max_timesteps": 20_000,
    "lr": 3e-4,
    "batch": 256,
    "capacity": 100_000,
    "fcnet_hiddens": [256, 256],
    "smoothing": 10,
}


def sac_config(config_class: type, s: dict[str, Any]) -> Any:
    """The same chained config for rljax and RLlib."""
    return (
        config_class()
        .environment(s["env"])
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
        .training(
            actor_lr=s["lr"],
            critic_lr=s["lr"],
            alpha_lr=s["lr"],
            tau=0.005,
            initial_alpha=1.0,
            train_batch_size_per_learner=s["batch"],
            num_steps_sampled_before_learning_starts=1000,
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": s["capacity"]},
        )
        .rl_module(model_config={"fcnet_hiddens": s["fcnet_hiddens"], "fcnet_activation": "relu"})
        .reporting(
            metrics_num_episodes_for_smoothing=s["smoothing"],
            min_sample_timesteps_per_iteration=1000,
        )
        .debugging(seed=s["seed"])
    )


def build(variant: str, s: dict[str, Any]) -> Any:
    if variant == "rljax":
        from rljax.algorithms.sac import SACConfig

        return sac_config(SACConfig, s).build_algo()
    import ray
    from ray.rllib.algorithms.sac import SACConfig as RLlibSACConfig

    ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    return sac_config(RLlibSACConfig, s).build_algo()


def gflops(algo: Any, result: dict[str, Any]) -> dict[str, Any]:
    """FLOPs per update from XLA's cost analysis, times the measured update rate."""
    import jax
    import jax.numpy as jnp

    b = algo.total_batch
    obs_dim = algo.observation_space.shape[0]
    act_dim = algo.action_space.shape[0]
    batch = {
        "obs": jnp.zeros((b, obs_dim)),
        "next_obs": jnp.zeros((b, obs_dim)),
        "action": jnp.zeros((b, act_dim)),
        "reward": jnp.zeros((b,)),
        "discount": jnp.ones((b,)),
    }
    compiled = (
        jax.jit(algo.replay_learner.learn)
        .lower(algo.state.learner, batch, jnp.ones((b,)), jax.random.PRNGKey(0))
        .compile()
    )
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    flops = float(cost["flops"])
    # Iterations after the first (compilation) that ran updates: updates per second of train().
    learning = [p for p in result["curve"][1:] if p.get("updates")]
    seconds = sum(p["iter_s"] for p in learning)
    updates_per_s = sum(p["updates"] for p in learning) / seconds if seconds else 0.0
    return {
        "update_flops": flops,
        "updates_per_s": updates_per_s,
        "achieved_gflops_per_s": flops * updates_per_s / 1e9,
    }


if __name__ == "__main__":
    off_policy_bench.main("sac_pendulum", os.path.abspath(__file__), SETTINGS, build, gflops)
