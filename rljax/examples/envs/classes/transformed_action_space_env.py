"""RLlib's ``ActionTransform``, ``transform_action_space`` and ``TransformedActionPendulum``
(``ray.rllib.examples.envs.classes.transformed_action_space_env``): an env whose Box action
range is rescaled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np


class ActionTransform(gym.ActionWrapper):
    """Takes actions in ``Box(low, high)`` (the env's shape and dtype) and maps them linearly
    onto the env's own Box range: ``low`` to the env's low, ``high`` to its high."""

    def __init__(self, env: gym.Env, low: float, high: float):
        super().__init__(env)
        inner = env.action_space
        if not isinstance(inner, gym.spaces.Box):
            raise ValueError(f"ActionTransform needs a Box action space; got {inner}")
        if not high > low:
            raise ValueError(f"ActionTransform(low={low!r}, high={high!r}): use low < high")
        self._low, self._high = float(low), float(high)
        dtype: Any = inner.dtype  # gymnasium < 1.4 types Box's dtype as a scalar type
        self.action_space = gym.spaces.Box(self._low, self._high, inner.shape, dtype)

    def action(self, action: Any) -> np.ndarray:
        inner = self.env.action_space
        assert isinstance(inner, gym.spaces.Box)
        scaled = (np.asarray(action) - self._low) / (self._high - self._low)
        return (scaled * (inner.high - inner.low) + inner.low).astype(inner.dtype)


def transform_action_space(
    env_name_or_creator: str | Callable[[dict[str, Any]], gym.Env],
) -> Callable[[dict[str, Any]], gym.Env]:
    """An env creator ``config -> env``: the env (``gym.make(name)`` or ``creator(config)``)
    wrapped in ``ActionTransform`` with ``config["low"]`` (-1.0) and ``config["high"]`` (1.0),
    which are taken out of ``config`` before the creator sees it."""

    def transformed_action_space_env(config: dict[str, Any]) -> gym.Env:
        config = dict(config or {})
        low = config.pop("low", -1.0)
        high = config.pop("high", 1.0)
        if isinstance(env_name_or_creator, str):
            inner = gym.make(env_name_or_creator)
        else:
            inner = env_name_or_creator(config)
        return ActionTransform(inner, low, high)

    return transformed_action_space_env


#: Pendulum-v1 with actions in [-1, 1] (by default) instead of [-2, 2].
TransformedActionPendulum = transform_action_space("Pendulum-v1")

__all__ = ["ActionTransform", "TransformedActionPendulum", "transform_action_space"]
