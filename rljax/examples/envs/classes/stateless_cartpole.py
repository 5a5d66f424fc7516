"""RLlib's ``StatelessCartPole`` (``ray.rllib.examples.envs.classes.stateless_cartpole``):
CartPole without its two velocities, so that only a policy with memory solves it."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv
from gymnasium.spaces import Box


class StatelessCartPole(CartPoleEnv):
    """Partially observable CartPole: observations are ``[cart position, pole angle]``.

    Episodes are cut at ``max_episode_steps`` (``config``; 500 by default, as CartPole-v1).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        self.max_episode_steps = int((config or {}).get("max_episode_steps", 500))
        high = np.array([self.x_threshold * 2, self.theta_threshold_radians * 2], np.float32)
        self.observation_space = Box(low=-high, high=high, dtype=np.float32)
        self._steps = 0

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        self._steps += 1
        truncated = truncated or (not terminated and self._steps >= self.max_episode_steps)
        return np.array([obs[0], obs[2]], np.float32), reward, terminated, truncated, info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        self._steps = 0
        return np.array([obs[0], obs[2]], np.float32), info
