"""RLlib's ``CartPoleSparseRewards``
(``ray.rllib.examples.envs.classes.cartpole_sparse_rewards``): CartPole whose whole return is
paid at termination."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Dict, Discrete


class CartPoleSparseRewards(gym.Env):
    """CartPole-v1 with reward 0 on every step but the terminating one, which pays the steps'
    sum (a truncated episode pays nothing). The observation is ``{"obs": CartPole's,
    "action_mask": [1, 1]}`` (int8; both actions always allowed). ``get_state()`` /
    ``set_state(state)`` copy and restore the env and the running sum (``set_state`` returns
    the restored observation)."""

    def __init__(self, config: dict[str, Any] | None = None):
        self.env = gym.make("CartPole-v1")
        self.action_space = Discrete(2)
        self.observation_space = Dict(
            {
                "obs": self.env.observation_space,
                "action_mask": Box(0, 1, shape=(2,), dtype=np.int8),
            }
        )
        self.running_reward = 0.0

    @staticmethod
    def _wrap(obs: Any) -> dict[str, Any]:
        return {"obs": np.asarray(obs, np.float32), "action_mask": np.ones(2, np.int8)}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        self.running_reward = 0.0
        obs, info = self.env.reset(seed=seed, options=options)
        return self._wrap(obs), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.running_reward += float(reward)
        score = self.running_reward if terminated else 0.0
        return self._wrap(obs), score, terminated, truncated, info

    def get_state(self) -> tuple[Any, float]:
        return copy.deepcopy(self.env), self.running_reward

    def set_state(self, state: tuple[Any, float]) -> dict[str, Any]:
        self.env = copy.deepcopy(state[0])
        self.running_reward = state[1]
        return self._wrap(np.array(self.env.unwrapped.state))  # type: ignore[attr-defined]


__all__ = ["CartPoleSparseRewards"]
