"""Proportional prioritized replay (Schaul et al., 2016, "Prioritized Experience Replay").

Slot ``i`` holds priority ``p_i = (|delta_i| + eps) ** alpha`` and is sampled with probability
``P(i) = p_i / sum_j p_j``. The priorities are the leaves of a sum tree (``rljax.replay.sum_tree``)
over ``P`` leaves, the capacity rounded up to a power of two, so a sample costs O(log N):

* sampling is stratified: the total is cut into ``batch_size`` equal segments and one target is
  drawn uniformly in each, then every target descends the tree at once;
* a new item gets the largest priority given so far (1 at the start), so it is replayed soon;
* the importance weights ``w_i = (N * P(i)) ** -beta / max_j w_j`` are exact: a min tree over the
  same leaves gives ``min_j p_j``, and since ``w_i / max_j w_j = (min_j p_j / p_i) ** beta``
  (N and the total cancel), no approximation by the batch's own maximum is needed;
* updating many priorities at once is well defined when indices repeat: the last write wins,
  as if the updates were applied one after another (``sum_tree.set_leaves``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import chex
import flax.struct
import jax
import jax.numpy as jnp

from rljax.replay import sum_tree, uniform
from rljax.replay.base import PrioritizedReplayBuffer, item_spec


@flax.struct.dataclass
class PrioritizedBufferState:
    """A ring buffer with priorities.

    Attributes:
      buffer: The items, a ``UniformBufferState`` (storage [capacity, ...], insert_pos, size).
      sum_tree: A float32 tensor of shape [2P]: the sum tree of the priorities ``p_i`` (already
        raised to ``alpha``); empty slots hold 0.
      min_tree: A float32 tensor of shape [2P]: the min tree of the same leaves; empty slots
        hold ``+inf``.
      max_priority: A float32 scalar, the largest ``p_i`` given so far (1 at the start).
    """

    buffer: uniform.UniformBufferState
    sum_tree: jax.Array
    min_tree: jax.Array
    max_priority: jax.Array


def priorities_from_td(td_errors: chex.Array, alpha: float, eps: float) -> jax.Array:
    """``(|td_errors| + eps) ** alpha`` in float32, without gradient. Any shape."""
    td = jax.lax.stop_gradient(jnp.asarray(td_errors, jnp.float32))
    return (jnp.abs(td) + eps) ** alpha


def stratified_targets(key: jax.Array, total: jax.Array, batch_size: int) -> jax.Array:
    """One uniform draw in each of ``batch_size`` equal segments of ``[0, total)``.

    Returns:
      A float32 tensor of shape [batch_size], increasing.
    """
    u = jax.random.uniform(key, (batch_size,), jnp.float32)
    return (jnp.arange(batch_size, dtype=jnp.float32) + u) * (total / batch_size)


def importance_weights(
    priorities: chex.Array, min_priority: chex.Array, beta: float | jax.Array
) -> jax.Array:
    """``(N * P(i)) ** -beta / max_j (N * P(j)) ** -beta``, computed as ``(p_min / p_i) ** beta``.

    Args:
      priorities: A float tensor of shape [B], the sampled ``p_i``.
      min_priority: A float scalar, the smallest priority in the buffer.
      beta: The importance-sampling exponent (a float or a traced scalar).

    Returns:
      A float32 tensor of shape [B] in (0, 1]; 0 where ``p_i`` is 0 (an empty buffer).
    """
    chex.assert_rank(priorities, 1)
    safe = jnp.where(priorities > 0, priorities, 1.0)
    return jnp.where(priorities > 0, (min_priority / safe) ** beta, 0.0).astype(jnp.float32)


def make_prioritized_buffer(
    example_item: Any,
    capacity: int,
    alpha: float = 0.6,
    beta: float = 0.4,
    eps: float = 1e-6,
) -> PrioritizedReplayBuffer:
    """A proportional prioritized replay buffer for items shaped like ``example_item``.

    Args:
      example_item: One item (no batch dimension), as in ``make_uniform_buffer``.
      capacity: The number of items kept; the oldest are overwritten first.
      alpha: The priority exponent (0 gives uniform sampling).
      beta: The default importance-sampling exponent (usually annealed to 1 by the caller, who
        passes ``beta`` to ``sample``).
      eps: Added to ``|td_error|`` so that no stored item has probability 0.

    Returns:
      ``PrioritizedReplayBuffer(init, add, sample, update_priorities)``:

      * ``init() -> PrioritizedBufferState``.
      * ``add(state, batch) -> state``: as ``make_uniform_buffer``'s ``add``; the new items get
        priority ``state.max_priority``.
      * ``sample(state, key, batch_size, beta=None) -> (batch, indices, weights)``: ``indices``
        int32 [batch_size], ``batch`` the items there, ``weights`` float32 [batch_size]
        importance weights (``beta`` defaults to the factory's). ``batch_size`` is static.
      * ``update_priorities(state, indices, td_errors) -> state``: ``indices`` int32 [M] from
        ``sample``, ``td_errors`` float [M]; sets ``p = (|td_error| + eps) ** alpha``; where an
        index repeats, the last one wins. ``max_priority`` becomes the largest ``p`` given.
        An index whose slot was overwritten since it was sampled updates the new item.
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    spec = item_spec(example_item)
    default_beta = beta  # ``sample``'s own ``beta`` argument shadows the factory's.

    def init() -> PrioritizedBufferState:
        return PrioritizedBufferState(
            buffer=uniform.UniformBufferState(
                storage=uniform.init_storage(spec, capacity),
                insert_pos=jnp.zeros((), jnp.int32),
                size=jnp.zeros((), jnp.int32),
            ),
            sum_tree=sum_tree.init_tree(capacity, 0.0),
            min_tree=sum_tree.init_tree(capacity, jnp.inf),
            max_priority=jnp.ones((), jnp.float32),
        )

    def set_priorities(state, indices, priorities):
        return dataclasses.replace(
            state,
            sum_tree=sum_tree.set_leaves(state.sum_tree, indices, priorities, jnp.add),
            min_tree=sum_tree.set_leaves(state.min_tree, indices, priorities, jnp.minimum),
        )

    def add(state: PrioritizedBufferState, batch: Any) -> PrioritizedBufferState:
        buffer, slots = uniform.write(spec, capacity, state.buffer, batch)
        priorities = jnp.broadcast_to(state.max_priority, slots.shape)
        return set_priorities(dataclasses.replace(state, buffer=buffer), slots, priorities)

    def sample(
        state: PrioritizedBufferState,
        key: jax.Array,
        batch_size: int,
        beta: float | jax.Array | None = None,
    ) -> tuple[Any, jax.Array, jax.Array]:
        targets = stratified_targets(key, sum_tree.root(state.sum_tree), batch_size)
        # Clipped so that an empty buffer (total 0) still gathers in bounds.
        indices = jnp.minimum(sum_tree.find_prefix_sum(state.sum_tree, targets), capacity - 1)
        weights = importance_weights(
            sum_tree.get_leaves(state.sum_tree, indices),
            sum_tree.root(state.min_tree),
            default_beta if beta is None else beta,
        )
        return uniform.gather(state.buffer.storage, indices), indices, weights

    def update_priorities(
        state: PrioritizedBufferState, indices: chex.Array, td_errors: chex.Array
    ) -> PrioritizedBufferState:
        chex.assert_rank([indices, td_errors], 1)
        chex.assert_equal_shape([indices, td_errors])
        priorities = priorities_from_td(td_errors, alpha, eps)
        state = set_priorities(state, indices, priorities)
        return dataclasses.replace(
            state, max_priority=jnp.maximum(state.max_priority, priorities.max())
        )

    return PrioritizedReplayBuffer(
        init=init, add=add, sample=sample, update_priorities=update_priorities
    )
