"""The ordering and episode-cut step between sampling and any advantage estimator.

A runner's fragment is a ``Transition`` of [T, K]: T env steps of K results each, where a row's
sub-env (``env_id``) may differ from step to step (EnvPool ASYNC and first-ready gymnasium batches
report whichever sub-envs finished first) and some rows are no transitions at all (``valid``
False: the auto-reset step after an episode end, a multi-agent slot whose agent did not act, a
dropped runner's empty rows). An estimator that runs along time (GAE, V-trace, n-step returns)
needs each stream's transitions adjacent and in time order, and to know where a trajectory
stops: ``order_by_stream`` gives exactly that and nothing more. It knows no algorithm.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rljax.runners.acting import Transition


class StreamOrder(NamedTuple):
    """A fragment's rows ordered by (stream, time), flat.

    With N = T * K rows in all:

    Attributes:
      rows: The transitions; every leaf has leading shape [N]. Each stream's rows are contiguous,
        streams in increasing ``env_id``; within a stream the real transitions come first in time
        order, then its rows that are no transitions (in time order too).
      source: int32 [N], each ordered row's position in the fragment flattened row-major
        (``t * K + k``): ``rows = tree.map(lambda x: x.reshape(N, ...)[source], traj)``.
      valid: bool [N], the row is a real transition (``rows.valid``).
      stream_end: bool [N], the row is its stream's last one in the fragment.
      last_real: bool [N], the row is its stream's last real transition: the next row is another
        stream's or no transition.
      cut: bool [N], a trajectory ends after this row, so nothing may flow back across it (an
        advantage recursion, a trace): the episode was truncated here, or this is the last real
        transition or the last row of its stream. A terminated episode is not cut here; its
        ``rows.terminated`` zeroes the bootstrap value, as every estimator handles it.
    """

    rows: Transition
    source: jax.Array
    valid: jax.Array
    stream_end: jax.Array
    last_real: jax.Array
    cut: jax.Array


def order_by_stream(traj: Transition) -> StreamOrder:
    """Orders the rows of ``traj`` [T, K] by (stream, real before not, time) and marks the cuts.

    Pure and jittable; every shape is static. Uses ``traj.env_id`` (int [T, K], non-negative),
    ``traj.valid`` and ``traj.truncated`` (bool [T, K]); every other leaf is carried along.

    Args:
      traj: A fragment; every leaf has leading shape [T, K].

    Returns:
      ``StreamOrder`` with leading shape [T * K] on every array.
    """
    t_len, k = traj.valid.shape
    flat = jax.tree.map(lambda x: x.reshape((t_len * k, *x.shape[2:])), traj)
    time = jnp.repeat(jnp.arange(t_len, dtype=jnp.int32), k)
    invalid = (~flat.valid).astype(jnp.int32)
    source = jnp.argsort((flat.env_id * 2 + invalid) * t_len + time)
    rows = jax.tree.map(lambda x: x[source], flat)
    none = jnp.zeros((1,), bool)
    stream_end = ~jnp.concatenate([rows.env_id[1:] == rows.env_id[:-1], none])
    next_valid = jnp.concatenate([rows.valid[1:], none])
    last_real = rows.valid & (stream_end | ~next_valid)
    return StreamOrder(
        rows=rows,
        source=source,
        valid=rows.valid,
        stream_end=stream_end,
        last_real=last_real,
        cut=rows.truncated | stream_end | last_real,
    )


class TimeOrder(NamedTuple):
    """A lock-step fragment's rows by stream, each stream's rows in time order, rows that are
    no transition left in their place (``streams_in_time``).

    Attributes:
      rows: The transitions; every leaf has leading shape [K, T]: stream k's T rows.
      cut: bool [K, T], a trajectory ends after this row: the episode was truncated here, the
        row is no transition, or the next one is none (the episode ended here); the last row of
        every stream always is.
    """

    rows: Transition
    cut: jax.Array


def streams_in_time(traj: Transition) -> TimeOrder:
    """Orders a lock-step fragment ``traj`` [T, K] (every env step reports every one of its K
    sub-envs, columns in any order) by (stream, time), rows that are no transition included in
    place, as a recurrent policy saw them while acting. Pure and jittable."""
    t_len, k = traj.valid.shape
    flat = jax.tree.map(lambda x: x.reshape((t_len * k, *x.shape[2:])), traj)
    time = jnp.repeat(jnp.arange(t_len, dtype=jnp.int32), k)
    order = jnp.argsort(flat.env_id * t_len + time)
    rows = jax.tree.map(lambda x: x[order].reshape((k, t_len, *x.shape[1:])), flat)
    valid = rows.valid
    later_invalid = jnp.concatenate([~valid[:, 1:], jnp.ones((k, 1), bool)], axis=1)
    return TimeOrder(rows=rows, cut=rows.truncated | ~valid | later_invalid)


def to_time_major(x: Any, num_streams: int) -> Any:
    """[S * T, ...] in (stream, time) order -> [T, S, ...]: for lock-step fragments, where every
    one of ``num_streams`` streams has exactly T rows (each env step reports every sub-env)."""
    return jax.tree.map(lambda a: jnp.swapaxes(a.reshape((num_streams, -1, *a.shape[1:])), 0, 1), x)


def from_time_major(x: Any) -> Any:
    """[T, S, ...] -> [S * T, ...] in (stream, time) order: the inverse of ``to_time_major``."""
    return jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1).reshape((-1, *a.shape[2:])), x)


__all__ = [
    "StreamOrder",
    "TimeOrder",
    "from_time_major",
    "order_by_stream",
    "streams_in_time",
    "to_time_major",
]
