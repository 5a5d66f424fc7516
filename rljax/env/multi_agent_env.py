"""RLlib's ``MultiAgentEnv`` (new API stack semantics) and ``make_multi_agent``.

An env hosts agents identified by ids. ``reset(*, seed, options) -> (obs, infos)`` and
``step(action_dict) -> (obs, rewards, terminateds, truncateds, infos)`` exchange dicts keyed by
agent id. Only agents present in the last observation dict act next, so turn-based games and
agents that leave early are expressed by which keys appear. ``terminateds["__all__"]`` /
``truncateds["__all__"]`` end the episode for every agent.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, cast

import gymnasium as gym

AgentID = Hashable
MultiAgentDict = dict[AgentID, Any]


class MultiAgentEnv(gym.Env):
    """Base class of multi-agent envs.

    Subclasses set ``possible_agents`` (every agent id that can ever appear), ``agents`` (those in
    the current episode) and either the ``observation_spaces`` / ``action_spaces`` dicts or the
    ``get_observation_space(agent_id)`` / ``get_action_space(agent_id)`` methods.
    """

    observation_spaces: dict[AgentID, gym.Space] | None = None
    action_spaces: dict[AgentID, gym.Space] | None = None
    possible_agents: list[AgentID] = []  # noqa: RUF012 (overridden per instance)
    agents: list[AgentID] = []  # noqa: RUF012

    def __init__(self) -> None:
        """Fills in what a subclass left unset, as RLlib's does: ``agents`` from the old
        stack's ``_agent_ids`` set (if any), then ``possible_agents`` as a copy of ``agents``.
        So a subclass that sets only ``self.agents`` before calling ``super().__init__()`` has
        both. A subclass that computes ``agents`` (a property, as the PettingZoo wrappers')
        sets its own ``possible_agents``; nothing is derived for it."""
        super().__init__()
        if isinstance(getattr(type(self), "agents", None), property):
            return
        if not self.agents:
            self.agents = list(getattr(self, "_agent_ids", None) or ())
        if not self.possible_agents:
            self.possible_agents = list(self.agents)

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        if self.observation_spaces is None or agent_id not in self.observation_spaces:
            raise KeyError(
                f"{type(self).__name__} has no observation space for agent {agent_id!r}; set "
                "observation_spaces or override get_observation_space"
            )
        return self.observation_spaces[agent_id]

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        if self.action_spaces is None or agent_id not in self.action_spaces:
            raise KeyError(
                f"{type(self).__name__} has no action space for agent {agent_id!r}; set "
                "action_spaces or override get_action_space"
            )
        return self.action_spaces[agent_id]

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    @property
    def max_num_agents(self) -> int:
        return len(self.possible_agents)

    # A MultiAgentEnv is a gymnasium.Env (as RLlib's is) whose reset and step exchange dicts keyed
    # by agent id, so they do not match gymnasium's single-agent signatures: hence the ignores, here
    # and on every subclass that annotates them.
    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        """``(obs, infos)``, each keyed by agent id."""
        raise NotImplementedError

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        """``(obs, rewards, terminateds, truncateds, infos)``, each keyed by agent id (and
        ``"__all__"`` in ``terminateds`` / ``truncateds``)."""
        raise NotImplementedError


def make_multi_agent(env_name_or_creator: str | Callable[[Any], gym.Env]) -> type[MultiAgentEnv]:
    """A ``MultiAgentEnv`` class running ``config["num_agents"]`` independent copies of an env.

    As RLlib's: agent ids are ``0 .. num_agents - 1``; each agent's episode ends on its own, it
    then leaves the observation dict, and ``"__all__"`` is set once every agent is done.

    Args:
      env_name_or_creator: A gymnasium id, or a callable ``env_config -> gymnasium.Env``.
    """

    def make_one(config: Any) -> gym.Env:
        if isinstance(env_name_or_creator, str):
            return gym.make(env_name_or_creator)
        return env_name_or_creator(config)

    class MultiEnv(MultiAgentEnv):
        def __init__(self, config: dict | None = None):
            config = config if config is not None else {}
            num = int(config.get("num_agents", 1))
            if num < 1:
                raise ValueError(f"num_agents must be >= 1, got {num}")
            self.envs = [make_one(config) for _ in range(num)]
            self.possible_agents = list(range(num))
            self.agents = list(self.possible_agents)
            self.observation_spaces = {i: e.observation_space for i, e in enumerate(self.envs)}
            self.action_spaces = {i: e.action_space for i, e in enumerate(self.envs)}
            self._done: set[int] = set()

        def reset(self, *, seed: int | None = None, options: dict | None = None):
            self._done = set()
            self.agents = list(self.possible_agents)
            obs, infos = {}, {}
            for i, env in enumerate(self.envs):
                obs[i], infos[i] = env.reset(
                    seed=None if seed is None else seed + i, options=options
                )
            return obs, infos

        def step(self, action_dict: dict[AgentID, Any]):
            obs: MultiAgentDict = {}
            rew: MultiAgentDict = {}
            term: MultiAgentDict = {}
            trunc: MultiAgentDict = {}
            info: MultiAgentDict = {}
            for agent_id, action in action_dict.items():
                i = cast(int, agent_id)  # this env's agent ids are its sub-envs' indices
                obs[i], rew[i], term[i], trunc[i], info[i] = self.envs[i].step(action)
                if term[i] or trunc[i]:
                    self._done.add(i)
            self.agents = [i for i in self.possible_agents if i not in self._done]
            term["__all__"] = len(self._done) == len(self.envs)
            trunc["__all__"] = False
            return obs, rew, term, trunc, info

        def close(self) -> None:
            for env in self.envs:
                env.close()

    name = env_name_or_creator if isinstance(env_name_or_creator, str) else "env"
    MultiEnv.__name__ = MultiEnv.__qualname__ = f"MultiAgent({name})"
    return MultiEnv


__all__ = ["AgentID", "MultiAgentDict", "MultiAgentEnv", "make_multi_agent"]
