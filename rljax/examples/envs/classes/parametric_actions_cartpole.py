"""RLlib's ``ParametricActionsCartPole`` and ``ParametricActionsCartPoleNoEmbeddings``
(``ray.rllib.examples.envs.classes.parametric_actions_cartpole``): CartPole's two actions
hidden among ``max_avail_actions``, told apart by a mask (and embeddings)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Dict, Discrete


class ParametricActionsCartPole(gym.Env):
    """CartPole-v1 with ``Discrete(max_avail_actions)`` actions, of which two are valid at each
    step, at random places: one means "left", the other "right". The observation is
    ``{"action_mask": int8 [max_avail_actions] (1 at the two valid places), "avail_actions":
    [max_avail_actions, 2] (the two actions' fixed random embeddings there, zeros elsewhere),
    "cart": CartPole's}``. An invalid action raises ``ValueError``.
    """

    def __init__(self, max_avail_actions: int):
        n = int(max_avail_actions)
        if n < 2:
            raise ValueError(f"max_avail_actions={max_avail_actions!r}: use 2 or more")
        self.action_space = Discrete(n)
        self.wrapped = gym.make("CartPole-v1")
        self.observation_space = Dict(
            {
                "action_mask": Box(0, 1, shape=(n,), dtype=np.int8),
                "avail_actions": Box(-10, 10, shape=(n, 2), dtype=np.float32),
                "cart": self.wrapped.observation_space,
            }
        )
        embed_rng = np.random.default_rng()
        self.left_action_embed = embed_rng.standard_normal(2).astype(np.float32)
        self.right_action_embed = embed_rng.standard_normal(2).astype(np.float32)
        self.left_idx, self.right_idx = 0, 1
        self.action_mask = np.zeros(n, np.int8)
        self.action_assignments = np.zeros((n, 2), np.float32)

    def update_avail_actions(self) -> None:
        """Puts the two valid actions at new random places."""
        n = int(self.action_mask.shape[0])
        self.left_idx, self.right_idx = (int(i) for i in self.np_random.choice(n, 2, replace=False))
        self.action_assignments = np.zeros((n, 2), np.float32)
        self.action_assignments[self.left_idx] = self.left_action_embed
        self.action_assignments[self.right_idx] = self.right_action_embed
        self.action_mask = np.zeros(n, np.int8)
        self.action_mask[[self.left_idx, self.right_idx]] = 1

    def _obs(self, cart: Any) -> dict[str, Any]:
        return {
            "action_mask": self.action_mask,
            "avail_actions": self.action_assignments,
            "cart": np.asarray(cart, np.float32),
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self.update_avail_actions()
        obs, info = self.wrapped.reset(seed=seed, options=options)
        return self._obs(obs), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        a = int(action)
        if a not in (self.left_idx, self.right_idx):
            raise ValueError(
                f"action {a} is not valid now: the valid ones are {self.left_idx} (left) and "
                f"{self.right_idx} (right), as action_mask says"
            )
        obs, reward, terminated, truncated, info = self.wrapped.step(int(a == self.right_idx))
        self.update_avail_actions()
        return self._obs(obs), float(reward), terminated, truncated, info


class ParametricActionsCartPoleNoEmbeddings(gym.Env):
    """As ``ParametricActionsCartPole``, but the two valid places are drawn once, when the env
    is made, and the observation holds no embeddings: ``{"valid_avail_actions_mask": float
    [max_avail_actions], "cart": CartPole's}``."""

    def __init__(self, max_avail_actions: int):
        n = int(max_avail_actions)
        if n < 2:
            raise ValueError(f"max_avail_actions={max_avail_actions!r}: use 2 or more")
        picks = np.random.default_rng().choice(n, 2, replace=False)
        self.left_idx, self.right_idx = int(picks[0]), int(picks[1])
        self.valid_avail_actions_mask = np.zeros(n, np.float32)
        self.valid_avail_actions_mask[[self.left_idx, self.right_idx]] = 1.0
        self.action_space = Discrete(n)
        self.wrapped = gym.make("CartPole-v1")
        self.observation_space = Dict(
            {
                "valid_avail_actions_mask": Box(0, 1, shape=(n,), dtype=np.float32),
                "cart": self.wrapped.observation_space,
            }
        )

    def _obs(self, cart: Any) -> dict[str, Any]:
        return {
            "valid_avail_actions_mask": self.valid_avail_actions_mask,
            "cart": np.asarray(cart, np.float32),
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self.wrapped.reset(seed=seed, options=options)
        return self._obs(obs), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        a = int(action)
        if a not in (self.left_idx, self.right_idx):
            raise ValueError(
                f"action {a} is not valid: the valid ones are {self.left_idx} (left) and "
                f"{self.right_idx} (right)"
            )
        obs, reward, terminated, truncated, info = self.wrapped.step(int(a == self.right_idx))
        return self._obs(obs), float(reward), terminated, truncated, info


__all__ = ["ParametricActionsCartPole", "ParametricActionsCartPoleNoEmbeddings"]
