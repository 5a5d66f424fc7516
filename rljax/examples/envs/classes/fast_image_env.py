"""RLlib's ``FastImageEnv`` (``ray.rllib.examples.envs.classes.fast_image_env``): an image env
as cheap as an env can be, for measuring the rest of the pipeline."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete


class FastImageEnv(gym.Env):
    """Every observation is the same all-zero 84x84x4 float32 image; every step pays 1, and the
    episode ends (terminated and truncated, as RLlib's) after 1001 steps."""

    def __init__(self, config: dict[str, Any] | None = None):
        self.zeros = np.zeros((84, 84, 4), np.float32)
        self.action_space = Discrete(2)
        self.observation_space = Box(0.0, 1.0, shape=(84, 84, 4), dtype=np.float32)
        self.i = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.i = 0
        return self.zeros, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.i += 1
        done = self.i > 1000
        return self.zeros, 1.0, done, done, {}


__all__ = ["FastImageEnv"]
