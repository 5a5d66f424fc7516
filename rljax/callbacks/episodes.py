"""Episode callbacks replayed on the host, once per iteration, from the steps sampled in jit.

With an episode hook defined, the act step records each row's next observation and info
(``make_act_step(record_steps=True)``) and ``episode_arrays`` returns the rows; the algorithm
hands them here after each iteration. Rows are read in the order they were sampled; each
stream (a sub-env) has at most one open episode:

- a row that is not a transition (``valid`` False) is the step after an episode end (or the
  first reset): its next observation and info start the stream's next episode, which is
  created (``on_episode_created``, ``on_episode_start``) at its first step;
- with same-step resets (on-policy runners) every row is a transition: the row that ends an
  episode holds its final observation, and the next episode starts from the next row's
  observation; gymnasium's info of that row is the reset's, the ended step's being in its
  ``final_info``; the info of a runner's first reset comes with its first row, under
  ``RESET_INFO``;
- a transition adds a step (``on_episode_step``); where an episode ended (``episode_done``:
  a whole game, Atari lives notwithstanding) it ends (``on_episode_end``, after that step's
  ``on_episode_step``, as in RLlib).

A step after a lost life that is not a game over is not a transition but continues the game, so
the episode stays open. An episode cut where its runner's env raised (a ``truncated`` row that
ends no episode), or whose sub-env was restarted, never ends: it is dropped without
``on_episode_end``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from rljax.callbacks.dispatch import Callbacks
from rljax.env.multi_agent_episode import MultiAgentEpisode
from rljax.env.single_agent_episode import RESET_INFO, SingleAgentEpisode, info_rows
from rljax.utils.metrics.metrics_logger import MetricsLogger


class EpisodeReplay:
    """Open episodes per stream across iterations, and the hooks called on them.

    Args:
      callbacks: The algorithm's callbacks.
      metrics_logger: The logger episode hooks log into (reduced into ``env_runners``).
      context: ``context(stream) -> dict`` of the hook arguments that depend on where the
        stream runs (``env_runner``, ``env``, ``env_index``, ``rl_module``).
      observation_space, action_space: The env's (one sub-env's) spaces, the episodes'
        (``fill`` and one-hot actions read them).
    """

    def __init__(
        self,
        callbacks: Callbacks,
        metrics_logger: MetricsLogger,
        context: Callable[[int], dict[str, Any]],
        observation_space: Any = None,
        action_space: Any = None,
    ):
        self.callbacks = callbacks
        self.metrics_logger = metrics_logger
        self.context = context
        self.spaces = {"observation_space": observation_space, "action_space": action_space}
        self.open: dict[int, SingleAgentEpisode] = {}
        self.pending: dict[int, tuple[Any, dict[str, Any]]] = {}
        self.life_lost: set[int] = set()
        self._step_hook = callbacks.defines("on_episode_step")

    def replay(self, steps: dict[str, Any], host_infos: Any = None) -> list[SingleAgentEpisode]:
        """Replays one update's rows (``episode_arrays(...)["steps"]`` on the host; leading
        dims ``[..., T, K]``, flattened in order); returns the episodes that ended."""
        steps = jax.tree.map(np.asarray, steps)
        width = steps["env_id"].shape[-1]
        flat = jax.tree.map(lambda x: x.reshape(-1, width, *x.shape[steps["env_id"].ndim :]), steps)
        env_id, valid = flat["env_id"], flat["valid"]
        done, term, trunc = flat["episode_done"], flat["terminated"], flat["truncated"]
        finished: list[SingleAgentEpisode] = []
        rows = env_id.shape[0]
        table = host_infos if host_infos is not None else info_rows(flat["info"], (rows, width))
        for t in range(rows):
            infos = table[t]
            for k in range(width):
                stream = int(env_id[t, k])
                if not valid[t, k]:
                    if stream in self.life_lost:  # the game goes on after a lost life
                        continue
                    self.open.pop(stream, None)  # an open episode here was broken (restart)
                    self.pending[stream] = (_at(flat["next_obs"], t, k), infos[k])
                    continue
                info, reset_info = infos[k], None
                if isinstance(info, dict) and RESET_INFO in info:
                    info = dict(info)
                    self.pending[stream] = (None, info.pop(RESET_INFO))
                episode = self.open.get(stream)
                if episode is None:
                    episode = self._start(stream, _at(flat["obs"], t, k))
                if isinstance(info, dict) and "final_info" in info:  # a same-step reset
                    reset_info = {
                        key: v for key, v in info.items() if key not in ("final_info", "final_obs")
                    }
                    info = info["final_info"]
                episode.add_env_step(
                    _at(flat["next_obs"], t, k),
                    _at(flat["action"], t, k),
                    float(flat["reward"][t, k]),
                    info,
                    terminated=bool(term[t, k]) and bool(done[t, k]),
                    truncated=bool(trunc[t, k]) and bool(done[t, k]),
                )
                if bool(done[t, k]):
                    self.life_lost.discard(stream)
                    if not episode.is_done:  # a game over through a lost life's flags
                        episode.is_terminated = True
                    if self._step_hook:  # RLlib's: the last step too, then the end
                        self._call("on_episode_step", episode, stream)
                    self._call("on_episode_end", episode, stream)
                    del self.open[stream]
                    finished.append(episode)
                    if reset_info is not None:  # the next row's observation starts the next
                        self.pending[stream] = (None, reset_info)
                    continue
                if bool(trunc[t, k]):  # cut where its runner's env raised: never ends
                    del self.open[stream]
                    self.life_lost.discard(stream)
                    continue
                if bool(term[t, k]):  # a lost life (Atari's episodic life): the game goes on
                    self.life_lost.add(stream)
                else:
                    self.life_lost.discard(stream)
                if self._step_hook:
                    self._call("on_episode_step", episode, stream)
        return finished

    def _start(self, stream: int, obs: Any) -> SingleAgentEpisode:
        obs0, info0 = self.pending.pop(stream, (obs, {}))
        obs0 = obs if obs0 is None else obs0
        ctx = self.context(stream)
        episode = SingleAgentEpisode(**self.spaces)  # created before its reset, as RLlib's
        episode.env_index = ctx["env_index"]
        self._call("on_episode_created", episode, stream, ctx)
        episode.add_env_reset(obs0, info0)
        self._call("on_episode_start", episode, stream, ctx)
        self.open[stream] = episode
        return episode

    def _call(self, hook: str, episode: SingleAgentEpisode, stream: int, ctx: Any = None) -> None:
        if not self.callbacks.defines(hook):
            return
        ctx = ctx if ctx is not None else self.context(stream)
        self.callbacks(hook, episode=episode, metrics_logger=self.metrics_logger, **ctx)


def _at(column: Any, t: int, k: int) -> Any:
    """Row ``(t, k)`` of a column: an array, or a structure of them (a ``Dict`` or ``Tuple``
    observation)."""
    if isinstance(column, np.ndarray):
        return column[t, k]
    return jax.tree.map(lambda leaf: leaf[t, k], column)


def replay_finished(
    callbacks: Callbacks,
    metrics_logger: MetricsLogger,
    finished: SingleAgentEpisode,
    context: dict[str, Any],
    spaces: tuple[Any, Any] = (None, None),
) -> SingleAgentEpisode:
    """The episode hooks over an episode that ended (an evaluation's, recorded whole), as
    RLlib's runner calls them: created before the reset, start after it, a step after each env
    step, end after the last one's; the hooks get a new episode that grows step by step.
    ``context``: the hooks' ``env_runner``, ``env``, ``env_index`` and ``rl_module``;
    ``spaces``: the policy's (observation, action) spaces, where ``finished`` has none."""
    episode = SingleAgentEpisode(
        observation_space=finished.observation_space or spaces[0],
        action_space=finished.action_space or spaces[1],
    )
    episode.env_index = finished.env_index
    kwargs = {"episode": episode, "metrics_logger": metrics_logger, **context}
    if callbacks.defines("on_episode_created"):
        callbacks("on_episode_created", **kwargs)
    observations, infos = finished.get_observations(), finished.get_infos()
    actions, rewards = finished.get_actions(), finished.get_rewards()
    episode.add_env_reset(observations[0], infos[0])
    if callbacks.defines("on_episode_start"):
        callbacks("on_episode_start", **kwargs)
    steps = len(finished)
    for t in range(steps):
        last = t == steps - 1
        episode.add_env_step(
            observations[t + 1],
            actions[t],
            float(rewards[t]),
            infos[t + 1],
            terminated=last and finished.is_terminated,
            truncated=last and finished.is_truncated,
        )
        if callbacks.defines("on_episode_step"):
            callbacks("on_episode_step", **kwargs)
    if callbacks.defines("on_episode_end"):
        callbacks("on_episode_end", **kwargs)
    return episode


def replay_multi_agent(
    callbacks: Callbacks,
    metrics_logger: MetricsLogger,
    finished: list[tuple[int, Any]],
    context: Callable[[int, int], dict[str, Any]],
    module_spaces: dict[str, tuple[Any, Any]] | None = None,
) -> list[MultiAgentEpisode]:
    """Replays finished multi-agent episodes (``FinishedEpisode`` with its ``log``, and its
    runner slot) through ``MultiAgentEpisode`` objects and the hooks, as RLlib calls them:
    created before the reset, start after it, a step after each env step, end after the last
    one's step. A multi-agent episode's hooks all run in the iteration in which it ended."""
    episodes = []
    for slot, ep in finished:
        if not ep.log:
            continue
        ctx = context(slot, ep.env_index)
        (_, obs0, infos0), *steps = ep.log
        episode = MultiAgentEpisode(None, None, ep.env_index, ep.agent_policies, module_spaces)
        kwargs = {"episode": episode, "metrics_logger": metrics_logger, **ctx}
        if callbacks.defines("on_episode_created"):
            callbacks("on_episode_created", **kwargs)
        episode.add_env_reset(obs0, infos0)
        if callbacks.defines("on_episode_start"):
            callbacks("on_episode_start", **kwargs)
        for _, obs, actions, rewards, infos, terms, truncs in steps:
            episode.add_env_step(obs, actions, rewards, infos, terms, truncs)
            if callbacks.defines("on_episode_step"):
                callbacks("on_episode_step", **kwargs)
        if callbacks.defines("on_episode_end"):
            callbacks("on_episode_end", **kwargs)
        episodes.append(episode)
    return episodes


__all__ = ["EpisodeReplay", "replay_finished", "replay_multi_agent"]
