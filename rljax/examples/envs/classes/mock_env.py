"""RLlib's ``MockEnv``, ``MockEnv2`` and ``MockEnv3`` (``ray.rllib.examples.envs.classes.mock_env``):
envs of fixed-length episodes whose actions do nothing, for tests. (RLlib's
``VectorizedMockEnv`` and ``MockVectorEnv`` are built on its old-stack ``VectorEnv`` and are
not here.)"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class MockEnv(gym.Env):
    """Observation 0, reward 1 per step; the episode ends (terminated and truncated, as
    RLlib's) after ``episode_length`` steps."""

    def __init__(self, episode_length: int, config: dict[str, Any] | None = None):
        self.episode_length = int(episode_length)
        self.config = config
        self.i = 0
        self.observation_space = gym.spaces.Discrete(1)
        self.action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        self.i = 0
        return 0, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.i += 1
        done = self.i >= self.episode_length
        return 0, 1.0, done, done, {}


class MockEnv2(gym.Env):
    """The observation is the step count (``Discrete(episode_length + 1)``), reward 100 per
    step; the episode ends after ``episode_length`` steps. ``render()`` returns a random
    300x400 RGB frame; the last ``reset(seed=...)`` seed is kept as ``rng_seed``."""

    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012
    render_mode: str | None = "rgb_array"

    def __init__(self, episode_length: int):
        self.episode_length = int(episode_length)
        self.i = 0
        self.observation_space = gym.spaces.Discrete(self.episode_length + 1)
        self.action_space = gym.spaces.Discrete(2)
        self.rng_seed: int | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self.i = 0
        if seed is not None:
            self.rng_seed = seed
        return self.i, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.i += 1
        done = self.i >= self.episode_length
        return self.i, 100.0, done, done, {}

    def render(self) -> np.ndarray:
        return self.np_random.integers(0, 256, size=(300, 400, 3), dtype=np.uint8)


class MockEnv3(gym.Env):
    """The observation and the reward are the step count (``Discrete(100)``); infos carry
    ``timestep``; the episode ends after ``episode_length`` steps."""

    def __init__(self, episode_length: int):
        self.episode_length = int(episode_length)
        self.i = 0
        self.observation_space = gym.spaces.Discrete(100)
        self.action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        self.i = 0
        return self.i, {"timestep": 0}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        self.i += 1
        done = self.i >= self.episode_length
        return self.i, float(self.i), done, done, {"timestep": self.i}


__all__ = ["MockEnv", "MockEnv2", "MockEnv3"]
