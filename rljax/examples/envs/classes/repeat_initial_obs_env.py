"""RLlib's ``RepeatInitialObsEnv`` (``ray.rllib.examples.envs.classes.repeat_initial_obs_env``):
remember the first observation for a whole episode."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.spaces import Discrete


class RepeatInitialObsEnv(gym.Env):
    """The first observation is a token, 0 or 1; every later one is 0. Each step pays +1 for
    an action equal to the token and -1 otherwise; the episode ends after ``episode_len``
    steps (both terminated and truncated, as RLlib's)."""

    def __init__(self, episode_len: int = 100):
        self.observation_space = Discrete(2)
        self.action_space = Discrete(2)
        self.episode_len = int(episode_len)
        self.token = 0
        self.num_steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self.token = int(self.np_random.integers(2))
        self.num_steps = 0
        return self.token, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        reward = 1.0 if int(action) == self.token else -1.0
        self.num_steps += 1
        done = self.num_steps >= self.episode_len
        return 0, reward, done, done, {}


__all__ = ["RepeatInitialObsEnv"]
