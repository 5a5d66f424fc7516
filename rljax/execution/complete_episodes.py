"""Whole episodes out of fixed-length fragments: RLlib's ``batch_mode="complete_episodes"``.

The runners sample fragments of ``rollout_fragment_length`` steps as always; ``EpisodeBuffer``
keeps each sub-env's episode in progress across fragments (on the host) and hands out a batch
once the episodes that ended hold at least ``min_rows`` env steps: every one of them, whole, in
one flat trajectory ``[P, 1]`` whose streams are the episodes (``env_id`` numbers them), padded
with rows that are no transition (``valid`` False) up to a size of ``bucket_rows``, so the
update compiles once per size bucket, not once per batch. No episode is cut, so no value is
bootstrapped at a fragment's end; a truncated episode is bootstrapped from its last
observation as on the other paths.

Episodes go on across fragments (the sub-envs are not reset for a batch), so a batch may hold
the first steps of an episode sampled with the weights of an earlier update: PPO's ratio uses
the log-probabilities recorded when each step was acted, as it does for any fragment.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from rljax.runners.acting import Transition

# A segment of an episode: (a fragment's rows flattened to [T * K, ...], row indices in it).
Segment = tuple[Any, np.ndarray]


def bucket_rows(rows: int, unit: int) -> int:
    """The padded size of a batch of ``rows`` env steps: a multiple of ``unit`` (the
    minibatch), ``unit * m`` with ``m`` in 1..8, then 8..15 times a power of two (9, 10, .., 15,
    16, 18, 20, .., 30, 32, 36, ...): at most an eighth of it is padding beyond the
    minibatch's rounding, and a run compiles a handful of sizes."""
    if rows < 1 or unit < 1:
        raise ValueError(f"rows={rows} and unit={unit} must be >= 1")
    m = math.ceil(rows / unit)
    if m > 8:
        scale = 1 << (m.bit_length() - 4)  # m // scale is 8..15
        m = math.ceil(m / scale) * scale
    return m * unit


class EpisodeBuffer:
    """Episodes in progress per sub-env, and the finished ones waiting for a batch.

    Args:
      min_rows: The env steps of finished episodes a batch needs (``train_batch_size``).
      unit: The padded batch size is a multiple of it (``bucket_rows``).
      max_episode_rows: An episode longer than this raises ``RuntimeError``: an env whose
        episodes never end cannot fill a batch of complete episodes.
    """

    def __init__(self, min_rows: int, unit: int, max_episode_rows: int | None = None):
        self.min_rows = min_rows
        self.unit = unit
        self.max_episode_rows = max_episode_rows or max(20 * min_rows, 100_000)
        self._ongoing: dict[int, list[Segment]] = {}
        self._ongoing_rows: dict[int, int] = {}
        self._finished: list[list[Segment]] = []
        self._finished_rows = 0
        # After restart(): streams whose episode in progress began before it (its first
        # steps are unknown), dropped until that episode ends. None: every stream is clean.
        self._clean: set[int] | None = None

    @property
    def finished_rows(self) -> int:
        """Env steps of the finished episodes waiting for a batch."""
        return self._finished_rows

    @property
    def ongoing_rows(self) -> int:
        """Env steps of the episodes in progress."""
        return sum(self._ongoing_rows.values())

    def restart(self) -> None:
        """Forgets every episode (a restored checkpoint: the envs go on from states whose
        earlier steps this buffer never saw, and the episodes finished since the checkpoint
        belong to the run it replaces); each sub-env's steps count again from the end of its
        current episode."""
        self._ongoing.clear()
        self._ongoing_rows.clear()
        self._finished, self._finished_rows = [], 0
        self._clean = set()

    def add(self, traj: Transition) -> None:
        """Takes a fragment ``[T, K]`` (host arrays): each sub-env's real transitions join its
        episode in progress, and the episodes that end in it are finished."""
        t_len, k = np.shape(traj.valid)
        flat = jax.tree.map(lambda x: np.asarray(x).reshape((t_len * k, *np.shape(x)[2:])), traj)
        valid = flat.valid.astype(bool)
        ends = valid & (flat.terminated.astype(bool) | flat.truncated.astype(bool))
        env_id = flat.env_id.astype(np.int64)
        time = np.repeat(np.arange(t_len), k)
        order = np.lexsort((time, env_id))
        order = order[valid[order]]
        if order.size == 0:
            return
        streams = env_id[order]
        starts = np.flatnonzero(np.concatenate([[True], streams[1:] != streams[:-1]]))
        for rows in np.split(order, starts[1:]):
            self._add_stream(int(env_id[rows[0]]), flat, rows, ends[rows])

    def _add_stream(self, stream: int, flat: Any, rows: np.ndarray, ends: np.ndarray) -> None:
        start = 0
        for end in np.flatnonzero(ends):
            segment = rows[start : end + 1]
            start = end + 1
            if self._clean is not None and stream not in self._clean:
                self._clean.add(stream)  # its headless episode ended: dropped
                continue
            episode = self._ongoing.pop(stream, [])
            self._ongoing_rows.pop(stream, None)
            episode.append((flat, segment))
            self._finished.append(episode)
            self._finished_rows += sum(len(s) for _, s in episode)
        tail = rows[start:]
        if tail.size == 0 or (self._clean is not None and stream not in self._clean):
            return
        self._ongoing.setdefault(stream, []).append((flat, tail))
        length = self._ongoing_rows.get(stream, 0) + tail.size
        self._ongoing_rows[stream] = length
        if length > self.max_episode_rows:
            raise RuntimeError(
                f"batch_mode='complete_episodes': an episode of sub-env {stream} has run "
                f"{length:,} env steps without ending (the limit is {self.max_episode_rows:,}); "
                "an env whose episodes do not end (no time limit) cannot fill a batch of whole "
                "episodes. Give the env a time limit or use batch_mode='truncate_episodes'"
            )

    def take(self) -> Transition | None:
        """The finished episodes as one trajectory ``[P, 1]`` once they hold ``min_rows`` env
        steps (else None): the episodes one after another, ``env_id`` each one's number,
        padded with rows that are no transition (``env_id`` one past the last episode) to
        ``P = bucket_rows(rows, unit)``."""
        if self._finished_rows < self.min_rows or not self._finished:
            return None
        parts, ids = [], []
        for number, episode in enumerate(self._finished):
            for flat, segment in episode:
                parts.append(jax.tree.map(lambda x, s=segment: x[s], flat))
                ids.append(np.full(segment.size, number, np.int32))
        rows = self._finished_rows
        size = bucket_rows(rows, self.unit)
        joined = jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
        padded = jax.tree.map(
            lambda x: np.concatenate([x, np.zeros((size - rows, *x.shape[1:]), x.dtype)]), joined
        )
        env_id = np.concatenate([*ids, np.full(size - rows, len(self._finished), np.int32)])
        padded = padded._replace(
            env_id=env_id, valid=np.concatenate([np.ones(rows, bool), np.zeros(size - rows, bool)])
        )
        self._finished, self._finished_rows = [], 0
        return jax.tree.map(lambda x: x.reshape((size, 1, *x.shape[1:])), padded)


__all__ = ["EpisodeBuffer", "bucket_rows"]
