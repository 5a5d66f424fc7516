"""Vectorized multi-agent envs as fixed agent slots, so jitted acting sees static shapes.

``num_envs`` copies of a ``MultiAgentEnv`` with ``A = len(possible_agents)`` agents are laid out
as ``S = num_envs * A`` slots: slot ``i * A + a`` is agent ``possible_agents[a]`` of copy ``i``.
Every step returns a row for every slot, and ``present`` says which rows are real results: the
agents in the observation dict (they act next), and agents whose episode just ended (their final
result). An absent slot's row is ignored by the acting step, whose per-slot "pending" state then
keeps the slot's last action waiting, so each agent's transitions run from one of its own
observations to its next, however many env steps apart (turn-based games).

Rewards follow RLlib's rules: an agent's rewards are summed from the step after it acted until
its next observation (or its episode's end), and credited to that action. ``"__all__"`` ends the
episode for every agent that still has an action outstanding. After an episode ends the copy
resets on the next ``step`` (the actions given for it are ignored), as single-agent vector envs
do; the result rows of that reset are the first observations of the new episode.

The policy of each slot is chosen once per agent per episode, when the agent first appears, by
``policy_mapping_fn(agent_id, episode, **kwargs)``; ``policy`` in each result gives the slot's
policy index (into ``policy_ids``).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import jax
import numpy as np

from rljax.env.multi_agent_env import AgentID, MultiAgentEnv
from rljax.env.multi_agent_remote import RemoteMultiAgentEnv
from rljax.env.spaces import is_structured, zeros_batch
from rljax.env.vector.vector_multi_agent_env import VectorMultiAgentEnv
from rljax.utils.errors import ConfigError
from rljax.utils.seeding import derive_seed


class MultiAgentStepResult(NamedTuple):
    """One row per agent slot ([S] leading dimension).

    Attributes:
      obs: Observations [S, *obs_shape] (the last known one where a slot is absent).
      reward: float32 [S]: rewards summed since the slot's agent last acted (0 where absent).
      terminated: bool [S]: the agent's episode ended in a terminal state.
      truncated: bool [S]: the agent's episode was cut.
      env_id: int32 [S]: the slot index (a stream id, like a sub-env's).
      present: bool [S]: the row is a real result (see the module docstring).
      policy: int32 [S]: the slot's policy index in the current episode.
      stepped: bool [S]: the slot's env copy took an env step in this call (False for the
        reset, and for a call that only reset the copy after its episode ended).
    """

    obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    env_id: np.ndarray
    present: np.ndarray
    policy: np.ndarray
    stepped: np.ndarray | None = None


@dataclasses.dataclass
class EpisodeInfo:
    """What ``policy_mapping_fn`` gets as ``episode``: the episode's id and its env copy."""

    id_: int
    env_index: int


@dataclasses.dataclass
class FinishedEpisode:
    """A finished multi-agent episode: the sum over agents, and each agent's return."""

    env_index: int
    length: int
    episode_return: float
    agent_returns: dict[AgentID, float]
    agent_policies: dict[AgentID, str]
    # With episode callbacks: the episode's log, ("reset", obs, infos) then ("step", obs,
    # actions, rewards, infos, terminateds, truncateds) by agent (rljax.env.multi_agent_episode).
    log: list[tuple[Any, ...]] | None = None


def _assign(rows: Any, slot: int, value: Any) -> None:
    """``rows[slot] = value`` for an array of rows, or leaf by leaf for a dict / tuple of them
    (a Dict / Tuple space's observation)."""
    if isinstance(rows, dict):
        for k, r in rows.items():
            _assign(r, slot, value[k])
    elif isinstance(rows, tuple):
        for r, v in zip(rows, value, strict=True):
            _assign(r, slot, v)
    else:
        rows[slot] = value


def agent_spaces(env: MultiAgentEnv) -> tuple[gym.Space, gym.Space]:
    """The one observation and action space all of ``env``'s agents share (checked)."""
    agents = list(env.possible_agents)
    if not agents:
        raise ConfigError(f"{type(env).__name__}.possible_agents is empty")
    obs_spaces = [env.get_observation_space(a) for a in agents]
    act_spaces = [env.get_action_space(a) for a in agents]
    for kind, spaces in (("observation", obs_spaces), ("action", act_spaces)):
        first = spaces[0]
        for agent, space in zip(agents, spaces, strict=True):
            if space != first:
                raise ConfigError(
                    f"agent {agent!r} has {kind} space {space}, agent {agents[0]!r} has {first}; "
                    "rljax's vectorized multi-agent sampling needs one shared space per kind"
                )
    return obs_spaces[0], act_spaces[0]


