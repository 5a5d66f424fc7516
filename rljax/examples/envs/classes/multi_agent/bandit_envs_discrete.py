"""RLlib's contextual bandits ``SimpleContextualBandit``, ``LinearDiscreteEnv`` and
``WheelBanditEnv`` (``ray.rllib.examples.envs.classes.multi_agent.bandit_envs_discrete``;
single-agent envs, at RLlib's path). Every episode is one step."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete


class SimpleContextualBandit(gym.Env):
    """The context is ``c`` = -1 or 1 at random; the observation is ``[c, -c]``. Arms 0, 1, 2
    pay ``[10, 0, -10]`` for ``c = 1`` and ``[-10, 0, 10]`` for ``c = -1``; infos carry
    ``regret`` (10 - reward)."""

    def __init__(self, config: dict[str, Any] | None = None):
        self.action_space = Discrete(3)
        self.observation_space = Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.cur_context = 1.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.cur_context = float(self.np_random.choice([-1.0, 1.0]))
        return np.array([self.cur_context, -self.cur_context], np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        table = {-1.0: [-10.0, 0.0, 10.0], 1.0: [10.0, 0.0, -10.0]}
        reward = table[self.cur_context][int(action)]
        obs = np.array([-self.cur_context, self.cur_context], np.float32)
        return obs, reward, True, False, {"regret": 10.0 - reward}


class LinearDiscreteEnv(gym.Env):
    """Arms with linear rewards: arm ``i`` pays ``x . theta_i`` plus Gaussian noise of
    ``reward_noise_std``, for the context ``x`` ~ N(0, (1/3)^2) per feature and unit-norm
    ``theta_i`` drawn when the env is made. Infos carry ``regret`` (the best noiseless reward
    minus the chosen one's) and ``opt_action``. ``config``: ``feature_dim`` (8),
    ``num_actions`` (4), ``reward_noise_std`` (0.01)."""

    DEFAULT_CONFIG_LINEAR = {"feature_dim": 8, "num_actions": 4, "reward_noise_std": 0.01}  # noqa: RUF012

    def __init__(self, config: dict[str, Any] | None = None):
        self.config = copy.copy(self.DEFAULT_CONFIG_LINEAR)
        if isinstance(config, dict):
            self.config.update(config)
        self.feature_dim = int(self.config["feature_dim"])
        self.num_actions = int(self.config["num_actions"])
        self.sigma = float(self.config["reward_noise_std"])
        self.action_space = Discrete(self.num_actions)
        self.observation_space = Box(-10, 10, shape=(self.feature_dim,), dtype=np.float32)
        thetas = np.random.default_rng().uniform(-1, 1, (self.num_actions, self.feature_dim))
        self.thetas = thetas / np.linalg.norm(thetas, axis=1, keepdims=True)
        self._current_context = np.zeros(self.feature_dim, np.float32)

    def _sample_context(self) -> np.ndarray:
        return self.np_random.normal(scale=1 / 3, size=(self.feature_dim,)).astype(np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._current_context = self._sample_context()
        return self._current_context, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a < self.num_actions:
            raise ValueError(f"action {action!r}: use 0 .. {self.num_actions - 1}")
        rewards = self.thetas @ self._current_context
        opt_action = int(rewards.argmax())
        regret = float(rewards.max() - rewards[a])
        reward = float(rewards[a] + self.np_random.normal(scale=self.sigma))
        self._current_context = self._sample_context()
        info = {"regret": regret, "opt_action": opt_action}
        return self._current_context, reward, True, False, info


class WheelBanditEnv(gym.Env):
    """The wheel bandit (Riquelme et al. 2018) on 2-D contexts drawn uniformly in the unit
    disc. Arm 0 pays N(mu_1, std), arms 1..4 N(mu_2, std); when ``|x| >= delta``, the arm of
    ``x``'s quadrant (1: x>0, y>0; 4: x>0, y<=0; 2: x<=0, y>0; 3: x<=0, y<=0) pays N(mu_3, std)
    instead and is the best, else arm 0 is. Infos carry ``regret`` and ``opt_action``.
    ``config``: ``delta`` (0.5), ``mu_1`` (1.2), ``mu_2`` (1), ``mu_3`` (50), ``std`` (0.01)."""

    DEFAULT_CONFIG_WHEEL = {"delta": 0.5, "mu_1": 1.2, "mu_2": 1, "mu_3": 50, "std": 0.01}  # noqa: RUF012
    feature_dim = 2
    num_actions = 5

    def __init__(self, config: dict[str, Any] | None = None):
        self.config = copy.copy(self.DEFAULT_CONFIG_WHEEL)
        if isinstance(config, dict):
            self.config.update(config)
        self.delta = float(self.config["delta"])
        self.mu_1, self.mu_2 = float(self.config["mu_1"]), float(self.config["mu_2"])
        self.mu_3, self.std = float(self.config["mu_3"]), float(self.config["std"])
        self.action_space = Discrete(self.num_actions)
        self.observation_space = Box(-1, 1, shape=(self.feature_dim,), dtype=np.float32)
        self.means = [self.mu_1] + 4 * [self.mu_2]
        self._current_context = np.zeros(2, np.float32)

    def _sample_context(self) -> np.ndarray:
        while True:
            state = self.np_random.uniform(-1, 1, self.feature_dim)
            if np.linalg.norm(state) <= 1:
                return state.astype(np.float32)

    @staticmethod
    def best_arm(context: np.ndarray, delta: float) -> int:
        """The arm with the large reward for ``context`` (0 inside the ``delta`` disc)."""
        if np.linalg.norm(context) < delta:
            return 0
        if context[0] > 0:
            return 1 if context[1] > 0 else 4
        return 2 if context[1] > 0 else 3

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._current_context = self._sample_context()
        return self._current_context, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        rewards = [float(self.np_random.normal(m, self.std)) for m in self.means]
        opt_action = self.best_arm(self._current_context, self.delta)
        if opt_action:
            rewards[opt_action] = float(self.np_random.normal(self.mu_3, self.std))
        regret = rewards[opt_action] - rewards[a]
        self._current_context = self._sample_context()
        info = {"regret": regret, "opt_action": opt_action}
        return self._current_context, rewards[a], True, False, info


__all__ = ["LinearDiscreteEnv", "SimpleContextualBandit", "WheelBanditEnv"]
