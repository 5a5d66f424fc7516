"""Sum and min trees stored as flat arrays, for O(log N) proportional sampling.

A tree over ``P`` leaves (``P`` a power of two, the capacity rounded up) is an array of shape
``[2P]``: node 1 is the root, node ``i`` has children ``2i`` and ``2i + 1``, leaf ``j`` is node
``P + j``, and node 0 is unused. A sum tree starts at zeros, a min tree at ``+inf`` (each
operation's identity), so leaves past the capacity never change a result.

Leaf writes recompute every touched parent from its two children, level by level, instead of
adding deltas along the path: the internal nodes stay exactly ``combine(left, right)`` of the
current leaves (up to the rounding of that one operation), with no drift over millions of updates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp


def num_leaves(capacity: int) -> int:
    """``P``: the capacity rounded up to a power of two (at least 1)."""
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    return 1 << (capacity - 1).bit_length()


def init_tree(capacity: int, fill: float = 0.0, dtype=jnp.float32) -> jax.Array:
    """A tree over ``num_leaves(capacity)`` leaves with every node equal to ``fill``.

    Args:
      capacity: The number of leaves needed.
      fill: The identity of the tree's operation: 0 for a sum tree, ``inf`` for a min tree.
      dtype: The dtype of the nodes.

    Returns:
      A tensor of shape [2P].
    """
    return jnp.full((2 * num_leaves(capacity),), fill, dtype)


def _depth(tree: jax.Array) -> int:
    return (tree.shape[0] // 2).bit_length() - 1


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


def set_leaves(
    tree: chex.Array,
    indices: chex.Array,
    values: chex.Array,
    combine: Callable[[jax.Array, jax.Array], jax.Array] = jnp.add,
    mask: chex.Array | None = None,
) -> jax.Array:
    """Sets many leaves at once and recomputes their ancestors.

    Where ``indices`` repeats, the last write wins (as if the writes were applied in order): XLA's
    scatter leaves the winner of duplicate indices unspecified, so the earlier duplicates are
    dropped explicitly. Parents are then recomputed level by level as ``combine(left, right)``;
    duplicate parents all receive the same value, so their order does not matter either.

    Args:
      tree: A tensor of shape [2P] (see the module docstring).
      indices: An int tensor of shape [M], leaf indices in [0, P).
      values: A tensor of shape [M], the new leaf values.
      combine: ``jnp.add`` for a sum tree, ``jnp.minimum`` for a min tree.
      mask: An optional bool tensor of shape [M]; entries where it is False are not written
        (a static shape for "set some of these leaves", without reading the old values).

    Returns:
      The updated tree, shape [2P].
    """
    chex.assert_rank(tree, 1)
    chex.assert_rank([indices, values], 1)
    chex.assert_equal_shape([indices, values])
    num = tree.shape[0] // 2
    nodes = indices.astype(jnp.int32) + num
    if mask is None:
        write = last_write_mask(indices)
    else:
        # Masked-out entries get distinct negative stand-ins, so they shadow no real write.
        stand_in = -1 - jnp.arange(indices.shape[0], dtype=indices.dtype)
        write = mask & last_write_mask(jnp.where(mask, indices, stand_in))
    # Out-of-bounds targets are dropped by the scatter: that is how skipped entries are skipped.
    targets = jnp.where(write, nodes, tree.shape[0])
    tree = tree.at[targets].set(values.astype(tree.dtype), mode="drop")
    level = _LEVEL_UPDATES.get(combine) or _make_level_update(combine)
    tree, _ = jax.lax.fori_loop(0, _depth(tree), level, (tree, nodes))
    return tree


def _make_level_update(combine):
    def level(_, carry):
        tree, nodes = carry
        nodes = nodes // 2
        return tree.at[nodes].set(combine(tree[2 * nodes], tree[2 * nodes + 1])), nodes

    return level


# Loop bodies defined once, so that un-jitted calls reuse the traced loop instead of retracing it.
_LEVEL_UPDATES: dict[Callable[..., Any], Callable[..., Any]] = {
    jnp.add: _make_level_update(jnp.add),
    jnp.minimum: _make_level_update(jnp.minimum),
}


def get_leaves(tree: chex.Array, indices: chex.Array) -> jax.Array:
    """The values of leaves ``indices`` (any shape) of a [2P] tree."""
    return tree[indices + tree.shape[0] // 2]


def root(tree: chex.Array) -> jax.Array:
    """The root: the total of a sum tree, the minimum of a min tree. A scalar."""
    return tree[1]


def find_prefix_sum(tree: chex.Array, targets: chex.Array) -> jax.Array:
    """Inverse CDF of a sum tree: for each target ``u`` the leaf ``i`` with
    ``sum(p[:i]) <= u < sum(p[:i + 1])``.

    One ``lax.fori_loop`` over the depth descends for the whole batch at once: O(log P) per target.
    Leaves holding 0 are never returned while the total is positive, even where float rounding
    lets ``u`` reach the total of a subtree: the descent only enters a child with a positive sum.

    Args:
      tree: A sum tree, a float tensor of shape [2P].
      targets: A float tensor of shape [B], values in [0, total).

    Returns:
      An int32 tensor of shape [B], leaf indices in [0, P). Meaningless when the total is 0.
    """
    chex.assert_rank(tree, 1)
    chex.assert_rank(targets, 1)

    start = jnp.ones(targets.shape, jnp.int32)
    carry = (tree, start, targets.astype(tree.dtype))
    _, nodes, _ = jax.lax.fori_loop(0, _depth(tree), _descend, carry)
    return nodes - tree.shape[0] // 2


def _descend(_, carry):
    tree, nodes, u = carry
    left = tree[2 * nodes]
    right = tree[2 * nodes + 1]
    go_right = jnp.where(left > 0, (u >= left) & (right > 0), True)
    return tree, 2 * nodes + go_right, jnp.where(go_right, u - left, u)
