"""RLlib's ``RepeatAfterMeEnv`` (``ray.rllib.examples.envs.classes.repeat_after_me_env``): repeat
the observation of ``repeat_delay`` steps ago."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete


class RepeatAfterMeEnv(gym.Env):
    """Each observation is a random token; the action should be the token observed
    ``repeat_delay`` steps before the current one (0 before the episode's start).

    ``config``: ``continuous`` (False: tokens in ``Discrete(2)``, reward +1 for the right token
    and -1 otherwise; True: tokens in ``Box(-1, 1, (2,))`` drawn in [0, 1), reward ``-sum(|action
    - token|)``), ``repeat_delay`` (1), ``episode_len`` (100: the episode ends, terminated and
    truncated as RLlib's, once more than that many tokens were shown).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        config = config or {}
        self.continuous = bool(config.get("continuous", False))
        self.observation_space: gym.Space = (
            Box(-1.0, 1.0, (2,), np.float32) if self.continuous else Discrete(2)
        )
        self.action_space = self.observation_space
        self.delay = int(config.get("repeat_delay", 1))
        self.episode_len = int(config.get("episode_len", 100))
        self.history: list[Any] = []

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.history = [np.zeros(2, np.float32) if self.continuous else 0] * self.delay
        return self._next_obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        target = self.history[-(1 + self.delay)]
        if self.continuous:
            reward = -float(np.sum(np.abs(np.asarray(action) - target)))
        else:
            reward = 1.0 if int(action) == target else -1.0
        done = len(self.history) > self.episode_len
        return self._next_obs(), reward, done, done, {}

    def _next_obs(self) -> Any:
        if self.continuous:
            token: Any = self.np_random.random(2).astype(np.float32)
        else:
            token = int(self.np_random.integers(2))
        self.history.append(token)
        return token


__all__ = ["RepeatAfterMeEnv"]
