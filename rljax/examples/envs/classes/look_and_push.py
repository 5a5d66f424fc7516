"""RLlib's ``LookAndPush`` and ``OneHot`` (``ray.rllib.examples.envs.classes.look_and_push``): a
small env whose best action at the end depends on something seen earlier."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class LookAndPush(gym.Env):
    """States 0..4; an episode starts in state 2 with a hidden case, 0 or 1.

    In state 2, action 0 "looks": the next state is the case (0 or 1), which is how the agent
    learns it. Action 1 pushes: from state 0 back to 2, from any other state (below 4) one
    state up. Every such step costs 1. In state 4 the episode terminates: +10 if the action
    equals 1 and the case is 1, else -10 (RLlib's rule). The optimal play looks, then pushes to
    4, and acts by the case it saw.
    """

    def __init__(self, config: dict[str, Any] | None = None):
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Discrete(5)
        self._state = 2
        self._case = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self._state = 2
        self._case = int(self.np_random.integers(2))
        return self._state, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if a not in (0, 1):
            raise ValueError(f"LookAndPush takes action 0 or 1; got {action!r}")
        if self._state == 4:
            return self._state, 10.0 if a and self._case else -10.0, True, False, {}
        if a:
            self._state = 2 if self._state == 0 else self._state + 1
        elif self._state == 2:
            self._state = self._case
        return self._state, -1.0, False, False, {}


class OneHot(gym.ObservationWrapper):
    """A ``Discrete(n)`` observation as a one-hot float32 vector of length ``n``."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(f"OneHot wraps an env with a Discrete observation space; got {space}")
        self._n = int(space.n)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self._n,), np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        out = np.zeros(self._n, np.float32)
        out[int(observation)] = 1.0
        return out


__all__ = ["LookAndPush", "OneHot"]
