"""Recording the episodes an algorithm samples: ``offline_data(output=DIR)``.

The recorder is an episode hook (``on_episode_end``), added to the algorithm's callbacks when
``output`` is set, so the training env runners' episodes reach it as they reach a user's
``on_episode_end`` (on every sampling path: runner threads, the fused EnvPool program, a JAX
env's rollout); ``Algorithm.evaluate()`` hands it the episodes of its env copies too (not those
of a ``custom_evaluation_function`` or of ``record_video``). Each finished episode becomes rows
of ``rljax.offline.data`` (an episode cut by a runner's restart never ends and is not written),
or with ``output_write_episodes=True`` (RLlib's default) one row holding the whole episode as
RLlib records it (its ``get_state()``, msgpack'd). Either way its Box actions are those the env
took (clipped to the space's bounds with ``clip_actions``, the default).

Files: with ``output_max_rows_per_file`` each holds that many rows, and ``Algorithm.stop()``
writes the rows that did not fill one when ``output_write_remaining_data`` is set (RLlib's
default is False); without it (None) each ``train()`` and each ``evaluate()`` writes the rows it
recorded as one file.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from gymnasium import spaces

from rljax.offline.data import OfflineWriter, local_path
from rljax.utils.errors import ConfigError
from rljax.utils.serialization import gym_space_to_dict


class EpisodeRecorder:
    """Writes each finished episode to an ``OfflineWriter`` (an rljax callback object).

    Args:
      config: The algorithm's config (``output``, ``output_max_rows_per_file``,
        ``output_write_remaining_data``, ``clip_actions``).
      observation_space, action_space: The env's.
    """

    def __init__(self, config: Any, observation_space: Any, action_space: Any):
        self.writer = OfflineWriter(
            local_path("offline_data(output=...)", config.output),
            observation_space,
            action_space,
            config.output_max_rows_per_file,
            episodes=bool(config.output_write_episodes),
        )
        self.write_remaining = bool(config.output_write_remaining_data)
        self._clip = isinstance(action_space, spaces.Box) and bool(config.clip_actions)
        self._start = int(action_space.start) if isinstance(action_space, spaces.Discrete) else 0
        self._low, self._high = (
            getattr(action_space, "low", None),
            getattr(action_space, "high", None),
        )
        self._closed = False
        # Training's episode replay and an evaluation beside it may add at once.
        self._lock = threading.Lock()

    def on_episode_end(self, *, episode: Any, **kwargs: Any) -> None:
        """Adds a finished training episode's steps (its actions the policy's)."""
        self.add(episode, env_actions=False)

    def add(self, episode: Any, env_actions: bool = True) -> None:
        """Adds one finished episode (a ``SingleAgentEpisode``) whose actions are those the
        env took (``env_actions``, evaluation's) or the policy's: a Box's clipped to its bounds
        with ``clip_actions``, a Discrete's index shifted by the space's ``start``."""
        if self.writer.episodes:
            self._add_state(episode, env_actions)
            return
        actions = episode.get_actions()
        if not env_actions and len(actions):
            actions = self._env_actions(actions)
        with self._lock:
            self.writer.add_episode(
                episode.get_observations(),
                actions,
                episode.get_rewards(),
                episode.is_terminated,
                episode.is_truncated,
                episode.id_,
            )

    def _env_actions(self, actions: Any) -> Any:
        if self._clip:
            return np.clip(np.asarray(actions), self._low, self._high)
        if self._start:
            return np.asarray(actions) + self._start
        return actions

    def _add_state(self, episode: Any, env_actions: bool) -> None:
        """The episode as RLlib records one (``output_write_episodes=True``): its state, its
        actions those the env took, as in rows."""
        state = episode.get_state()
        for key, space in (
            ("_observation_space", self.writer.observation_space),
            ("_action_space", self.writer.action_space),
        ):
            if state.get(key) is None:  # evaluation's episodes are built without spaces
                state[key] = gym_space_to_dict(space)
        data = state["actions"]["data"]
        if not env_actions and len(data) and (self._clip or self._start):
            taken = self._env_actions(data)  # an array (to_numpy()'d) stays one, as RLlib reads it
            taken = taken if isinstance(data, np.ndarray) else list(taken)
            state["actions"] = {**state["actions"], "data": taken}
        try:
            with self._lock:
                self.writer.add_episode_state(state)
        except ValueError as e:
            raise ConfigError(
                f"offline_data(output={self.writer.directory}): episode {episode.id_}: {e}; "
                "output_write_episodes=False records rows of env steps (without infos or "
                "custom_data)"
            ) from None

    def end_of_sampling(self) -> None:
        """After a ``train()`` or an ``evaluate()``: without ``output_max_rows_per_file`` its
        rows become a file; after ``stop()``, an evaluation's rows are written as ``close``
        would."""
        if self.writer.max_rows_per_file is None or (self._closed and self.write_remaining):
            with self._lock:
                self.writer.flush()

    def close(self) -> None:
        """At ``stop()``: writes what is pending if ``output_write_remaining_data`` (always
        without ``output_max_rows_per_file``)."""
        self._closed = True
        if self.write_remaining or self.writer.max_rows_per_file is None:
            with self._lock:
                self.writer.flush()


def recorder_for(algorithm: Any) -> EpisodeRecorder | None:
    """The recorder of ``algorithm.config.output`` (None: not set, or a module loaded for
    inference). A multi-agent run, a trial of a population and a run with env-to-module
    connectors (whose module sees other observations than the env's) are refused.

    Raises:
      ConfigError: ``output`` is set on a run it cannot record.
    """
    config = algorithm.config
    if config.output is None or algorithm._inference_only:
        return None
    kind = None
    if config.is_multi_agent:
        kind = "multi-agent"
    elif algorithm._population_member:
        kind = "a trial of a population"
    elif config.env_to_module_connector is not None:
        kind = "one with env-to-module connectors (the module sees other observations)"
    if kind is not None:
        raise ConfigError(
            f"offline_data(output={config.output!r}) records single-agent runs of the env's "
            f"own observations; this one is {kind}"
        )
    return EpisodeRecorder(config, algorithm.observation_space, algorithm.action_space)


def close_recorder(recorder: EpisodeRecorder | None) -> None:
    """``recorder.close()`` where there is one."""
    if recorder is not None:
        recorder.close()


def end_of_sampling(recorder: EpisodeRecorder | None) -> None:
    """``recorder.end_of_sampling()`` where there is one."""
    if recorder is not None:
        recorder.end_of_sampling()


__all__ = ["EpisodeRecorder", "close_recorder", "end_of_sampling", "recorder_for"]
