"""JaxMARL's MPE tasks (``"jaxmarl:MPE_simple_spread_v3"``) as ``JaxMultiAgentEnv``s.

``env_config`` holds the task's keyword arguments (``{"num_agents": 4, "local_ratio": 0.5}``);
``max_episode_steps`` is accepted as RLlib's name for the task's ``max_steps``. An MPE episode
ends only at its time limit, for every agent at once: the adapter steps without JaxMARL's
auto-reset (``step_env``) and reports that end as truncation, not termination, so PPO
bootstraps the last value as RLlib does for a time limit.

Other JaxMARL families are refused by name: SMAX's agents end their episodes at different
times, which the fused multi-agent rollout does not keep, and Overcooked, Hanabi and the rest
have not been checked against rljax yet.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.errors import ConfigError, closest


def to_gym_space(space: Any) -> gym.Space:
    """A JaxMARL space as a gymnasium one (Discrete, Box)."""
    from jaxmarl.environments import spaces

    if isinstance(space, spaces.Discrete):
        return gym.spaces.Discrete(int(space.n))
    if isinstance(space, spaces.Box):
        shape = tuple(space.shape)
        dtype = np.dtype(space.dtype)
        low = np.broadcast_to(np.asarray(space.low, dtype), shape)
        high = np.broadcast_to(np.asarray(space.high, dtype), shape)
        return gym.spaces.Box(low, high, shape, dtype)
    raise ConfigError(f"JaxMARL space {type(space).__name__} has no gymnasium counterpart here")


def mpe_ids() -> list[str]:
    """JaxMARL's registered MPE task ids."""
    import jaxmarl

    return sorted(e for e in jaxmarl.registered_envs if e.startswith("MPE_"))


class JaxMARLEnv:
    """One JaxMARL MPE task with its keyword arguments bound (it follows
    ``rljax.env.jax_multi_agent.JaxMultiAgentEnv``'s protocol).

    Args:
      env_id: A JaxMARL MPE id (``mpe_ids()``).
      env_config: The task's keyword arguments (``max_episode_steps`` for ``max_steps``).
    """

    def __init__(self, env_id: str, env_config: dict[str, Any]):
        import jaxmarl

        ids = mpe_ids()
        if env_id not in ids:
            raise ConfigError(
                f"jaxmarl env {env_id!r}: rljax runs JaxMARL's MPE tasks {ids}{closest(env_id, ids)} (other "
                "families are not run yet: SMAX's agents end their episodes apart, which the fused "
                "rollout does not keep, and the others have not been checked against rljax)"
            )
        kwargs = dict(env_config)
        if "max_episode_steps" in kwargs:
            kwargs["max_steps"] = kwargs.pop("max_episode_steps")
        try:
            self.env = jaxmarl.make(env_id, **kwargs)
        except TypeError as e:
            raise ConfigError(
                f"jaxmarl env {env_id!r} does not take env_config {sorted(kwargs)}: {e}"
            ) from e
        self.agents = list(self.env.agents)
        self.observation_spaces = {
            a: to_gym_space(self.env.observation_space(a)) for a in self.agents
        }
        self.action_spaces = {a: to_gym_space(self.env.action_space(a)) for a in self.agents}
        self.max_episode_steps = int(self.env.max_steps)

    def reset(self, key: jax.Array) -> tuple[Any, dict[str, Any]]:
        obs, state = self.env.reset(key)
        return state, obs

    def step(
        self, state: Any, actions: dict[str, Any], key: jax.Array
    ) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], dict]:
        obs, state, rewards, dones, _ = self.env.step_env(key, state, actions)
        never = jnp.zeros((), bool)
        terminated = {a: never for a in self.agents}  # an MPE episode ends at its time limit
        truncated = {a: jnp.asarray(dones[a], bool) for a in self.agents}
        return state, obs, rewards, terminated, truncated, {}


def make(env_id: str, env_config: dict[str, Any]) -> JaxMARLEnv:
    """``"jaxmarl:<id>"``'s env."""
    return JaxMARLEnv(env_id, env_config)


__all__ = ["JaxMARLEnv", "make", "mpe_ids", "to_gym_space"]