# Spaces whose observations are arrays of a fixed shape: padded into slot rows when the
# agents' observation spaces differ (and read back per policy, ``multi_agent_parts.unpad_observations``).
PADDABLE = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def slot_spaces(
    env: MultiAgentEnv,
) -> tuple[gym.Space, gym.Space, dict[AgentID, gym.Space], dict[AgentID, gym.Space]]:
    """``(slot observation space, slot action space, each agent's observation space, each
    agent's action space)``.

    Agents' observation spaces may differ when every one is a ``Box`` (or a ``Discrete``,
    ``MultiDiscrete`` or ``MultiBinary``, read as its values): the slot space is then
    a flat float32 ``Box`` as long as the largest, and each agent's observation is flattened
    and zero-padded into it (``pad_observation``). Their action spaces may differ when every
    one is a ``Discrete`` starting at 0: the slot space is the largest. With one shared space
    of a kind, the slot space is that space.
    """
    agents = list(env.possible_agents)
    if not agents:
        raise ConfigError(f"{type(env).__name__}.possible_agents is empty")
    obs_spaces = {a: env.get_observation_space(a) for a in agents}
    act_spaces = {a: env.get_action_space(a) for a in agents}
    slot_action = act_spaces[agents[0]]
    if any(space != slot_action for space in act_spaces.values()):
        other = next(a for a in agents if act_spaces[a] != slot_action)
        for space in act_spaces.values():
            if not (isinstance(space, gym.spaces.Discrete) and int(space.start) == 0):
                raise ConfigError(
                    f"agent {agents[0]!r} has action space {slot_action}, agent {other!r} has "
                    f"{act_spaces[other]}; rljax's vectorized multi-agent sampling needs one "
                    "shared action space, or Discrete(n) spaces (starting at 0) of any n"
                )
        slot_action = max(act_spaces.values(), key=lambda space: int(getattr(space, "n", 0)))
    first = obs_spaces[agents[0]]
    if all(space == first for space in obs_spaces.values()):
        return first, slot_action, obs_spaces, act_spaces
    for agent, space in obs_spaces.items():
        if not isinstance(space, PADDABLE):
            raise ConfigError(
                f"agent {agent!r} has observation space {space} and the agents' observation "
                "spaces differ; different observation spaces must each be a Box, Discrete, "
                "MultiDiscrete or MultiBinary space (their observations are padded into one "
                "row per agent slot; flatten Dict and Tuple ones with "
                "FlattenObservations(multi_agent=True))"
            )
    size = max(int(np.prod(space.shape or ())) for space in obs_spaces.values())
    slot_obs = gym.spaces.Box(-np.inf, np.inf, (size,), np.float32)
    return slot_obs, slot_action, obs_spaces, act_spaces


def pad_observation(obs: Any, size: int) -> np.ndarray:
    """An array observation (a ``Box``'s, or a discrete one's values) flattened and
    zero-padded to ``size`` float32 values."""
    flat = np.asarray(obs, np.float32).reshape(-1)
    out = np.zeros(size, np.float32)
    out[: flat.size] = flat
    return out


