"""RLlib's ``CorrelatedActionsEnv`` (``ray.rllib.examples.envs.classes.correlated_actions_env``):
a one-step game whose two actions must be chosen together."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class CorrelatedActionsEnv(gym.Env):
    """The observation is one number ``o`` drawn uniformly in [-1, 1]; the action is ``(a1,
    a2)``, ``a1`` in ``Discrete(3)`` and ``a2`` in ``Box(-2, 2, (1,))``. The reward is ``-|1 -
    (o + a1)| - |o + a1 + a2|``: the best ``a2`` depends on ``a1``. Every episode is one step
    (it terminates, the observation unchanged)."""

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Tuple(
            [gym.spaces.Discrete(3), gym.spaces.Box(-2.0, 2.0, (1,), np.float32)]
        )
        self.obs = np.zeros(1, np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.obs = self.np_random.uniform(-1.0, 1.0, size=(1,)).astype(np.float32)
        return self.obs, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a1, a2 = action
        a1 = int(a1)
        a2 = float(np.asarray(a2).reshape(-1)[0])
        o = float(self.obs[0])
        reward = -abs(1.0 - (o + a1)) - abs(o + a1 + a2)
        return self.obs, reward, True, False, {}


__all__ = ["CorrelatedActionsEnv"]
