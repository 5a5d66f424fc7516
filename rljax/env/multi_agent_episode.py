"""``MultiAgentEpisode``: one multi-agent episode as episode callbacks see it, with RLlib's
accessors (``ray.rllib.env.multi_agent_episode``).

A multi-agent env is stepped on the host, one ``env.step`` of a copy at a time; with episode
callbacks, each copy keeps a log of its episode (the reset's observations and infos, then each
step's actions, observations, rewards, infos and done flags, as dicts by agent). When the
episode ends, the log travels with the runner's fragment to the driver, which replays it
through this object: ``on_episode_created`` before the reset, ``on_episode_start`` after it,
``on_episode_step`` after each step, ``on_episode_end`` after the last one's step hook. Each agent's own steps are also a
``SingleAgentEpisode`` (``agent_episodes``): its first observation, then its actions, rewards
and observations for the steps it acted in.

The getters are RLlib's: ``get_rewards()`` is a dict ``{agent_id: [rewards]}``, indexed by env
step (``get_observations(-1)``: each agent's observation of the last env step, for the agents
that had one), ``env_steps=False`` indexes each agent's own steps, ``return_list=True`` gives
one dict per env step. As in RLlib, an agent's step runs from its observation through its
action to its next observation, with the rewards paid to it in between: in a turn-based game
an agent's action waits for the observation of its next turn (or for the episode's end).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from rljax.env.single_agent_episode import SingleAgentEpisode, start_episode
from rljax.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from rljax.utils.spaces.space_utils import batch

# An env step outside the episode (a place for ``fill``).
_OUTSIDE = "outside"


class MultiAgentEpisode:
    """One multi-agent episode of one env copy.

    Built from the reset's ``observations`` and ``infos`` (dicts by agent), or empty
    (``MultiAgentEpisode()``) and then ``add_env_reset``; ``agent_to_module`` maps the agents
    to their policies, and ``module_spaces`` gives each policy's ``(observation_space,
    action_space)``, its agents' episodes' spaces.

    Attributes:
      id_: A unique id (hex string).
      env_index: The env copy within its runner.
      agent_episodes: Agent id -> its ``SingleAgentEpisode``.
      custom_data: The user's own data, kept from ``on_episode_start`` to ``on_episode_end``.
      is_terminated, is_truncated: How the episode ended (``__all__``).
    """

    def __init__(
        self,
        observations: dict[Any, Any] | None = None,
        infos: dict[Any, Any] | None = None,
        env_index: int = 0,
        agent_to_module: dict[Any, str] | None = None,
        module_spaces: dict[str, tuple[Any, Any]] | None = None,
    ):
        self.id_ = uuid.uuid4().hex
        self.env_index = env_index
        self.agent_episodes: dict[Any, SingleAgentEpisode] = {}
        self.custom_data: dict[str, Any] = {}
        self.is_terminated = False
        self.is_truncated = False
        self._agent_to_module = dict(agent_to_module or {})
        self._module_spaces = dict(module_spaces or {})  # policy -> (obs space, action space)
        self._env_t = 0  # env steps so far
        self._stepped: set[Any] | None = None  # the agents observed last (None: not reset)
        # Per agent and env step: the index of its observation (env steps 0..env_t) and of
        # its action (env steps 0..env_t - 1) in its own episode, None where it had none.
        self._obs_at: dict[Any, list[int | None]] = {}
        self._act_at: dict[Any, list[int | None]] = {}
        self._hanging_begin: dict[Any, float] = {}  # rewards before an agent's first observation
        self._hanging_end: dict[Any, float] = {}  # rewards while an agent waits to act
        self._pending: dict[Any, list[Any]] = {}  # agent -> [action, rewards since, env step]
        self._start_time = time.perf_counter()
        self._last_step_time: float | None = None
        if observations is not None:
            self.add_env_reset(observations, infos)

    # -- adding data ---------------------------------------------------------------------------

    def add_env_reset(
        self, observations: dict[Any, Any], infos: dict[Any, Any] | None = None
    ) -> None:
        """Starts the episode with the reset's observations and infos (dicts by agent).

        Raises:
          RuntimeError: the episode has its reset observations already.
        """
        if self._stepped is not None:
            raise RuntimeError("add_env_reset() on a multi-agent episode that is reset already")
        self._stepped = set(observations)
        for agent, obs in observations.items():
            self._agent(agent, obs, (infos or {}).get(agent, {}))

    def _agent(self, agent: Any, obs: Any, info: Any) -> SingleAgentEpisode:
        module_id = self._agent_to_module.get(agent)
        obs_space, act_space = self._module_spaces.get(str(module_id), (None, None))
        episode = start_episode(
            obs,
            info if isinstance(info, dict) else {},
            self.env_index,
            observation_space=obs_space,
            action_space=act_space,
        )
        episode.agent_id = agent
        episode.module_id = module_id
        episode.multi_agent_episode_id = self.id_
        self.agent_episodes[agent] = episode
        t = self._env_t  # the env step of this observation
        self._obs_at[agent] = [None] * t + [0]
        self._act_at[agent] = [None] * t
        return episode

    def add_env_step(
        self,
        observations: dict[Any, Any],
        actions: dict[Any, Any],
        rewards: dict[Any, Any],
        infos: dict[Any, Any],
        terminateds: dict[Any, bool],
        truncateds: dict[Any, bool],
    ) -> None:
        """One ``env.step``: by agent, the actions sent and what came back.

        As RLlib's episode: an agent's step is its observation, its action, the rewards paid
        to it until its next observation, and that observation. An agent that acts without an
        observation back (a turn-based game) holds its action until one arrives, or until it
        is done (then its last observation closes the step). A reward before an agent's first
        observation stays outside its episode (``get_return(include_hanging_rewards=True)``).
        """
        rewards = {a: float(r) for a, r in rewards.items() if r is not None}
        infos = infos or {}
        t = self._env_t  # this env step (its actions'; its observations' is t + 1)
        self._env_t += 1
        self._stepped = set(observations)
        for agent in self._obs_at:  # one more env step in every agent's maps
            self._obs_at[agent].append(None)
            self._act_at[agent].append(None)
        all_term = bool(terminateds.get("__all__", False))
        all_trunc = bool(truncateds.get("__all__", False)) and not all_term
        agents = {*observations, *actions, *rewards, *terminateds, *truncateds} - {"__all__"}
        if all_term or all_trunc:
            agents |= set(self.agent_episodes)
        for agent in agents:
            reward = rewards.get(agent, 0.0)
            episode = self.agent_episodes.get(agent)
            if episode is None:  # not in the episode yet: it joins with its observation
                self._hanging_begin[agent] = self._hanging_begin.get(agent, 0.0) + reward
                if agent in observations and not (terminateds.get(agent) or all_term):
                    self._agent(agent, observations[agent], _info(infos, agent))
                continue
            if episode.is_done:
                continue
            term = bool(terminateds.get(agent, False)) or all_term
            trunc = (bool(truncateds.get(agent, False)) or all_trunc) and not term
            if agent in actions:
                self._pending[agent] = [actions[agent], reward, t]
            elif agent in self._pending:
                self._pending[agent][1] += reward
            elif reward:  # paid while it waits to act: counts for its next step
                self._hanging_end[agent] = self._hanging_end.get(agent, 0.0) + reward
            if agent in self._pending and (agent in observations or term or trunc):
                action, paid, acted_at = self._pending.pop(agent)
                paid += self._hanging_end.pop(agent, 0.0)
                seen = agent in observations
                episode.add_env_step(
                    observations[agent] if seen else episode.get_observations(-1),
                    action,
                    paid,
                    _info(infos, agent) if seen else {},
                    terminated=term,
                    truncated=trunc,
                )
                self._act_at[agent][acted_at] = len(episode) - 1
                self._obs_at[agent][-1] = len(episode)
            elif agent in observations:  # a newer observation while it waits to act
                episode.set_observations(new_data=observations[agent], at_indices=-1)
                episode.infos[-1] = _info(infos, agent)
                self._obs_at[agent] = [
                    None if i == len(episode) else i for i in self._obs_at[agent][:-1]
                ] + [len(episode)]
            if (term or trunc) and not episode.is_done:  # done while waiting to act
                episode.is_terminated, episode.is_truncated = term, trunc
            if term or trunc:  # as RLlib, rewards outside its steps go with a done agent
                self._hanging_begin.pop(agent, None)
                self._hanging_end.pop(agent, None)
        self.is_terminated = all_term
        self.is_truncated = all_trunc
        self._last_step_time = time.perf_counter()

    # -- state ---------------------------------------------------------------------------------

    @property
    def is_done(self) -> bool:
        """The episode ended (``__all__`` terminated or truncated)."""
        return self.is_terminated or self.is_truncated

    @property
    def is_reset(self) -> bool:
        """The episode has its reset observations."""
        return self._stepped is not None

    @property
    def is_numpy(self) -> bool:
        """Every agent's episode is numpy (``to_numpy()``)."""
        return bool(self.agent_episodes) and all(e.is_numpy for e in self.agent_episodes.values())

    def to_numpy(self) -> MultiAgentEpisode:
        """Each agent's episode ``to_numpy()``; returns the episode."""
        for episode in self.agent_episodes.values():
            episode.to_numpy()
        return self

    @property
    def agent_ids(self) -> set[Any]:
        """The agents that have been in the episode (RLlib's set)."""
        return set(self.agent_episodes)

    @property
    def agent_episode_ids(self) -> dict[Any, str]:
        """Agent id -> the id of its ``SingleAgentEpisode``."""
        return {a: e.id_ for a, e in self.agent_episodes.items()}

    def module_for(self, agent_id: Any) -> str | None:
        """The policy (module) ``agent_id`` plays with in this episode."""
        return self._agent_to_module.get(agent_id)

    @property
    def env_t(self) -> int:
        """Env steps so far."""
        return self._env_t

    def __len__(self) -> int:
        return self._env_t

    def len(self) -> int:
        """``len(episode)``: env steps."""
        return self._env_t

    def env_steps(self) -> int:
        """Env steps so far."""
        return self._env_t

    def agent_steps(self) -> int:
        """Agent steps so far: every agent's steps added up."""
        return sum(len(e) for e in self.agent_episodes.values())

    def get_agents_that_stepped(self) -> set[Any]:
        """The agents with an observation in the last env step (or the reset)."""
        return set(self._stepped or ())

    def get_agents_to_act(self) -> set[Any]:
        """The agents with an observation in the last env step that are not done."""
        return {
            a
            for a in self.get_agents_that_stepped()
            if a in self.agent_episodes and not self.agent_episodes[a].is_done
        }

    def get_terminateds(self) -> dict[Any, bool]:
        """Each agent's terminated flag, and ``"__all__"``."""
        out = {a: e.is_terminated for a, e in self.agent_episodes.items()}
        out["__all__"] = self.is_terminated
        return out

    def get_truncateds(self) -> dict[Any, bool]:
        """Each agent's truncated flag, and ``"__all__"``."""
        out = {a: e.is_truncated for a, e in self.agent_episodes.items()}
        out["__all__"] = self.is_truncated
        return out

    def get_return(self, include_hanging_rewards: bool = False) -> float:
        """The sum of every agent's rewards in its steps; ``include_hanging_rewards`` adds
        those not in a step yet (before an agent's first observation, or since its last
        step while its next one is open)."""
        total = sum(e.get_return() for e in self.agent_episodes.values())
        if include_hanging_rewards:
            total += sum(self._hanging_begin.values()) + sum(self._hanging_end.values())
            total += sum(pending[1] for pending in self._pending.values())
        return float(total)

    def get_agent_returns(self) -> dict[Any, float]:
        """Agent id -> the sum of its rewards."""
        return {a: e.get_return() for a, e in self.agent_episodes.items()}

    def get_duration_s(self) -> float:
        """Seconds from the episode's start to its last step."""
        if self._last_step_time is None:
            return 0.0
        return self._last_step_time - self._start_time

    # -- reading -------------------------------------------------------------------------------

    def get_observations(
        self,
        indices: int | slice | list[int] | None = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
        return_list: bool = False,
    ) -> Any:
        """Observations by agent: ``{agent_id: ...}`` of the env steps ``indices`` (None: all,
        the reset's first), for the agents that had an observation there (``fill``: every
        agent, filled where it had none); ``env_steps=False`` indexes each agent's own
        observations; ``return_list=True`` gives one dict per env step. ``agent_ids``: only
        those agents."""
        return self._get(
            "observations",
            indices,
            agent_ids,
            env_steps,
            neg_index_as_lookback,
            fill,
            one_hot_discrete,
            return_list,
        )

    def get_infos(
        self,
        indices: int | slice | list[int] | None = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        return_list: bool = False,
    ) -> Any:
        """Infos by agent, indexed as ``get_observations``."""
        return self._get(
            "infos",
            indices,
            agent_ids,
            env_steps,
            neg_index_as_lookback,
            fill,
            False,
            return_list,
        )

    def get_actions(
        self,
        indices: int | slice | list[int] | None = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
        return_list: bool = False,
    ) -> Any:
        """Actions by agent: ``{agent_id: ...}`` of the env steps ``indices`` in which the
        agent acted (see ``get_observations`` for the arguments)."""
        return self._get(
            "actions",
            indices,
            agent_ids,
            env_steps,
            neg_index_as_lookback,
            fill,
            one_hot_discrete,
            return_list,
        )

    def get_rewards(
        self,
        indices: int | slice | list[int] | None = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: float | None = None,
        return_list: bool = False,
    ) -> Any:
        """Rewards by agent: ``{agent_id: [rewards]}``, one per env step the agent acted in
        (the rewards until its next action included); see ``get_observations``."""
        return self._get(
            "rewards",
            indices,
            agent_ids,
            env_steps,
            neg_index_as_lookback,
            fill,
            False,
            return_list,
        )

    def _get(
        self,
        what: str,
        indices: Any,
        agent_ids: Any,
        env_steps: bool,
        neg_as_lookback: bool,
        fill: Any,
        one_hot: bool,
        return_list: bool,
    ) -> Any:
        if agent_ids is None:
            wanted = list(self.agent_episodes)
        else:
            given = agent_ids if isinstance(agent_ids, list | tuple | set) else [agent_ids]
            wanted = [a for a in self.agent_episodes if a in set(given)]
        extra = {"one_hot_discrete": True} if one_hot else {}
        if not env_steps:
            if return_list:
                raise ValueError(
                    f"get_{what}(): env_steps=False and return_list=True cannot be combined"
                )
            out = {}
            for agent in wanted:
                value = getattr(self.agent_episodes[agent], f"get_{what}")(
                    indices, neg_index_as_lookback=neg_as_lookback, fill=fill, **extra
                )
                if not (isinstance(value, list) and not value):
                    out[agent] = value
            return out
        per_agent = {
            agent: self._by_env_steps(what, agent, indices, neg_as_lookback, fill, extra)
            for agent in wanted
        }
        if isinstance(indices, int):  # one env step: {agent: value}
            return {a: value for a, (present, value) in per_agent.items() if present}
        if return_list:  # one dict per env step
            n = max((len(places) for places in per_agent.values()), default=0)
            rows: list[dict[Any, Any]] = [{} for _ in range(n)]
            for agent, places in per_agent.items():
                for row, (present, value) in zip(rows, places, strict=False):
                    if present:
                        row[agent] = value
            return rows
        out = {}
        for agent, places in per_agent.items():
            kept = [value for present, value in places if present]
            if kept:
                numpy = self.agent_episodes[agent].is_numpy and what != "infos"
                out[agent] = batch(kept) if numpy else kept
        return out

    def _by_env_steps(
        self,
        what: str,
        agent: Any,
        indices: Any,
        neg_as_lookback: bool,
        fill: Any,
        extra: dict[str, Any],
    ) -> Any:
        """One agent's data at the env steps ``indices``: for an int ``(present, value)``,
        else a list of them, one per env step asked for (absent where the agent had nothing
        there and there is no ``fill``)."""
        at = self._obs_at[agent] if what in ("observations", "infos") else self._act_at[agent]
        places = InfiniteLookbackBuffer(at).get(  # reads only: the map itself
            indices, neg_index_as_lookback=neg_as_lookback, fill=_OUTSIDE
        )
        episode = self.agent_episodes[agent]
        getter = getattr(episode, f"get_{what}")

        def value(place: Any) -> tuple[bool, Any]:
            if isinstance(place, int):
                return True, getter(place, **extra)
            if fill is None:
                return False, None
            return True, getter(10**12, fill=fill, **extra)  # the column's fill item

        if isinstance(indices, int):
            return value(places)
        return [value(p) for p in places]

    def __repr__(self) -> str:
        return (
            f"MultiAgentEpisode(id_={self.id_[:8]}, len={len(self)}, "
            f"agents={sorted(map(str, self.agent_episodes))}, "
            f"return={self.get_return():.3g}, done={self.is_done})"
        )


def _info(infos: dict[Any, Any], agent: Any) -> dict[str, Any]:
    info = infos.get(agent, {})
    return info if isinstance(info, dict) else {}


__all__ = ["MultiAgentEpisode"]
