"""Wide (k-ary) sum and min trees with one array per level, for O(log N) proportional sampling.

``init_tree``, ``set_leaves``, ``get_leaves`` and ``find_prefix_sum`` (the root is ``total`` or
``minimum``), laid out for speed on CPUs and GPUs:

* Each node has ``K = 16`` children, so 65,536 leaves need 4 levels instead of 16, and a 1M-slot
  buffer 5. Descending or updating is a short, unrolled chain of gathers over ``[B, K]`` blocks:
  no loop, whose per-iteration cost dominates a binary tree's work on XLA's CPU backend.
* The tree is a tuple of arrays, leaves first: level ``d`` has ``n_d`` nodes (a multiple of
  ``K``), node ``i`` of level ``d`` is the parent of nodes ``K i .. K i + K - 1`` of level
  ``d - 1``, and the last level has exactly ``K`` nodes, whose reduction is the root. Separate
  arrays let each level be updated in place.
* Padding nodes hold the operation's identity (0 for sums, ``+inf`` for minima), so they never
  change a result, and capacity is rounded up to a multiple of ``K`` per level, not to a power.

Every level is recomputed from its children (no deltas), so the sums never drift.
"""

from __future__ import annotations

from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp

K = 16

Tree = tuple[jax.Array, ...]


def last_write_mask(indices: chex.Array) -> jax.Array:
    """Marks, for each index, whether no later entry of ``indices`` holds the same value.

    Args:
      indices: An int tensor of shape [M].

    Returns:
      A bool tensor of shape [M]: True at the last occurrence of each distinct index.
    """
    chex.assert_rank(indices, 1)
    # A stable sort keeps equal indices in their original order, so the last of each run of
    # equal sorted values is the last write. O(M log M), where a pairwise mask would be O(M^2).
    order = jnp.argsort(indices, stable=True)
    ordered = indices[order]
    last_in_run = jnp.concatenate([ordered[1:] != ordered[:-1], jnp.ones((1,), bool)])
    return jnp.zeros(indices.shape, bool).at[order].set(last_in_run)


def level_sizes(capacity: int) -> tuple[int, ...]:
    """Node counts per level, leaves first, each a multiple of ``K``; the last is ``K``."""
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    sizes = [-(-capacity // K) * K]
    while sizes[-1] > K:
        sizes.append(-(-(sizes[-1] // K) // K) * K)
    return tuple(sizes)


def num_nodes(capacity: int) -> int:
    """All nodes of a tree over ``capacity`` leaves (for memory accounting)."""
    return sum(level_sizes(capacity))


def init_tree(capacity: int, fill: float = 0.0, dtype=jnp.float32) -> Tree:
    """A tree over ``capacity`` leaves with every node equal to ``fill`` (the identity)."""
    return tuple(jnp.full((n,), fill, dtype) for n in level_sizes(capacity))


def _reduce(combine: Callable, x: jax.Array) -> jax.Array:
    return jnp.sum(x, axis=-1) if combine is jnp.add else jnp.min(x, axis=-1)


def set_leaves(
    tree: Tree,
    indices: chex.Array,
    values: chex.Array,
    combine: Callable[[jax.Array, jax.Array], jax.Array] = jnp.add,
    mask: chex.Array | None = None,
) -> Tree:
    """Sets many leaves at once and recomputes their ancestors.

    Where ``indices`` repeats, the last write wins (as if the writes were applied one after
    another), and entries whose ``mask`` is False are not written. ``combine`` is ``jnp.add`` or ``jnp.minimum``.
    """
    chex.assert_rank([indices, values], 1)
    chex.assert_equal_shape([indices, values])
    if combine not in (jnp.add, jnp.minimum):
        raise ValueError("combine must be jnp.add or jnp.minimum")
    indices = indices.astype(jnp.int32)
    if mask is None:
        write = last_write_mask(indices)
    else:
        stand_in = -1 - jnp.arange(indices.shape[0], dtype=indices.dtype)
        write = mask & last_write_mask(jnp.where(mask, indices, stand_in))
    leaves = tree[0]
    targets = jnp.where(write, indices, leaves.shape[0])  # out of bounds: dropped
    levels = [leaves.at[targets].set(values.astype(leaves.dtype), mode="drop")]
    nodes = indices
    for level in tree[1:]:
        nodes = nodes // K
        children = levels[-1].reshape(-1, K)[nodes]
        levels.append(level.at[nodes].set(_reduce(combine, children)))
    return tuple(levels)


def get_leaves(tree: Tree, indices: chex.Array) -> jax.Array:
    """The values of leaves ``indices`` (any shape)."""
    return tree[0][indices]


def total(tree: Tree) -> jax.Array:
    """The root of a sum tree: the sum of all leaves."""
    return jnp.sum(tree[-1])


def minimum(tree: Tree) -> jax.Array:
    """The root of a min tree: the smallest leaf."""
    return jnp.min(tree[-1])


def find_prefix_sum(tree: Tree, targets: chex.Array) -> jax.Array:
    """Inverse CDF: for each target ``u`` the leaf ``i`` with ``sum(p[:i]) <= u < sum(p[:i+1])``.

    Leaves holding 0 are never returned while the total is positive, even where float rounding
    lets ``u`` reach a block's total: the descent only enters a child with a positive sum.

    Args:
      tree: A sum tree from ``init_tree``.
      targets: A float tensor of shape [B], values in [0, total).

    Returns:
      An int32 tensor of shape [B], leaf indices. Meaningless when the total is 0.
    """
    chex.assert_rank(targets, 1)
    u = targets.astype(tree[0].dtype)
    nodes = jnp.zeros(targets.shape, jnp.int32)
    lanes = jnp.arange(K, dtype=jnp.int32)
    for level in reversed(tree):
        children = level.reshape(-1, K)[nodes]  # [B, K]
        cums = jnp.cumsum(children, axis=-1)
        j = jnp.minimum(jnp.sum(cums <= u[:, None], axis=-1), K - 1).astype(jnp.int32)
        chosen = jnp.take_along_axis(children, j[:, None], axis=-1)[:, 0]
        # Rounding can point at an empty child: take the last non-empty one before it instead.
        last_positive = jnp.max(jnp.where((children > 0) & (lanes <= j[:, None]), lanes, -1), -1)
        j = jnp.where(chosen > 0, j, jnp.maximum(last_positive, 0))
        before = jnp.take_along_axis(cums - children, j[:, None], axis=-1)[:, 0]
        u = jnp.maximum(u - before, 0.0)
        nodes = nodes * K + j
    return nodes


def set_live_priorities(
    sum_tree: Tree, min_tree: Tree, indices: chex.Array, priorities: chex.Array
) -> tuple[Tree, Tree, jax.Array]:
    """Sets priorities only where a slot can still be sampled (its sum-tree leaf is positive).

    Returns the two trees and the bool [M] mask of the entries written.
    """
    live = get_leaves(sum_tree, indices) > 0
    return (
        set_leaves(sum_tree, indices, priorities, jnp.add, live),
        set_leaves(min_tree, indices, priorities, jnp.minimum, live),
        live,
    )
