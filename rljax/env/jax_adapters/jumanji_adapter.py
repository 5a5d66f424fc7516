"""jumanji envs (``"jumanji:<id>"``, e.g. ``"jumanji:Snake-v1"``) as ``JaxEnv``s.

``env_config`` is passed to ``jumanji.make(id, **env_config)``. Observations keep jumanji's
structure as a dict of arrays (a gymnasium ``Dict`` of ``Box``es; bool and int leaves become
float32, as a network reads them); a single-array observation is a ``Box``. jumanji ends an
episode with a ``LAST`` timestep: discount 0 is a terminal state (``terminated``), a nonzero
discount its time limit (``truncated``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.errors import ConfigError, closest


def _leaf_space(spec: Any) -> gym.spaces.Box:
    shape = tuple(spec.shape)
    low = np.broadcast_to(np.asarray(getattr(spec, "minimum", -np.inf), np.float32), shape)
    high = np.broadcast_to(np.asarray(getattr(spec, "maximum", np.inf), np.float32), shape)
    return gym.spaces.Box(low, high, shape, np.float32)


def obs_space(spec: Any) -> gym.Space:
    """A jumanji observation spec as a gymnasium space: a ``Dict`` for a structured one."""
    children = getattr(spec, "_specs", None)
    if children:
        return gym.spaces.Dict({k: obs_space(v) for k, v in children.items()})
    return _leaf_space(spec)


def action_space(spec: Any) -> gym.Space:
    """A jumanji action spec as a gymnasium space."""
    from jumanji import specs

    if isinstance(spec, specs.DiscreteArray):
        return gym.spaces.Discrete(int(spec.num_values))
    if isinstance(spec, specs.MultiDiscreteArray):
        return gym.spaces.MultiDiscrete(np.asarray(spec.num_values).astype(np.int64))
    if isinstance(spec, specs.BoundedArray):
        dtype: Any = np.dtype(spec.dtype)  # gymnasium < 1.4 types Box's dtype narrower
        shape = tuple(spec.shape)
        low = np.broadcast_to(np.asarray(spec.minimum, dtype), shape)
        high = np.broadcast_to(np.asarray(spec.maximum, dtype), shape)
        return gym.spaces.Box(low, high, shape, dtype)
    raise ConfigError(f"jumanji action spec {type(spec).__name__} has no gymnasium counterpart")


def _obs(observation: Any, space: gym.Space) -> Any:
    if isinstance(space, gym.spaces.Dict):
        fields = observation._asdict() if hasattr(observation, "_asdict") else vars(observation)
        return {k: _obs(fields[k], s) for k, s in space.spaces.items()}
    return jnp.asarray(observation, jnp.float32)


class JumanjiEnv:
    """One jumanji env (it follows ``rljax.env.jax_env.JaxEnv``'s protocol).

    Args:
      env_id: A jumanji id (``jumanji.registered_environments()``).
      env_config: Keyword arguments of ``jumanji.make``.
    """

    max_episode_steps = None  # jumanji envs have their own time limits

    def __init__(self, env_id: str, env_config: dict[str, Any] | None = None):
        import jumanji

        known = jumanji.registered_environments()
        if env_id not in known:
            raise ConfigError(
                f"unknown jumanji env {env_id!r}{closest(env_id, known)}; jumanji has "
                f"{sorted(known)}"
            )
        try:
            self.env = jumanji.make(env_id, **dict(env_config or {}))
        except TypeError as e:
            raise ConfigError(f"jumanji's {env_id!r} does not take env_config: {e}") from e
        self.env_id = env_id
        self.observation_space = obs_space(self.env.observation_spec)
        self.action_space = action_space(self.env.action_spec)

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        state, timestep = self.env.reset(key)
        return state, _obs(timestep.observation, self.observation_space)

    def step(
        self, state: Any, action: Any, key: jax.Array
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        # jumanji's step draws its randomness from the key in its state.
        state, timestep = self.env.step(state, action)
        last = timestep.last()
        terminated = last & (timestep.discount == 0)
        truncated = last & (timestep.discount != 0)
        reward = jnp.asarray(timestep.reward, jnp.float32)
        obs = _obs(timestep.observation, self.observation_space)
        return state, obs, reward, terminated, truncated, dict(timestep.extras or {})


def make(env_id: str, env_config: dict[str, Any]) -> JumanjiEnv:
    """``JumanjiEnv(env_id, env_config)``: the adapter of ``"jumanji:<id>"``."""
    return JumanjiEnv(env_id, env_config)


__all__ = ["JumanjiEnv", "action_space", "make", "obs_space"]
