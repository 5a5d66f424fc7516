"""RLlib's ``ActionMaskEnv`` (``ray.rllib.examples.envs.classes.action_mask_env``): a
``RandomEnv`` whose observation is ``{"action_mask": ..., "observations": ...}`` and which
raises on an action its mask forbids.

With such a Dict observation rljax's default model masks the logits (RLlib's action-masking
module): forbidden actions get zero probability when sampling and are never the greedy one.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.examples.envs.classes.random_env import RandomEnv


class ActionMaskEnv(RandomEnv):
    """A random env that publishes an action mask each step (Discrete actions only).

    Each mask allows every action with probability 1/2, and always at least one (RLlib's
    rounds a uniform sample, which may forbid all of them).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__(config)
        if not isinstance(self.action_space, gym.spaces.Discrete):
            raise ValueError(f"ActionMaskEnv needs Discrete actions; got {self.action_space}")
        n = int(self.action_space.n)
        self.observation_space = gym.spaces.Dict(
            {
                "action_mask": gym.spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
                "observations": self.observation_space,
            }
        )
        self.inner_observation_space = self.observation_space["observations"]
        self.valid_actions = np.ones(n, np.float32)

    def _masked(self, inner_obs: Any) -> dict[str, Any]:
        n = len(self.valid_actions)
        mask = (self.np_random.uniform(size=n) < 0.5).astype(np.float32)
        mask[self.np_random.integers(n)] = 1.0
        self.valid_actions = mask
        return {"action_mask": mask.copy(), "observations": inner_obs}

    def _samples(self) -> tuple[Any, Any]:
        saved = self.observation_space
        self.observation_space = self.inner_observation_space  # RandomEnv samples the inner
        try:
            obs, reward = super()._samples()
        finally:
            self.observation_space = saved
        return self._masked(obs), reward

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self.inner_observation_space.seed(seed)
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self.valid_actions[int(action)]:
            raise ValueError(
                f"Invalid action ({action}) sent to env! valid_actions={self.valid_actions}"
            )
        return super().step(action)
