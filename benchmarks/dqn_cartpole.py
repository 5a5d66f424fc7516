"""DQN on CartPole-v1: env steps/s with learning and wall time to a return of 450, vs RLlib.

Both variants train the same DQN (double Q, dueling, 3-step returns, a 50k prioritized buffer
with alpha 0.6 / beta 0.4, batch 32, one update per env step, lr 5e-4, one 256-unit tanh layer,
epsilon 1.0 to 0.02 over 10k env steps, target updates every 500 env steps, learning from 1000
env steps, one env), built by the same chained config: only the import differs.

Usage::

    python benchmarks/dqn_cartpole.py              # rljax
    python benchmarks/dqn_cartpole.py --compare    # plus RLlib when installed
"""

from __future__ import annotations

import os
from typing import Any

import off_policy_bench

SETTINGS = {
    "env": "CartPole-v1",
    "seed": 0,
    "target_return": 450.0,
    "max_timesteps": 200_000,
    "lr": 5e-4,
    "n_step": 3,
    "capacity": 50_000,
    "batch": 32,
    "fcnet_hiddens": [256],
}


def dqn_config(config_class: type, s: dict[str, Any]) -> Any:
    """The same chained config for rljax and RLlib."""
    return (
        config_class()
        .environment(s["env"])
        # One update per env step (RLlib's "auto" fragment would be n_step's 3 env steps).
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1, rollout_fragment_length=1)
        .training(
            lr=s["lr"],
            train_batch_size_per_learner=s["batch"],
            double_q=True,
            dueling=True,
            n_step=s["n_step"],
            target_network_update_freq=500,
            epsilon=[(0, 1.0), (10000, 0.02)],
            num_steps_sampled_before_learning_starts=1000,
            replay_buffer_config={
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": s["capacity"],
                "alpha": 0.6,
                "beta": 0.4,
            },
        )
        .rl_module(model_config={"fcnet_hiddens": s["fcnet_hiddens"], "fcnet_activation": "tanh"})
        .debugging(seed=s["seed"])
    )


def build(variant: str, s: dict[str, Any]) -> Any:
    if variant == "rljax":
        from rljax.algorithms.dqn import DQNConfig

        return dqn_config(DQNConfig, s).build_algo()
    import ray
    from ray.rllib.algorithms.dqn import DQNConfig as RLlibDQNConfig

    ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    return dqn_config(RLlibDQNConfig, s).build_algo()


if __name__ == "__main__":
    off_policy_bench.main("dqn_cartpole", os.path.abspath(__file__), SETTINGS, build)