def mapping_caller(fn: Callable[..., str]) -> Callable[..., str]:
    """``fn`` as ``(agent_id, episode, **kwargs) -> policy id``.

    RLlib's signature is ``(agent_id, episode, **kwargs)``; older scripts pass ``(agent_id,
    episode)`` or ``(agent_id)`` alone, or RLlib 1.x's ``(agent_id, episode, worker,
    **kwargs)`` (``worker`` is None here: there are no rollout workers), which are wrapped. Any
    other signature is refused.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable: trust it
        return fn
    for args, kwargs, wrapped in (
        ((0, None), {"worker_index": 0}, fn),
        ((0, None), {}, lambda agent_id, episode, **kw: fn(agent_id, episode)),
        ((0,), {}, lambda agent_id, episode, **kw: fn(agent_id)),
        ((0, None, None), {"worker_index": 0}, lambda a, e, **kw: fn(a, e, None, **kw)),
        ((0, None, None), {}, lambda agent_id, episode, **kw: fn(agent_id, episode, None)),
    ):
        try:
            sig.bind(*args, **kwargs)
        except TypeError:
            continue
        return wrapped
    raise ConfigError(
        f"policy_mapping_fn{sig} cannot be called as (agent_id, episode, **kwargs); "
        "use lambda agent_id, episode, **kwargs: policy_id (RLlib 1.x's (agent_id, episode, "
        "worker, **kwargs) is taken too)"
    )


class MultiAgentVectorEnv(VectorMultiAgentEnv):
    """``num_envs`` copies of a multi-agent env, stepped in lock-step as agent slots."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], MultiAgentEnv]],
        policy_ids: Sequence[str],
        policy_mapping_fn: Callable[..., str],
        seed: int | None = None,
        policy_in_obs: bool = False,
        mode: str = "SYNC",
        record_episodes: bool = False,
        policy_observation_spaces: dict[str, gym.Space] | None = None,
        policy_action_spaces: dict[str, gym.Space] | None = None,
    ):
        # policy_in_obs: results carry obs = {"obs": [S, ...], "policy": [S]}, so that a jitted
        # policy can pick each slot's parameters from the observation pytree alone.
        # mode: "SYNC" steps the copies in this process, one after another; "ASYNC" runs each
        # copy in its own spawned process and steps them all at once.
        if mode not in ("SYNC", "ASYNC"):
            raise ConfigError(f"mode={mode!r}; use 'SYNC' or 'ASYNC'")
        self.policy_in_obs = policy_in_obs
        self.mode = mode
        if mode == "ASYNC":
            self.envs: list[MultiAgentEnv] = []
            try:
                for fn in env_fns:
                    self.envs.append(RemoteMultiAgentEnv(fn))
            except BaseException:
                for env in self.envs:
                    env.close()
                raise
        else:
            self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        try:
            self.possible_agents = list(self.envs[0].possible_agents)
            for i, env in enumerate(self.envs):
                if list(env.possible_agents) != self.possible_agents:
                    raise ConfigError(
                        f"env copy {i} has possible_agents {env.possible_agents}, copy 0 has "
                        f"{self.possible_agents}; every copy needs the same agents"
                    )
            (
                self.observation_space,
                self.action_space,
                self.agent_observation_spaces,
                self.agent_action_spaces,
            ) = slot_spaces(self.envs[0])
            # Agents' observations differ in shape: each slot row holds one padded flat.
            first = next(iter(self.agent_observation_spaces.values()))
            self._pad_size = (
                None
                if all(sp == first for sp in self.agent_observation_spaces.values())
                else int(np.prod(self.observation_space.shape or ()))
            )
            # Each policy's spaces, checked against its agents' where agents' spaces differ.
            self._policy_spaces = {
                kind: (spaces if len(set(map(repr, by_agent.values()))) > 1 else None)
                for kind, spaces, by_agent in (
                    ("observation", policy_observation_spaces, self.agent_observation_spaces),
                    ("action", policy_action_spaces, self.agent_action_spaces),
                )
            }
            if self.observation_space.shape is None and not is_structured(self.observation_space):
                raise ConfigError(
                    f"observation space {self.observation_space} has no fixed shape; rljax's "
                    "vectorized multi-agent sampling needs array observations (a Box, or Dict "
                    "and Tuple spaces of arrays)"
                )
        except BaseException:
            self.close()  # ASYNC copies are processes: none left behind
            raise
        self.num_agents = len(self.possible_agents)
        self.num_slots = self.num_envs * self.num_agents
        self._agent_index = {a: k for k, a in enumerate(self.possible_agents)}
        self.policy_ids = list(policy_ids)
        self._policy_index = {p: k for k, p in enumerate(self.policy_ids)}
        self.policy_mapping_fn = mapping_caller(policy_mapping_fn)
        self.seed = seed
        self._episode_ids = itertools.count()
        s = self.num_slots
        # One row per slot: an array, or a dict / tuple of arrays for a Dict / Tuple space.
        self._obs = zeros_batch(self.observation_space, s)
        self._acc_reward = np.zeros(s, np.float32)
        self._policy = np.zeros(s, np.int32)
        self.finished_episodes: list[FinishedEpisode] = []
        self._needs_reset = [True] * self.num_envs
        self._acting: list[set[AgentID]] = [set() for _ in range(self.num_envs)]
        self._pending: list[set[AgentID]] = [set() for _ in range(self.num_envs)]
        self._episode: list[EpisodeInfo | None] = [None] * self.num_envs
        self._mapped: list[dict[AgentID, str]] = [{} for _ in range(self.num_envs)]
        self._returns: list[dict[AgentID, float]] = [{} for _ in range(self.num_envs)]
        self._lengths = [0] * self.num_envs
        # record_episodes: each copy logs its episode for episode callbacks (FinishedEpisode.log).
        self._logs: list[list[tuple[Any, ...]]] | None = (
            [[] for _ in range(self.num_envs)] if record_episodes else None
        )
        self._num_resets = 0
        self.num_env_steps = 0  # env.step calls (RLlib's env steps; agent steps are the rows)

    def _slot(self, i: int, agent: AgentID) -> int:
        try:
            return i * self.num_agents + self._agent_index[agent]
        except KeyError:
            raise ValueError(
                f"env copy {i} returned agent {agent!r}, which is not in possible_agents "
                f"{self.possible_agents}"
            ) from None

    def _map(self, i: int, agent: AgentID) -> None:
        if agent in self._mapped[i]:
            return
        policy = self.policy_mapping_fn(agent, self._episode[i], worker_index=0)
        if policy not in self._policy_index:
            raise ValueError(
                f"policy_mapping_fn({agent!r}, ...) returned {policy!r}; the policies are "
                f"{self.policy_ids}"
            )
        for kind, by_agent in (
            ("observation", self.agent_observation_spaces),
            ("action", self.agent_action_spaces),
        ):
            spaces = self._policy_spaces[kind]
            expected = spaces.get(policy) if spaces is not None else None
            if expected is not None and expected != by_agent[agent]:
                raise ValueError(
                    f"policy_mapping_fn({agent!r}, ...) returned {policy!r}, whose {kind} "
                    f"space is {expected}; agent {agent!r}'s is {by_agent[agent]}"
                )
        self._mapped[i][agent] = policy
        self._policy[self._slot(i, agent)] = self._policy_index[policy]

    def _slot_obs(self, agent: AgentID, obs: Any) -> Any:
        return obs if self._pad_size is None else pad_observation(obs, self._pad_size)

    def _empty(self) -> dict[str, np.ndarray]:
        s = self.num_slots
        return {
            "reward": np.zeros(s, np.float32),
            "terminated": np.zeros(s, bool),
            "truncated": np.zeros(s, bool),
            "present": np.zeros(s, bool),
            "stepped": np.zeros(s, bool),
        }

    def _reset_copy(self, i: int, out: dict[str, np.ndarray]) -> None:
        seed = None
        if self.seed is not None:
            seed = derive_seed(self.seed, 10_007 * self._num_resets + i)
        self._num_resets += 1
        obs, infos = self.envs[i].reset(seed=seed)
        if self._logs is not None:
            self._logs[i] = [("reset", dict(obs), dict(infos or {}))]
        self._episode[i] = EpisodeInfo(next(self._episode_ids), i)
        self._mapped[i] = {}
        self._returns[i] = {}
        self._lengths[i] = 0
        self._pending[i] = set()
        self._acting[i] = set(obs)
        for agent, o in obs.items():
            slot = self._slot(i, agent)
            self._map(i, agent)
            _assign(self._obs, slot, self._slot_obs(agent, o))
            self._acc_reward[slot] = 0.0
            out["present"][slot] = True
        self._needs_reset[i] = False

    def _result(self, out: dict[str, np.ndarray]) -> MultiAgentStepResult:
        obs = jax.tree.map(np.copy, self._obs)
        if self.policy_in_obs:
            obs = {"obs": obs, "policy": self._policy.copy()}
        return MultiAgentStepResult(
            obs=obs,
            reward=out["reward"],
            terminated=out["terminated"],
            truncated=out["truncated"],
            env_id=np.arange(self.num_slots, dtype=np.int32),
            present=out["present"],
            policy=self._policy.copy(),
            stepped=out["stepped"],
        )

    def reset(self) -> MultiAgentStepResult:
        out = self._empty()
        for i in range(self.num_envs):
            self._reset_copy(i, out)
        return self._result(out)

    def step(self, actions: np.ndarray, env_id: Any = None) -> MultiAgentStepResult:
        """Steps every copy with the actions of its acting slots; ``actions`` is [S, ...]
        (``env_id`` is accepted for the runners' interface: every slot has a row)."""
        out = self._empty()
        sent: dict[int, dict[AgentID, Any]] = {}
        for i, env in enumerate(self.envs):
            if self._needs_reset[i]:
                continue
            sent[i] = {a: _slot_action(actions, self._slot(i, a)) for a in self._acting[i]}
            self._pending[i] |= self._acting[i]
            if isinstance(env, RemoteMultiAgentEnv):  # ASYNC mode
                env.step_async(sent[i])  # every copy steps at once; results collected below
        for i, env in enumerate(self.envs):
            if self._needs_reset[i]:
                self._reset_copy(i, out)
                continue
            if isinstance(env, RemoteMultiAgentEnv):
                obs, rewards, terms, truncs, infos = env.step_wait()
            else:
                obs, rewards, terms, truncs, infos = env.step(sent[i])
            if self._logs is not None:
                self._logs[i].append(
                    ("step", obs, sent[i], rewards, infos or {}, dict(terms), dict(truncs))
                )
            self._lengths[i] += 1
            self.num_env_steps += 1
            out["stepped"][i * self.num_agents : (i + 1) * self.num_agents] = True  # its slots
            for agent, r in rewards.items():
                if r is None:
                    continue
                self._acc_reward[self._slot(i, agent)] += float(r)
                self._returns[i][agent] = self._returns[i].get(agent, 0.0) + float(r)
            all_term = bool(terms.get("__all__", False))
            all_trunc = bool(truncs.get("__all__", False)) and not all_term
            acting: set[AgentID] = set()
            for agent in set(obs) | {a for a in (*terms, *truncs) if a != "__all__"}:
                slot = self._slot(i, agent)
                self._map(i, agent)
                if agent in obs:
                    _assign(self._obs, slot, self._slot_obs(agent, obs[agent]))
                term, trunc = bool(terms.get(agent, False)), bool(truncs.get(agent, False))
                if term or trunc:
                    self._finish(i, agent, out, term, trunc and not term)
                elif agent in obs:
                    out["present"][slot] = True
                    out["reward"][slot] = self._acc_reward[slot]
                    self._acc_reward[slot] = 0.0
                    acting.add(agent)
            if all_term or all_trunc:
                for agent in list(self._pending[i] | acting):
                    self._finish(i, agent, out, all_term, all_trunc)
                self.finished_episodes.append(
                    FinishedEpisode(
                        env_index=i,
                        length=self._lengths[i],
                        episode_return=float(sum(self._returns[i].values())),
                        agent_returns=dict(self._returns[i]),
                        agent_policies=dict(self._mapped[i]),
                        log=self._logs[i] if self._logs is not None else None,
                    )
                )
                self._needs_reset[i] = True
                acting = set()
            self._acting[i] = acting
        return self._result(out)

    def drain_stats(self) -> tuple[list[FinishedEpisode], int]:
        """The episodes finished and env steps taken since the last call (then cleared).

        The runner calls it from the thread that steps this env, at the end of each fragment,
        so the statistics travel with the fragment they belong to.
        """
        episodes, self.finished_episodes = self.finished_episodes, []
        steps, self.num_env_steps = self.num_env_steps, 0
        return episodes, steps

    def _finish(self, i: int, agent: AgentID, out: dict, term: bool, trunc: bool) -> None:
        """The final result of ``agent``'s episode: its summed reward and done flags."""
        slot = self._slot(i, agent)
        out["present"][slot] = True
        # += : an agent that got an observation on this same step already has its reward here.
        out["reward"][slot] += self._acc_reward[slot]
        out["terminated"][slot] |= term
        out["truncated"][slot] |= trunc and not out["terminated"][slot]
        self._acc_reward[slot] = 0.0
        self._pending[i].discard(agent)

    def close(self, terminate: bool = False) -> None:
        """``terminate``: a copy's step may hang, so end ASYNC copies' processes at once."""
        for env in self.envs:
            if terminate and isinstance(env, RemoteMultiAgentEnv):
                env.close(force=True)
            else:
                env.close()


def _item(action: Any) -> Any:
    arr = np.asarray(action)
    return arr.item() if arr.ndim == 0 else arr


def _slot_action(actions: Any, slot: int) -> Any:
    """Slot ``slot``'s action: its row of ``actions`` ([S, ...]), or of each part where the
    action space is a Tuple or Dict (a tuple or dict of [S, ...] arrays, as
    ``space_env_actions`` gives them: a grouped agent's actions)."""
    if isinstance(actions, tuple | list | dict):
        return jax.tree.map(lambda part: _item(part[slot]), actions)
    return _item(actions[slot])
