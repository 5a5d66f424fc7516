"""Recording the episodes an algorithm samples: ``offline_data(output=DIR)``.

The recorder is an episode hook (``on_episode_end``), added to the algorithm's callbacks when
``output`` is set, so the training env runners' episodes reach it as they reach a user's
``on_episode_end`` (on every sampling path: runner threads, the fused EnvPool program, a JAX
env's rollout); ``Algorithm.evaluate()`` hands it its episodes too. Each finished episode
becomes rows of ``rljax.offline.data`` (an episode cut by a runner's restart never ends and is
not written). ``Algorithm.stop()`` writes the rows still pending when
``output_write_remaining_data`` is set (RLlib's default is False: only full files).
"""

from __future__ import annotations

import threading
from typing import Any

from rljax.offline.data import OfflineWriter, local_path
from rljax.utils.errors import ConfigError


class EpisodeRecorder:
    """Writes each finished episode to an ``OfflineWriter`` (an rljax callback object).

    Args:
      config: The algorithm's config (``output``, ``output_max_rows_per_file``,
        ``output_write_remaining_data``).
      observation_space, action_space: The env's.
    """

    def __init__(self, config: Any, observation_space: Any, action_space: Any):
        self.writer = OfflineWriter(
            local_path("offline_data(output=...)", config.output),
            observation_space,
            action_space,
            config.output_max_rows_per_file,
        )
        self.write_remaining = bool(config.output_write_remaining_data)
        # Training's episode replay and an evaluation beside it may add at once.
        self._lock = threading.Lock()

    def on_episode_end(self, *, episode: Any, **kwargs: Any) -> None:
        """Adds the finished episode's steps."""
        self.add(episode)

    def add(self, episode: Any) -> None:
        """Adds one finished episode (a ``SingleAgentEpisode``)."""
        with self._lock:
            self.writer.add_episode(
                episode.observations,
                episode.actions,
                episode.rewards,
                episode.is_terminated,
                episode.is_truncated,
                episode.id_,
            )

    def close(self) -> None:
        """Writes what is pending if ``output_write_remaining_data``."""
        if self.write_remaining:
            with self._lock:
                self.writer.flush()


def recorder_for(algorithm: Any) -> EpisodeRecorder | None:
    """The recorder of ``algorithm.config.output`` (None: not set, or a module loaded for
    inference). A multi-agent run or a trial of a population is refused.

    Raises:
      ConfigError: ``output`` is set on a run it cannot record.
    """
    config = algorithm.config
    if config.output is None or algorithm._inference_only:
        return None
    if config.is_multi_agent or algorithm._population_member:
        kind = "a trial of a population" if algorithm._population_member else "multi-agent"
        raise ConfigError(
            f"offline_data(output={config.output!r}) records single-agent runs; this one is {kind}"
        )
    return EpisodeRecorder(config, algorithm.observation_space, algorithm.action_space)


def close_recorder(recorder: EpisodeRecorder | None) -> None:
    """``recorder.close()`` where there is one."""
    if recorder is not None:
        recorder.close()


__all__ = ["EpisodeRecorder", "close_recorder", "recorder_for"]
