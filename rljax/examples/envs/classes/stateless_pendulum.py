"""RLlib's ``StatelessPendulum`` (``ray.rllib.examples.envs.classes.stateless_pendulum``):
Pendulum without its angular velocity, so that only a policy with memory solves it."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.envs.classic_control import PendulumEnv
from gymnasium.spaces import Box


class StatelessPendulum(PendulumEnv):
    """Partially observable Pendulum: observations are ``[cos(theta), sin(theta)]``.

    ``config["g"]``: gravity (10.0 by default). Episodes are cut at ``max_episode_steps``
    (``config``; 200 by default, as Pendulum-v1).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        config = config or {}
        super().__init__(g=float(config.get("g", 10.0)))
        self.max_episode_steps = int(config.get("max_episode_steps", 200))
        self.observation_space = Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        self._steps = 0
        return np.asarray(obs[:2], np.float32), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        self._steps += 1
        truncated = truncated or self._steps >= self.max_episode_steps
        return np.asarray(obs[:2], np.float32), float(reward), terminated, truncated, info


__all__ = ["StatelessPendulum"]
