"""RLlib's ``RandomEnv`` (``ray.rllib.examples.envs.classes.random_env``): observations and
rewards sampled from their spaces, episodes ending with probability ``p_terminated`` per step
or truncated at ``max_episode_len``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class RandomEnv(gym.Env):
    """A randomly acting env of any spaces.

    ``config`` (RLlib's keys): ``action_space`` (default ``Discrete(2)``),
    ``observation_space`` (default ``Discrete(2)``), ``reward_space`` (default a scalar Box in
    [-1, 1]), ``p_terminated`` (default 0.1; RLlib's older ``p_done`` too),
    ``max_episode_len`` (None or 0: no limit), ``check_action_bounds`` (raise on an action
    outside the action space) and ``static_samples`` (the same observation and reward every
    step). Sampling follows the env's seed.
    """

    def __init__(self, config: dict[str, Any] | None = None):
        config = dict(config or {})
        self.action_space = config.get("action_space", gym.spaces.Discrete(2))
        self.observation_space = config.get("observation_space", gym.spaces.Discrete(2))
        self.reward_space = config.get(
            "reward_space", gym.spaces.Box(-1.0, 1.0, shape=(), dtype=np.float32)
        )
        p = config.get("p_terminated")
        self.p_terminated = float(config.get("p_done", 0.1) if p is None else p)
        self.max_episode_len = config.get("max_episode_len")
        self.check_action_bounds = bool(config.get("check_action_bounds", False))
        self.static_samples = bool(config.get("static_samples", False))
        self.steps = 0
        self._static: tuple[Any, Any] | None = None

    def _samples(self) -> tuple[Any, Any]:
        if self.static_samples:
            if self._static is None:
                self._static = (self.observation_space.sample(), self.reward_space.sample())
            return self._static
        return self.observation_space.sample(), self.reward_space.sample()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            for i, space in enumerate((self.observation_space, self.reward_space)):
                space.seed(seed + i)
        self.steps = 0
        return self._samples()[0], {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.check_action_bounds and not self.action_space.contains(action):
            raise ValueError(f"Illegal action for {self.action_space}: {action}")
        self.steps += 1
        limit = self.max_episode_len or 0
        truncated = bool(limit) and self.steps >= int(limit)
        terminated = (
            not truncated
            and self.p_terminated > 0
            and bool(self.np_random.uniform() < self.p_terminated)
        )
        obs, reward = self._samples()
        return obs, float(np.asarray(reward)), terminated, truncated, {}
