"""brax envs (``"brax:<name>"``, e.g. ``"brax:ant"``) as ``JaxEnv``s.

``env_config``: ``backend`` (brax's physics pipeline: ``"mjx"``, ``"generalized"``,
``"positional"`` or ``"spring"``; brax's default when absent), ``max_episode_steps`` (the
time limit, 1000 by default as in brax's training), and any other keyword argument of
``brax.envs.get_environment``. The raw env is stepped (brax's ``EpisodeWrapper`` and
``AutoResetWrapper`` are not used): brax's ``done`` is the terminal state (``terminated``), and
``TimeLimit`` truncates. Actions are a Box in [-1, 1]^action_size.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.checks import TIME_LIMIT
from rljax.utils.errors import ConfigError, closest

BACKENDS = ("mjx", "generalized", "positional", "spring")


class BraxEnv:
    """One brax env (it follows ``rljax.env.jax_env.JaxEnv``'s protocol).

    Args:
      name: A brax env name (``brax.envs._envs``).
      env_config: As the module says.
    """

    def __init__(self, name: str, env_config: dict[str, Any] | None = None):
        from brax import envs

        known = sorted(envs._envs)
        if name not in known:
            raise ConfigError(f"unknown brax env {name!r}{closest(name, known)}; brax has {known}")
        config = dict(env_config or {})
        limit = TIME_LIMIT("max_episode_steps", config.pop("max_episode_steps", 1000))
        self.max_episode_steps = int(limit)  # type: ignore[arg-type]
        backend = config.get("backend")
        if backend is not None and backend not in BACKENDS:
            raise ConfigError(f"env_config backend={backend!r}; brax's are {list(BACKENDS)}")
        try:
            self.env = envs.get_environment(name, **config)
        except TypeError as e:
            raise ConfigError(f"brax's {name!r} does not take env_config {config}: {e}") from e
        self.name = name
        size = int(self.env.observation_size)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
        act = int(self.env.action_size)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (act,), np.float32)

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        state = self.env.reset(key)
        return state, jnp.asarray(state.obs, jnp.float32)

    def step(
        self, state: Any, action: Any, key: jax.Array
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        state = self.env.step(state, jnp.asarray(action, jnp.float32))
        terminated = jnp.asarray(state.done, jnp.float32) > 0.5
        return (
            state,
            jnp.asarray(state.obs, jnp.float32),
            jnp.asarray(state.reward, jnp.float32),
            terminated,
            jnp.zeros((), bool),
            {},
        )


def make(name: str, env_config: dict[str, Any]) -> BraxEnv:
    """``BraxEnv(name, env_config)``: the adapter of ``"brax:<name>"``."""
    return BraxEnv(name, env_config)


__all__ = ["BACKENDS", "BraxEnv", "make"]
