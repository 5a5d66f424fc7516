"""Whole episodes out of fixed-length fragments: RLlib's ``batch_mode="complete_episodes"``.

The runners sample fragments of ``rollout_fragment_length`` steps as always; ``EpisodeBuffer``
keeps each sub-env's episode in progress across fragments (on the host) and hands out a batch
once the episodes that ended hold at least ``min_rows`` env steps: every one of them, whole, one
after another in one trajectory ``[P, 1]``, padded with rows that are no transition (``valid``
False) up to a size of ``bucket_rows``, so the update compiles once per size bucket, not once
per batch. No episode is cut, so no value is bootstrapped at a fragment's end; a truncated
episode is bootstrapped from its last observation as on the other paths.

Episodes go on across fragments (the sub-envs are not reset for a batch), so a batch may hold
the first steps of an episode sampled with the weights of an earlier update: PPO's ratio uses
the log-probabilities, and GAE the values, recorded when each step was acted.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from rljax.runners.acting import Transition


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

    An episode is finished at its last row (terminated or truncated), whose ``episode_len``
    (the runner's count of the episode's transitions) says how many rows it has: where more
    rows were kept for the sub-env (a sub-env restarted, or its runner replaced, in the middle
    of an episode: the first rows belong to the broken one), only the last ``episode_len`` are
    the episode; where fewer (its first steps were sampled before a restored checkpoint), the
    episode is incomplete and dropped.

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
        self._ongoing: dict[int, list[Any]] = {}  # sub-env -> its rows so far, in pieces
        self._ongoing_rows: dict[int, int] = {}
        self._finished: list[list[Any]] = []
        self._finished_rows = 0
        self.num_dropped_rows = 0  # rows of incomplete episodes dropped

    @property
    def finished_rows(self) -> int:
        """Env steps of the finished episodes waiting for a batch."""
        return self._finished_rows

    @property
    def ongoing_rows(self) -> int:
        """Env steps of the episodes in progress."""
        return sum(self._ongoing_rows.values())

    def restart(self) -> None:
        """Forgets every episode (a restored checkpoint: the episodes finished since it belong
        to the run it replaces, and the rows of those in progress to another past). A sub-env
        restored in the middle of an episode then finishes it with fewer rows than its length:
        that episode is dropped."""
        self._ongoing.clear()
        self._ongoing_rows.clear()
        self._finished, self._finished_rows = [], 0

    def add(self, traj: Transition) -> None:
        """Takes a fragment ``[T, K]`` (host arrays): each sub-env's real transitions join its
        episode in progress, and the episodes that end in it are finished."""
        t_len, k = np.shape(traj.valid)
        flat = jax.tree.map(lambda x: np.asarray(x).reshape((t_len * k, *np.shape(x)[2:])), traj)
        valid = flat.valid.astype(bool)
        env_id = flat.env_id.astype(np.int64)
        time = np.repeat(np.arange(t_len), k)
        order = np.lexsort((time, env_id))
        order = order[valid[order]]
        if order.size == 0:
            return
        streams = env_id[order]
        starts = np.flatnonzero(np.concatenate([[True], streams[1:] != streams[:-1]]))
        for rows in np.split(order, starts[1:]):
            # The stream's rows alone: a kept piece holds no other sub-env's.
            self._add_stream(int(env_id[rows[0]]), jax.tree.map(lambda x, r=rows: x[r], flat))

    def _add_stream(self, stream: int, rows: Any) -> None:
        ends = np.flatnonzero(rows.terminated.astype(bool) | rows.truncated.astype(bool))
        start = 0
        for end in ends:
            piece = jax.tree.map(lambda x, a=start, b=end + 1: x[a:b], rows)
            start = end + 1
            pieces = [*self._ongoing.pop(stream, []), piece]
            self._ongoing_rows.pop(stream, None)
            kept = sum(_num_rows(p) for p in pieces)
            length = int(rows.episode_len[end])
            if kept < length:  # its first rows were never seen here
                self.num_dropped_rows += kept
                continue
            skip = kept - length
            episode = jax.tree.map(lambda *xs, a=skip: np.concatenate(xs)[a:], *pieces)
            self.num_dropped_rows += skip  # a restarted sub-env's broken episode
            self._finished.append(episode)
            self._finished_rows += length
        if start == _num_rows(rows):
            return
        tail = jax.tree.map(lambda x: x[start:], rows)
        self._ongoing.setdefault(stream, []).append(tail)
        count = self._ongoing_rows.get(stream, 0) + _num_rows(tail)
        self._ongoing_rows[stream] = count
        if count > self.max_episode_rows:
            raise RuntimeError(
                f"batch_mode='complete_episodes': an episode of sub-env {stream} has run "
                f"{count:,} env steps without ending (the limit is {self.max_episode_rows:,}); "
                "an env whose episodes do not end (no time limit) cannot fill a batch of whole "
                "episodes. Give the env a time limit or use batch_mode='truncate_episodes'"
            )

    def take(self) -> Transition | None:
        """The finished episodes as one trajectory ``[P, 1]`` once they hold ``min_rows`` env
        steps (else None): the episodes one after another, as one stream (``env_id`` 0; each
        episode ends terminated or truncated, where advantages stop as between the episodes of
        any sub-env), padded with rows that are no transition (``env_id`` 1) to ``P =
        bucket_rows(rows, unit)``."""
        if self._finished_rows < self.min_rows or not self._finished:
            return None
        rows = self._finished_rows
        size = bucket_rows(rows, self.unit)
        joined = jax.tree.map(lambda *xs: np.concatenate(xs), *self._finished)
        padded = jax.tree.map(
            lambda x: np.concatenate([x, np.zeros((size - rows, *x.shape[1:]), x.dtype)]), joined
        )
        real = np.arange(size) < rows
        padded = padded._replace(env_id=(~real).astype(np.int32), valid=real)
        self._finished, self._finished_rows = [], 0
        return jax.tree.map(lambda x: x.reshape((size, 1, *x.shape[1:])), padded)


def _num_rows(rows: Any) -> int:
    return int(np.shape(rows.valid)[0])


__all__ = ["EpisodeBuffer", "bucket_rows"]
