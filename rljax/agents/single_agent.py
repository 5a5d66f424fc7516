"""RLlib 1.x's single-agent env protocol (gym's, before 0.26) on gymnasium's, for the old API's
trainers.

An old env's ``reset()`` takes no ``seed`` and returns the observation alone, and its ``step``
returns four values ``(obs, reward, done, info)``. ``OldGymEnv`` wraps such an env: a reset
becomes ``(obs, {})`` (a ``seed`` goes to the env's ``seed()`` method where it has one), a step
the five values ``(obs, reward, terminated, truncated, info)``, where ``done`` is a termination
unless ``info["TimeLimit.truncated"]`` (gym's time limit) says the episode was cut. A creator
whose env already follows gymnasium's API gets it unwrapped. A one-time note says when an old
env is met.
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym

from rljax.agents.config_table import note
from rljax.agents.multi_agent import WrappedCreator


def takes_old_reset(env: Any) -> bool:
    """Whether ``env.reset`` is old gym's: no ``seed`` parameter and no ``**kwargs``."""
    try:
        params = inspect.signature(env.reset).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.name == "seed" or p.kind == p.VAR_KEYWORD for p in params)


class OldGymEnv(gym.Wrapper):
    """An old gym-style env seen through gymnasium's API (see the module docstring)."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if seed is not None and callable(getattr(self.env, "seed", None)):
            self.env.seed(seed)  # type: ignore[attr-defined]
        return self.env.reset(), {}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        out = self.env.step(action)
        if isinstance(out, tuple) and len(out) == 4:
            obs, reward, done, info = out
            info = dict(info) if isinstance(info, dict) else {}
            truncated = bool(info.get("TimeLimit.truncated", False))
            return obs, reward, bool(done) and not truncated, truncated, info
        return out  # a 5-value step: gymnasium's already (the API check looks at it)


class OldGymEnvCreator(WrappedCreator):
    """``env_config -> env``: a single-agent env's creator (or class), whose env is wrapped in
    ``OldGymEnv`` when its ``reset`` is old gym's."""

    def __call__(self, env_config: Any) -> Any:
        env = self.creator(env_config)
        if isinstance(env, gym.Env) and takes_old_reset(env):
            note(
                "old_gym_env",
                f"{type(env).__name__} has old gym's reset() and step(): adapted to gymnasium's "
                "(reset(seed=None, options=None) -> (obs, info), 5-value step)",
            )
            return OldGymEnv(env)
        return env


def old_gym_env(env: Any) -> Any:
    """The env an old single-agent config runs: a gymnasium env class whose ``reset`` is old
    gym's, or a creator function, is wrapped (``OldGymEnvCreator``); a registered name's
    creator is registered again, wrapped; ids of EnvPool, gymnasium and JAX envs, new-style
    classes and JAX env classes stay as they are."""
    from rljax.env.jax_env import JaxEnv
    from rljax.env.multi_agent_env import MultiAgentEnv
    from rljax.env.registry import register_env, registered_creator

    def adapted(creator: Any) -> Any:
        if isinstance(creator, OldGymEnvCreator) or not callable(creator):
            return creator
        if inspect.isclass(creator):  # a class tells by its reset; a new one stays as it is
            old = issubclass(creator, gym.Env) and takes_old_reset(creator)
            return OldGymEnvCreator(creator) if old else creator
        return OldGymEnvCreator(creator)  # a function: told when it has built its env

    if isinstance(env, str):
        creator = registered_creator(env)
        if creator is not None and not (
            inspect.isclass(creator) and issubclass(creator, (JaxEnv, MultiAgentEnv))
        ):
            wrapped = adapted(creator)
            if wrapped is not creator:
                register_env(env, wrapped)
        return env
    return adapted(env)


__all__ = ["OldGymEnv", "OldGymEnvCreator", "old_gym_env", "takes_old_reset"]
