"""RLlib 1.x's ``MultiAgentEnv`` protocol on the new one, for the old API's trainers.

An old env's ``reset()`` returns the observations alone (no infos, no ``seed`` keyword) and
its ``step`` four dicts ``(obs, rewards, dones, infos)`` with ``dones["__all__"]`` ending the
episode; it may set only ``agents`` and one ``observation_space`` / ``action_space`` for every
agent. ``OldMultiAgentEnv`` wraps such an env (and passes a new-protocol env through): resets
become ``(obs, infos)``, steps the five dicts ``(obs, rewards, terminateds, truncateds,
infos)`` (an old ``done`` is a termination; ``__all__`` is added where missing: all agents
done), with a one-time note the first time an old form is met.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from rljax.agents.config_table import note
from rljax.env.multi_agent_env import AgentID, MultiAgentDict, MultiAgentEnv
from rljax.utils.errors import ConfigError


class OldMultiAgentEnv(MultiAgentEnv):
    """A ``MultiAgentEnv`` of either protocol, seen through the new one."""

    def __init__(self, env: Any):
        self.env = env
        agents = list(getattr(env, "possible_agents", None) or getattr(env, "agents", None) or [])
        spaces = getattr(env, "observation_spaces", None)
        if not agents and isinstance(spaces, Mapping):
            agents = list(spaces)
        if not agents:
            raise ConfigError(
                f"{type(env).__name__} names no agents: set possible_agents (or RLlib 1.x's "
                "agents) to the list of agent ids"
            )
        self.possible_agents = agents
        self.agents = list(agents)
        self.observation_spaces = {a: self._space(a, "observation") for a in agents}
        self.action_spaces = {a: self._space(a, "action") for a in agents}
        try:
            self._reset_takes_seed = "seed" in inspect.signature(env.reset).parameters
        except (TypeError, ValueError):
            self._reset_takes_seed = True

    def _space(self, agent: AgentID, kind: str) -> gym.Space:
        env = self.env
        per_agent = getattr(env, f"{kind}_spaces", None)
        if isinstance(per_agent, Mapping) and agent in per_agent:
            return per_agent[agent]
        getter = getattr(env, f"get_{kind}_space", None)
        if callable(getter):
            try:
                return getter(agent)
            except KeyError:
                pass
        space = getattr(env, f"{kind}_space", None)
        if isinstance(space, gym.Space):
            return space
        raise ConfigError(
            f"{type(env).__name__} has no {kind} space for agent {agent!r}: set {kind}_spaces "
            f"(a dict by agent id) or one {kind}_space shared by every agent"
        )

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        out = self.env.reset(seed=seed, options=options) if self._reset_takes_seed else None
        if out is None:
            out = self.env.reset()
        if isinstance(out, tuple) and len(out) == 2 and all(isinstance(d, Mapping) for d in out):
            obs, infos = out
        elif isinstance(out, Mapping):
            note(
                "old multi-agent reset",
                f"{type(self.env).__name__}.reset() returns the observations alone (RLlib "
                "1.x's MultiAgentEnv); they are read as (obs, {}) (the new API returns "
                "(obs, infos))",
            )
            obs, infos = out, {}
        else:
            raise ConfigError(
                f"{type(self.env).__name__}.reset() returned {type(out).__name__}; a "
                "MultiAgentEnv returns (obs, infos), dicts by agent id (or, RLlib 1.x's, the "
                "obs dict alone)"
            )
        self.agents = [a for a in self.possible_agents if a in obs]
        return dict(obs), self._per_agent(infos, obs)

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        out = self.env.step(action_dict)
        if isinstance(out, tuple) and len(out) == 5:
            obs, rewards, terms, truncs, infos = out
            terms, truncs = dict(terms), dict(truncs)
        elif isinstance(out, tuple) and len(out) == 4:
            note(
                "old multi-agent step",
                f"{type(self.env).__name__}.step() returns four dicts (obs, rewards, dones, "
                "infos), RLlib 1.x's MultiAgentEnv; each done is read as a termination, "
                "'__all__' as all agents done where it is missing (the new API returns "
                "(obs, rewards, terminateds, truncateds, infos))",
            )
            obs, rewards, dones, infos = out
            terms = {a: bool(d) for a, d in dict(dones).items()}
            truncs = {a: False for a in terms if a != "__all__"}
            truncs["__all__"] = False
        else:
            raise ConfigError(
                f"{type(self.env).__name__}.step() returned {type(out).__name__}; a "
                "MultiAgentEnv returns (obs, rewards, terminateds, truncateds, infos)"
            )
        if "__all__" not in terms:
            agent_dones = [bool(v) for k, v in terms.items() if k != "__all__"]
            terms["__all__"] = bool(agent_dones) and all(agent_dones)
        truncs.setdefault("__all__", False)
        self.agents = [a for a in self.possible_agents if a in obs]
        return dict(obs), dict(rewards), terms, truncs, self._per_agent(infos, obs)

    def _per_agent(self, infos: Any, obs: Mapping[AgentID, Any]) -> MultiAgentDict:
        """Infos by agent id; an info that is not keyed by agents (the inner env's) goes to
        each agent that observed."""
        if not isinstance(infos, Mapping) or not infos:
            return {a: {} for a in obs}
        if set(infos) <= set(self.possible_agents) | {"__common__"}:
            return dict(infos)
        return {a: dict(infos) for a in obs}

    def close(self) -> None:
        close = getattr(self.env, "close", None)
        if callable(close):
            close()


class WrappedCreator:
    """An env creator (or class) wrapped by the old API: it carries the import path of what it
    wraps, under which a config stores it."""

    def __init__(self, creator: Any):
        self.creator = creator
        self.__name__ = getattr(creator, "__name__", type(creator).__name__)
        self.__qualname__ = getattr(creator, "__qualname__", self.__name__)
        self.__module__ = getattr(creator, "__module__", __name__)


class OldEnvCreator(WrappedCreator):
    """``env_config -> OldMultiAgentEnv``: a multi-agent env's creator (or class), wrapped."""

    def __call__(self, env_config: Any) -> OldMultiAgentEnv:
        return OldMultiAgentEnv(self.creator(env_config))


def old_env_creator(env: Any) -> Any:
    """The env an old multi-agent config runs: a registered name stays the name (its creator
    is registered again, wrapped, so that configs and checkpoints keep naming it); a class or
    creator is wrapped."""
    from rljax.algorithms.ppo.multi_agent import multi_agent_creator
    from rljax.env.registry import register_env

    if env is None:
        raise ConfigError('a "multiagent" config needs "env": a registered name or a class')
    creator = multi_agent_creator(env)  # an unregistered name fails here, naming it
    if isinstance(env, str):
        if not isinstance(creator, OldEnvCreator):
            register_env(env, OldEnvCreator(creator))
        return env
    return creator if isinstance(creator, OldEnvCreator) else OldEnvCreator(creator)


__all__ = ["OldEnvCreator", "OldMultiAgentEnv", "WrappedCreator", "old_env_creator"]
