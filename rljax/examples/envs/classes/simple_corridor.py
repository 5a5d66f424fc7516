"""RLlib's ``SimpleCorridor`` (``ray.rllib.examples.envs.classes.simple_corridor``): walk right
down a corridor to its end."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete

MAX_CORRIDOR_LENGTH = 999


class SimpleCorridor(gym.Env):
    """A corridor of ``corridor_length`` cells (``config``; 10 by default, at most 999).

    The observation is the position (a float in a ``Box(0, 999, (1,))``), starting at 0.
    Action 0 moves left (not past 0), 1 moves right. Reaching the end terminates the episode
    with reward 1; every other step costs 0.01. ``set_corridor_length(n)`` changes the length
    from the next step on (curriculum and evaluation scripts call it through
    ``foreach_env_runner``).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        config = config or {}
        self.action_space = Discrete(2)
        self.observation_space = Box(0.0, float(MAX_CORRIDOR_LENGTH), shape=(1,), dtype=np.float32)
        self.set_corridor_length(config.get("corridor_length", 10))
        self._position = 0.0

    def set_corridor_length(self, length: int) -> None:
        if not 1 <= int(length) <= MAX_CORRIDOR_LENGTH:
            raise ValueError(
                f"corridor_length={length!r}: use a whole number in [1, {MAX_CORRIDOR_LENGTH}]"
            )
        self.end_pos = int(length)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._position = 0.0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if a not in (0, 1):
            raise ValueError(f"SimpleCorridor takes action 0 (left) or 1 (right); got {action!r}")
        if a == 1:
            self._position += 1.0
        elif self._position > 0:
            self._position -= 1.0
        terminated = self._position >= self.end_pos
        return self._obs(), 1.0 if terminated else -0.01, terminated, False, {}

    def _obs(self) -> np.ndarray:
        return np.array([self._position], np.float32)
