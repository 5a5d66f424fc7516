"""RLlib's ``MultiAgentEnv`` (new API stack semantics), ``make_multi_agent`` and
``GroupAgentsWrapper`` (``MultiAgentEnv.with_agent_groups``, also at RLlib's path
``rljax.env.wrappers.group_agents_wrapper``).

An env hosts agents identified by ids. ``reset(*, seed, options) -> (obs, infos)`` and
``step(action_dict) -> (obs, rewards, terminateds, truncateds, infos)`` exchange dicts keyed by
agent id. Only agents present in the last observation dict act next, so turn-based games and
agents that leave early are expressed by which keys appear. ``terminateds["__all__"]`` /
``truncateds["__all__"]`` end the episode for every agent.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Mapping
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

    def with_agent_groups(
        self,
        groups: dict[Any, list[AgentID]],
        obs_space: gym.Space | None = None,
        act_space: gym.Space | None = None,
    ) -> MultiAgentEnv:
        """This env with the agents of each group acting as one agent (RLlib's
        ``with_agent_groups``; ``rljax.env.wrappers.group_agents_wrapper``): a group observes
        and acts with tuples of its members' observations and actions, and is rewarded their
        sum."""
        return GroupAgentsWrapper(self, groups, obs_space, act_space)

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


GROUP_REWARDS = "_group_rewards"
GROUP_INFO = "_group_info"


class GroupAgentsWrapper(MultiAgentEnv):
    """``env`` with the agents of each group in ``groups`` (group id -> member ids) acting as
    one agent.

    Args:
      env: The multi-agent env to wrap.
      groups: Group id -> the ids of its members, each agent in one group at most.
      obs_space: Every group's observation space (a ``Tuple``); by default a ``Tuple`` of its
        members' spaces.
      act_space: Every group's action space (a ``Tuple``); likewise.

    Raises:
      ValueError: An agent in two groups, a member the env does not have, or a group id that
        is one of the env's agents.
    """

    def __init__(
        self,
        env: MultiAgentEnv,
        groups: Mapping[Hashable, list[AgentID]],
        obs_space: gym.Space | None = None,
        act_space: gym.Space | None = None,
    ):
        self.env = env
        self.groups = {g: list(members) for g, members in groups.items()}
        self.agent_id_to_group: dict[AgentID, Hashable] = {}
        known = list(getattr(env, "possible_agents", None) or getattr(env, "agents", []))
        for group_id, members in self.groups.items():
            if not members:
                raise ValueError(f"with_agent_groups: group {group_id!r} has no members")
            if known and group_id in known and group_id not in members:
                raise ValueError(
                    f"with_agent_groups: group id {group_id!r} is also one of the env's agents"
                )
            for agent_id in members:
                if agent_id in self.agent_id_to_group:
                    raise ValueError(f"with_agent_groups: agent {agent_id!r} is in two groups")
                if known and agent_id not in known:
                    raise ValueError(
                        f"with_agent_groups: group {group_id!r} names agent {agent_id!r}, which "
                        f"the env does not have; its agents are {known[:20]}"
                    )
                self.agent_id_to_group[agent_id] = group_id
        self.possible_agents = self._grouped_ids(known)
        self.agents = list(self.possible_agents)
        self.observation_spaces = {
            a: self._space(a, env.get_observation_space, obs_space) for a in self.possible_agents
        }
        self.action_spaces = {
            a: self._space(a, env.get_action_space, act_space) for a in self.possible_agents
        }
        super().__init__()
        self.metadata = getattr(env, "metadata", {})

    def _grouped_ids(self, agents: list[AgentID]) -> list[AgentID]:
        out: list[AgentID] = []
        for a in agents:
            g = self.agent_id_to_group.get(a, a)
            if g not in out:
                out.append(g)
        return out

    def _space(
        self, agent: AgentID, of: Callable[[AgentID], gym.Space], given: gym.Space | None
    ) -> gym.Space:
        if agent not in self.groups:
            return of(agent)
        if given is not None:
            return given
        return gym.spaces.Tuple([of(m) for m in self.groups[agent]])

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        self.agents = self._grouped_ids(list(obs))
        return self._group(obs, list), self._group(infos, _group_info)

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        obs, rewards, terminateds, truncateds, infos = self.env.step(self._ungroup(action_dict))
        obs = self._group(obs, list)
        grouped_rewards = self._group(rewards, list)
        terminateds = self._group(terminateds, all)
        truncateds = self._group(truncateds, all)
        infos = self._group(infos, _group_info)
        out_rewards: MultiAgentDict = {}
        for agent_id, reward in grouped_rewards.items():
            if agent_id in self.groups:
                out_rewards[agent_id] = sum(reward)
                infos.setdefault(agent_id, {})[GROUP_REWARDS] = list(reward)
            else:
                out_rewards[agent_id] = reward
        self.agents = self._grouped_ids(list(obs))
        return obs, out_rewards, terminateds, truncateds, infos

    def _ungroup(self, items: MultiAgentDict) -> MultiAgentDict:
        out: MultiAgentDict = {}
        for agent_id, value in items.items():
            if agent_id in self.groups:
                members = self.groups[agent_id]
                values = list(value.values()) if isinstance(value, Mapping) else list(value)
                if len(values) != len(members):
                    raise ValueError(
                        f"group {agent_id!r}'s action has {len(values)} parts; the group has "
                        f"{len(members)} members {members}"
                    )
                out.update(zip(members, values, strict=True))
            else:
                out[agent_id] = value
        return out

    def _group(self, items: MultiAgentDict, combine: Callable[[Any], Any]) -> MultiAgentDict:
        out: MultiAgentDict = {}
        for agent_id, item in items.items():
            group_id = self.agent_id_to_group.get(agent_id)
            if group_id is None:
                out[agent_id] = item
                continue
            if group_id in out:
                continue
            members = self.groups[group_id]
            missing = [m for m in members if m not in items]
            if missing:
                raise ValueError(
                    f"group {group_id!r}: agent {missing[0]!r} is missing from the env's dict "
                    f"(keys {list(items)[:20]}); grouped agents must act and report together"
                )
            out[group_id] = combine([items[m] for m in members])
        return out

    def close(self) -> None:
        self.env.close()

    def render(self) -> Any:
        return self.env.render()


def _group_info(infos: list[Any]) -> dict[str, Any]:
    return {GROUP_INFO: list(infos)}


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
            # As RLlib's: the creator gets a deep copy of the config without "num_agents" (an
            # EnvContext stays one, with its worker and vector indices).
            config = copy.deepcopy(config) if config is not None else {}
            num = int(config.pop("num_agents", 1))
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


__all__ = [
    "GROUP_INFO",
    "GROUP_REWARDS",
    "AgentID",
    "GroupAgentsWrapper",
    "MultiAgentDict",
    "MultiAgentEnv",
    "make_multi_agent",
]
