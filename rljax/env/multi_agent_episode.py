"""``MultiAgentEpisode``: one multi-agent episode as episode callbacks see it (RLlib's accessors).

A multi-agent env is stepped on the host, one ``env.step`` of a copy at a time; with episode
callbacks, each copy keeps a log of its episode (the reset's observations and infos, then each
step's actions, observations, rewards, infos and done flags, as dicts by agent). When the
episode ends, the log travels with the runner's fragment to the driver, which replays it
through this object: ``on_episode_start`` after the reset, ``on_episode_step`` after each step
but the last, ``on_episode_end`` after the last. Each agent's own steps are also a
``SingleAgentEpisode`` (``agent_episodes``): its first observation, then its actions, rewards
and observations for the steps it acted in.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from rljax.env.single_agent_episode import SingleAgentEpisode, start_episode


class MultiAgentEpisode:
    """One multi-agent episode of one env copy.

    Attributes:
      id_: A unique id (hex string).
      env_index: The env copy within its runner.
      agent_episodes: Agent id -> its ``SingleAgentEpisode``.
      custom_data: The user's own data, kept from ``on_episode_start`` to ``on_episode_end``.
      is_terminated, is_truncated: How the episode ended (``__all__``).
    """

    def __init__(
        self,
        observations: dict[Any, Any],
        infos: dict[Any, Any],
        env_index: int = 0,
        agent_to_module: dict[Any, str] | None = None,
    ):
        self.id_ = uuid.uuid4().hex
        self.env_index = env_index
        self.agent_episodes: dict[Any, SingleAgentEpisode] = {}
        self.custom_data: dict[str, Any] = {}
        self.is_terminated = False
        self.is_truncated = False
        self._agent_to_module = dict(agent_to_module or {})
        self._observations: list[dict[Any, Any]] = [dict(observations)]
        self._infos: list[dict[Any, Any]] = [dict(infos)]
        self._actions: list[dict[Any, Any]] = []
        self._rewards: list[dict[Any, float]] = []
        for agent, obs in observations.items():
            self._agent(agent, obs, (infos or {}).get(agent, {}))

    def _agent(self, agent: Any, obs: Any, info: Any) -> SingleAgentEpisode:
        episode = start_episode(obs, info if isinstance(info, dict) else {}, self.env_index)
        episode.agent_id = agent
        episode.module_id = self._agent_to_module.get(agent)
        episode.multi_agent_episode_id = self.id_
        self.agent_episodes[agent] = episode
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
        """One ``env.step``: by agent, the actions sent and what came back."""
        rewards = {a: float(r) for a, r in rewards.items() if r is not None}
        self._observations.append(dict(observations))
        self._actions.append(dict(actions))
        self._rewards.append(rewards)
        self._infos.append(dict(infos or {}))
        for agent, action in actions.items():
            episode = self.agent_episodes.get(agent)
            if episode is None or episode.is_done:
                continue
            done_term = bool(terminateds.get(agent, False) or terminateds.get("__all__", False))
            done_trunc = bool(truncateds.get(agent, False) or truncateds.get("__all__", False))
            obs = observations.get(agent, episode.get_observations(-1))
            info = (infos or {}).get(agent, {})
            episode.add_env_step(
                obs,
                action,
                rewards.get(agent, 0.0),
                info if isinstance(info, dict) else {},
                terminated=done_term,
                truncated=done_trunc,
            )
        for agent, obs in observations.items():  # an agent that joins mid-episode
            if agent not in self.agent_episodes:
                self._agent(agent, obs, (infos or {}).get(agent, {}))
        self.is_terminated = bool(terminateds.get("__all__", False))
        self.is_truncated = bool(truncateds.get("__all__", False)) and not self.is_terminated

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    @property
    def agent_ids(self) -> list[Any]:
        return list(self.agent_episodes)

    def module_for(self, agent_id: Any) -> str | None:
        """The policy (module) ``agent_id`` plays with in this episode."""
        return self._agent_to_module.get(agent_id)

    @property
    def env_t(self) -> int:
        return len(self._actions)

    def __len__(self) -> int:
        return len(self._actions)

    def len(self) -> int:
        return len(self._actions)

    def get_return(self) -> float:
        """The sum of every agent's rewards."""
        return float(sum(sum(r.values()) for r in self._rewards))

    def get_agent_returns(self) -> dict[Any, float]:
        return {a: e.get_return() for a, e in self.agent_episodes.items()}

    def _pick(self, items: list[Any], indices: Any) -> Any:
        if indices is None:
            return list(items)
        if isinstance(indices, int | np.integer):
            return items[int(indices)]
        if isinstance(indices, slice):
            return items[indices]
        return [items[int(i)] for i in indices]

    def get_observations(self, indices: Any = None) -> Any:
        """By env step, dicts agent -> observation (``len(self) + 1``: the reset's first)."""
        return self._pick(self._observations, indices)

    def get_actions(self, indices: Any = None) -> Any:
        return self._pick(self._actions, indices)

    def get_rewards(self, indices: Any = None) -> Any:
        return self._pick(self._rewards, indices)

    def get_infos(self, indices: Any = None) -> Any:
        return self._pick(self._infos, indices)

    def __repr__(self) -> str:
        return (
            f"MultiAgentEpisode(id_={self.id_[:8]}, len={len(self)}, agents={self.agent_ids}, "
            f"return={self.get_return():.3g}, done={self.is_done})"
        )


__all__ = ["MultiAgentEpisode"]
