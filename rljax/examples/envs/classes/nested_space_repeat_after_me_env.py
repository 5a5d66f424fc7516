"""RLlib's ``NestedSpaceRepeatAfterMeEnv``
(``ray.rllib.examples.envs.classes.nested_space_repeat_after_me_env``): repeat a nested
observation back as the action."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Dict, Discrete, Tuple


def _leaves(space: gym.Space, value: Any) -> Iterator[tuple[gym.Space, Any]]:
    """The (leaf space, leaf value) pairs of a nested Dict/Tuple value, in the space's order."""
    if isinstance(space, Dict):
        for key, sub in space.spaces.items():
            yield from _leaves(sub, value[key])
    elif isinstance(space, Tuple):
        for sub, v in zip(space.spaces, value, strict=True):
            yield from _leaves(sub, v)
    else:
        yield space, value


class NestedSpaceRepeatAfterMeEnv(gym.Env):
    """The observation is a sample of ``config["space"]`` (default ``Tuple([Discrete(2),
    Dict({"a": Box(-1, 1, (2,))})])``) and the action space is the same space: the action
    should repeat the observation. Each step pays, summed over the leaves, +1 for a matching
    ``Discrete`` leaf and ``-sum(|action - obs|)`` for a ``Box`` leaf; the episode is truncated
    after ``config["episode_len"]`` (100) steps."""

    def __init__(self, config: dict[str, Any] | None = None):
        config = config or {}
        self.observation_space = config.get(
            "space", Tuple([Discrete(2), Dict({"a": Box(-1.0, 1.0, (2,), np.float32)})])
        )
        self.action_space = self.observation_space
        self.episode_len = int(config.get("episode_len", 100))
        self.steps = 0
        self.current_obs: Any = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.steps = 0
        return self._next_obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        reward = 0.0
        pairs = zip(
            _leaves(self.action_space, action),
            _leaves(self.observation_space, self.current_obs),
            strict=True,
        )
        for (space, a), (_, o) in pairs:
            if isinstance(space, Box):
                reward -= float(np.sum(np.abs(np.asarray(a) - np.asarray(o))))
            elif isinstance(space, Discrete):
                reward += 1.0 if int(a) == int(o) else 0.0
        return self._next_obs(), reward, False, self.steps >= self.episode_len, {}

    def _next_obs(self) -> Any:
        self.current_obs = self.observation_space.sample()
        return self.current_obs


__all__ = ["NestedSpaceRepeatAfterMeEnv"]
