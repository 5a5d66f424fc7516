"""A check that each gymnasium sub-env keeps gymnasium's API.

A mistake in an env (old gym's ``reset() -> obs`` or 4-value ``step``, an observation that does
not fit the observation space, a reward of ``None``) otherwise surfaces far from its cause: as an
unpacking error inside the vector env, a shape error in the policy, or a reward silently turned
into NaN by the vector env's float reward array. ``ApiCheckedEnv`` names the env, the call and
the API instead. The structure is checked once (the first ``reset`` and the first ``step``);
the reward's type at every step, which costs a type lookup.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.utils.errors import EnvAPIError

API = {
    "reset": "reset(seed=None, options=None) -> (obs, info)",
    "step": "step(action) -> (obs, reward, terminated, truncated, info)",
}

# Reward types that need no closer look: the per-step check is one set lookup for them.
_NUMBER_TYPES = frozenset(
    {float, int, bool, np.float64, np.float32, np.float16, np.int64, np.int32, np.bool_}
)


def _is_number(x: Any) -> bool:
    if type(x) in _NUMBER_TYPES:
        return True
    if isinstance(x, (int, float, np.number, np.bool_)):
        return True
    return isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "biuf"


def _describe(result: Any) -> str:
    if isinstance(result, tuple):
        return f"a tuple of {len(result)} values"
    return f"a {type(result).__module__}.{type(result).__qualname__}"


class ApiCheckedEnv(gym.Wrapper):
    """``env``, with its results checked against gymnasium's API (see the module docstring);
    a violation raises ``EnvAPIError`` naming ``name``, the call and the API.

    It holds no env state: ``rljax.env.state`` skips it (``rljax_stateless``), so a checkpoint's
    env state is the same with or without it.
    """

    rljax_stateless = True

    def __init__(self, env: gym.Env, name: str):
        super().__init__(env)
        inner = type(env.unwrapped).__qualname__
        self._who = f"env {name!r}" + ("" if inner == name else f" ({inner})")
        self._reset_checked = False
        self._step_checked = False

    def _error(self, call: str, problem: str) -> EnvAPIError:
        return EnvAPIError(f"{self._who}: {call}() {problem}; gymnasium's API is {API[call]}")

    def reset(self, **kwargs: Any):
        result = self.env.reset(**kwargs)  # only what the caller passed, as without the check
        if not self._reset_checked:
            if not (isinstance(result, tuple) and len(result) == 2):
                old = "" if isinstance(result, tuple) else " (old gym's reset() returned only obs)"
                raise self._error("reset", f"returned {_describe(result)}{old}")
            if not isinstance(result[1], dict):
                raise self._error(
                    "reset", f"returned (obs, info) with info a {type(result[1]).__name__}"
                )
            self._check_obs("reset", result[0])
            self._reset_checked = True
        return result

    def step(self, action: Any):
        result = self.env.step(action)
        if not self._step_checked:
            if not (isinstance(result, tuple) and len(result) == 5):
                old = (
                    " (old gym's (obs, reward, done, info))"
                    if isinstance(result, tuple) and len(result) == 4
                    else ""
                )
                raise self._error("step", f"returned {_describe(result)}{old}")
            if not isinstance(result[4], dict):
                raise self._error("step", f"returned an info of type {type(result[4]).__name__}")
            self._check_obs("step", result[0])
            self._step_checked = True
        reward = result[1]
        if not _is_number(reward):
            raise self._error(
                "step", f"returned the reward {reward!r}, a {type(reward).__name__}, not a number"
            )
        return result

    def _check_obs(self, call: str, obs: Any) -> None:
        space = self.observation_space
        if isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)):
            try:
                shape = None if isinstance(obs, dict) else np.shape(obs)
            except ValueError:  # a ragged sequence
                shape = None
            if shape != space.shape:
                got = f"of shape {shape}" if shape is not None else f"a {type(obs).__name__}"
                raise self._error(
                    call,
                    f"returned an observation {got}; its observation_space {space} has shape "
                    f"{space.shape}",
                )
        elif isinstance(space, gym.spaces.Discrete) and (
            np.ndim(obs) != 0 or np.asarray(obs).dtype.kind not in "iu"
        ):
            raise self._error(
                call,
                f"returned the observation {obs!r}; its observation_space {space} takes one integer",
            )
