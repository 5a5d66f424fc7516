"""TD3 on Pendulum-v1: env steps/s with learning and wall time to -250, vs Stable-Baselines3.

Both variants train the same TD3 (the settings of ``rljax/tuned_examples/td3_pendulum.yaml``):
64x64 ReLU actor and twin critics, batch 128, Adam learning rates 1e-3, gamma 0.98, tau 0.005,
policy delay 2, target noise 0.2 clipped at 0.5, Gaussian exploration noise 0.1 (in half action
ranges), uniform random actions for the first 1000 env steps and learning from then on, one
update per env step, a 100k uniform buffer, one env. rljax runs the fused EnvPool path
(``num_env_runners=0``); Stable-Baselines3 runs its TD3 on a gymnasium env, torch on the CPU
with one thread (its fastest setting for networks this small).
The return is the mean of the last 10 episodes for both: an rljax iteration is 2010 env steps,
10 whole episodes and their auto-reset steps; each ``learn()`` call of Stable-Baselines3 is 2000
env steps, and its episode buffer keeps 10 episodes.

Usage::

    python benchmarks/td3_pendulum.py              # rljax
    python benchmarks/td3_pendulum.py --compare    # plus Stable-Baselines3 (pip install stable-baselines3)
"""

from __future__ import annotations

import math
import os
from typing import Any

import off_policy_bench

SETTINGS = {
    "env": "Pendulum-v1",
    "seed": 0,
    "target_return": -250.0,
    "max_timesteps": 20_000,
    "lr": 1e-3,
    "gamma": 0.98,
    "tau": 0.005,
    "batch": 128,
    "capacity": 100_000,
    "learning_starts": 1000,
    "policy_delay": 2,
    "target_noise": 0.2,
    "target_noise_clip": 0.5,
    "exploration_noise": 0.1,
    "fcnet_hiddens": [64, 64],
    "smoothing": 10,
    "episodes_per_iteration": 10,
    "episode_len": 200,
}


def rljax_td3(s: dict[str, Any]) -> Any:
    """rljax's TD3 with the benchmark's settings."""
    from rljax.algorithms.td3 import TD3Config

    return (
        TD3Config()
        .environment(s["env"])
        .env_runners(num_env_runners=0, num_envs_per_env_runner=1)
        .training(
            actor_lr=s["lr"],
            critic_lr=s["lr"],
            gamma=s["gamma"],
            tau=s["tau"],
            train_batch_size_per_learner=s["batch"],
            num_steps_sampled_before_learning_starts=s["learning_starts"],
            policy_delay=s["policy_delay"],
            target_noise=s["target_noise"],
            target_noise_clip=s["target_noise_clip"],
            exploration_noise=s["exploration_noise"],
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": s["capacity"]},
        )
        .rl_module(model_config={"fcnet_hiddens": s["fcnet_hiddens"], "fcnet_activation": "relu"})
        .reporting(
            metrics_num_episodes_for_smoothing=s["smoothing"],
            # Whole episodes per iteration, each with its auto-reset step.
            min_sample_timesteps_per_iteration=s["episodes_per_iteration"] * (s["episode_len"] + 1),
        )
        .debugging(seed=s["seed"])
        .build_algo()
    )


class SB3TD3:
    """Stable-Baselines3's TD3 behind ``train()``/``stop()``: one ``learn()`` call per iteration,
    continuing the same episodes and counters, returning the result keys the loop reads."""

    def __init__(self, s: dict[str, Any]):
        import gymnasium as gym
        import numpy as np
        import torch
        from stable_baselines3 import TD3
        from stable_baselines3.common.monitor import Monitor
        from stable_baselines3.common.noise import NormalActionNoise

        # One torch thread: on a 2-core machine shared with other work, two threads ran these
        # 64x64 networks 25x slower (9 against 257 env steps/s with learning).
        torch.set_num_threads(1)
        env = Monitor(gym.make(s["env"]))
        action_dim = env.action_space.shape[0]
        self.steps_per_iteration = s["episodes_per_iteration"] * s["episode_len"]
        self.model = TD3(
            "MlpPolicy",
            env,
            learning_rate=s["lr"],
            buffer_size=s["capacity"],
            learning_starts=s["learning_starts"],
            batch_size=s["batch"],
            tau=s["tau"],
            gamma=s["gamma"],
            train_freq=1,
            gradient_steps=1,
            # SB3 adds the noise to actions scaled to [-1, 1], as rljax does.
            action_noise=NormalActionNoise(
                np.zeros(action_dim), s["exploration_noise"] * np.ones(action_dim)
            ),
            policy_delay=s["policy_delay"],
            target_policy_noise=s["target_noise"],
            target_noise_clip=s["target_noise_clip"],
            stats_window_size=s["smoothing"],
            policy_kwargs={"net_arch": list(s["fcnet_hiddens"]), "activation_fn": torch.nn.ReLU},
            seed=s["seed"],
            device="cpu",
            verbose=0,
        )
        self.env = env

    def train(self) -> dict[str, Any]:
        updates = self.model._n_updates
        self.model.learn(total_timesteps=self.steps_per_iteration, reset_num_timesteps=False)
        returns = [info["r"] for info in self.model.ep_info_buffer]
        return {
            "env_runners": {
                "episode_return_mean": sum(returns) / len(returns) if returns else math.nan
            },
            "num_env_steps_sampled_lifetime": int(self.model.num_timesteps),
            "learners": {"default_policy": {"num_updates": self.model._n_updates - updates}},
        }

    def stop(self) -> None:
        self.env.close()


def build(variant: str, s: dict[str, Any]) -> Any:
    return rljax_td3(s) if variant == "rljax" else SB3TD3(s)


if __name__ == "__main__":
    off_policy_bench.main(
        "td3_pendulum",
        os.path.abspath(__file__),
        SETTINGS,
        build,
        compare="sb3",
        install="pip install stable-baselines3",
    )
