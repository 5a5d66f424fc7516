"""gymnax envs (``"gymnax:<id>"``) as ``JaxEnv``s, their ``EnvParams`` bound at build time.

``env_config`` sets fields of the env's ``EnvParams`` (``{"max_steps_in_episode": 200}``;
``max_episode_steps`` is accepted as RLlib's name for it). gymnax keeps termination and its
time limit apart (``step_env``'s ``done`` is the terminal state, ``is_truncated`` the limit):
the adapter steps without gymnax's auto-reset and reports both, truncation only where the
episode did not terminate.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.checks import TIME_LIMIT, Bool, Int, Number
from rljax.utils.errors import ConfigError, closest


def to_gym_space(space: Any) -> gym.Space:
    """A gymnax space as a gymnasium space (bool Boxes become float32 ones in [0, 1])."""
    from gymnax.environments import spaces

    if isinstance(space, spaces.Discrete):
        return gym.spaces.Discrete(int(space.n))
    if isinstance(space, spaces.Box):
        dtype = np.dtype(space.dtype)
        if dtype == np.bool_:
            dtype = np.dtype(np.float32)
        shape = tuple(space.shape)
        low = np.broadcast_to(np.asarray(space.low, dtype), shape)
        high = np.broadcast_to(np.asarray(space.high, dtype), shape)
        return gym.spaces.Box(low, high, shape, dtype)
    if isinstance(space, spaces.Dict):
        return gym.spaces.Dict({k: to_gym_space(v) for k, v in space.spaces.items()})
    if isinstance(space, spaces.Tuple):
        return gym.spaces.Tuple(tuple(to_gym_space(s) for s in space.spaces))
    raise ConfigError(f"gymnax space {type(space).__name__} has no gymnasium counterpart here")


def _cast(obs: Any, space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Box):
        return jnp.asarray(obs, space.dtype)
    if isinstance(space, gym.spaces.Dict):
        return {k: _cast(obs[k], s) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_cast(o, s) for o, s in zip(obs, space.spaces, strict=True))
    return obs


def _param_value(env_id: str, key: str, value: Any, default: Any) -> Any:
    """``env_config[key]`` for a gymnax ``EnvParams`` field whose default is ``default``:
    the time limit an int in [1, 2**31 - 1], an int field an int, a float field a number, a
    bool field a bool (anything else would fail inside the compiled step, or silently)."""
    name = f"env_config[{key!r}] of gymnax's {env_id!r}"
    if key == "max_steps_in_episode":
        return TIME_LIMIT(name, value)
    kind = type(np.asarray(default).item()) if np.ndim(default) == 0 else None
    if kind is bool:
        return Bool()(name, value)
    if kind is int:
        return Int(minimum=-(2**31), maximum=2**31 - 1)(name, value)
    if kind is float:
        return Number()(name, value)
    return value  # an array field: gymnax's own checks


class GymnaxEnv:
    """One gymnax env with its params bound (it follows ``rljax.env.jax_env.JaxEnv``'s
    protocol).

    Args:
      env_id: A gymnax id (``gymnax.registered_envs``).
      env_config: Fields of the env's ``EnvParams`` to set.
    """

    def __init__(self, env_id: str, env_config: dict[str, Any] | None = None):
        import gymnax

        if env_id not in gymnax.registered_envs:
            raise ConfigError(
                f"unknown gymnax env {env_id!r}{closest(env_id, gymnax.registered_envs)}; "
                f"gymnax has {sorted(gymnax.registered_envs)}"
            )
        self.env_id = env_id
        self.env, params = gymnax.make(env_id)
        config = dict(env_config or {})
        if "max_episode_steps" in config:
            config["max_steps_in_episode"] = TIME_LIMIT(
                f"env_config['max_episode_steps'] of gymnax's {env_id!r}",
                config.pop("max_episode_steps"),
            )
        fields = [f.name for f in dataclasses.fields(params)]
        unknown = [k for k in config if k not in fields]
        if unknown:
            raise ConfigError(
                f"env_config {unknown} are not settings of gymnax's {env_id!r}; its EnvParams "
                f"has {fields}"
            )
        for key, value in config.items():
            config[key] = _param_value(env_id, key, value, getattr(params, key))
        self.params = params.replace(**config) if config else params
        self.observation_space = to_gym_space(self.env.observation_space(self.params))
        self.action_space = to_gym_space(self.env.action_space(self.params))
        self.max_episode_steps = None  # gymnax truncates itself (is_truncated)

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        obs, state = self.env.reset_env(key, self.params)
        return state, _cast(obs, self.observation_space)

    def step(
        self, state: Any, action: Any, key: jax.Array
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        obs, state, reward, terminated, info = self.env.step_env(key, state, action, self.params)
        terminated = jnp.asarray(terminated, bool)
        truncated = jnp.asarray(self.env.is_truncated(state, self.params), bool) & ~terminated
        info = {k: v for k, v in dict(info).items() if k != "discount"}
        return (
            state,
            _cast(obs, self.observation_space),
            jnp.asarray(reward, jnp.float32),
            terminated,
            truncated,
            info,
        )


def make(env_id: str, env_config: dict[str, Any]) -> GymnaxEnv:
    """``GymnaxEnv(env_id, env_config)``: the adapter of ``"gymnax:<id>"``."""
    return GymnaxEnv(env_id, env_config)


__all__ = ["GymnaxEnv", "make", "to_gym_space"]
