import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.replay import sum_tree

# Leaves [1, 2, 3, 4] over P = 4: node 1 = 10, nodes 2, 3 = 1 + 2, 3 + 4, leaves at nodes 4..7.
LEAVES = jnp.array([1.0, 2.0, 3.0, 4.0])
TREE = np.array([0.0, 10.0, 3.0, 7.0, 1.0, 2.0, 3.0, 4.0], np.float32)
# Prefix sums 0 | 1 | 3 | 6 | 10: a target u falls in leaf i when sum(p[:i]) <= u < sum(p[:i+1]).
TARGETS = np.array([0.0, 0.99, 1.0, 2.99, 3.0, 5.99, 6.0, 9.99], np.float32)
EXPECTED_LEAVES = np.array([0, 0, 1, 1, 2, 2, 3, 3])


def _tree(leaves, combine=jnp.add, fill=0.0):
    tree = sum_tree.init_tree(len(leaves), fill)
    return sum_tree.set_leaves(tree, jnp.arange(len(leaves)), jnp.asarray(leaves), combine)


def _assert_internal_nodes_exact(tree, combine=np.add):
    tree = np.asarray(tree)
    num = tree.shape[0] // 2
    parents = np.arange(1, num)
    np.testing.assert_array_equal(tree[parents], combine(tree[2 * parents], tree[2 * parents + 1]))


@pytest.mark.parametrize("capacity, leaves", [(1, 1), (4, 4), (5, 8), (1000, 1024)])
def test_num_leaves_rounds_up_to_a_power_of_two(capacity, leaves):
    assert sum_tree.num_leaves(capacity) == leaves
    assert sum_tree.init_tree(capacity).shape == (2 * leaves,)


@pytest.mark.parametrize("jit", [False, True])
def test_sums_and_prefix_descent_hand_computed(jit):
    set_leaves = jax.jit(sum_tree.set_leaves, static_argnums=3) if jit else sum_tree.set_leaves
    find = jax.jit(sum_tree.find_prefix_sum) if jit else sum_tree.find_prefix_sum
    tree = set_leaves(sum_tree.init_tree(4), jnp.arange(4), LEAVES, jnp.add)
    np.testing.assert_array_equal(tree, TREE)
    assert sum_tree.root(tree) == 10.0
    np.testing.assert_array_equal(find(tree, jnp.asarray(TARGETS)), EXPECTED_LEAVES)
    np.testing.assert_array_equal(sum_tree.get_leaves(tree, jnp.array([3, 0])), [4.0, 1.0])


def test_descent_skips_zero_leaves_even_at_the_total():
    # Leaves [0, 2, 0, 4]: prefix sums 0 | 0 | 2 | 2 | 6. The target 6.0 equals the total (a
    # stratified draw can round up to it); it must still land on a positive leaf.
    tree = _tree([0.0, 2.0, 0.0, 4.0])
    targets = jnp.array([0.0, 1.99, 2.0, 5.99, 6.0])
    np.testing.assert_array_equal(sum_tree.find_prefix_sum(tree, targets), [1, 1, 3, 3, 3])
    # Only the first leaf is positive: everything lands there, including u == total.
    tree = _tree([1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(sum_tree.find_prefix_sum(tree, jnp.array([0.5, 1.0])), [0, 0])


def test_capacity_not_a_power_of_two_pads_with_the_identity():
    tree = _tree([1.0, 2.0, 3.0, 4.0, 5.0])  # P = 8, leaves 5..7 stay 0
    assert tree.shape == (16,)
    assert sum_tree.root(tree) == 15.0
    np.testing.assert_array_equal(sum_tree.find_prefix_sum(tree, jnp.array([14.5])), [4])
    min_tree = _tree([3.0, 2.0, 5.0, 4.0, 6.0], jnp.minimum, jnp.inf)
    assert sum_tree.root(min_tree) == 2.0
    _assert_internal_nodes_exact(min_tree, np.minimum)


def test_last_write_mask():
    mask = sum_tree.last_write_mask(jnp.array([3, 1, 3, 2, 1, 3]))
    np.testing.assert_array_equal(mask, [False, False, False, True, True, True])


@pytest.mark.parametrize("jit", [False, True])
def test_repeated_indices_last_write_wins(jit):
    set_leaves = jax.jit(sum_tree.set_leaves, static_argnums=3) if jit else sum_tree.set_leaves
    tree = jnp.asarray(TREE)
    # Leaf 0: 5 then 0 -> 0. Leaf 2: 6 then 7 -> 7. Leaves [0, 2, 7, 4]: nodes 2, 3 = 2, 11.
    tree = set_leaves(tree, jnp.array([0, 2, 0, 2]), jnp.array([5.0, 6.0, 0.0, 7.0]), jnp.add)
    np.testing.assert_array_equal(tree, [0.0, 13.0, 2.0, 11.0, 0.0, 2.0, 7.0, 4.0])
    min_tree = _tree([1.0, 2.0, 3.0, 4.0], jnp.minimum, jnp.inf)
    min_tree = set_leaves(min_tree, jnp.array([0, 0, 3]), jnp.array([0.5, 9.0, 0.25]), jnp.minimum)
    np.testing.assert_array_equal(min_tree, [np.inf, 0.25, 2.0, 0.25, 9.0, 2.0, 3.0, 0.25])


def test_many_batched_updates_keep_every_parent_exact():
    # Recomputing parents (instead of adding deltas) leaves every internal node equal to the
    # float32 sum of its children, however many updates came before.
    capacity, batch = 1000, 64
    rng = np.random.default_rng(0)
    indices = rng.integers(0, capacity, size=(40, batch))
    values = rng.exponential(size=(40, batch)).astype(np.float32) * 10.0 ** rng.integers(
        -3, 4, size=(40, batch)
    )

    @jax.jit
    def run(tree, indices, values):
        def body(tree, xs):
            return sum_tree.set_leaves(tree, *xs), None

        return jax.lax.scan(body, tree, (indices, values))[0]

    tree = run(sum_tree.init_tree(capacity), indices, values)
    _assert_internal_nodes_exact(tree)
    expected = np.zeros(capacity, np.float32)
    for i, v in zip(indices.ravel(), values.ravel(), strict=True):
        expected[i] = v  # in order: the last write wins
    np.testing.assert_array_equal(sum_tree.get_leaves(tree, jnp.arange(capacity)), expected)
    np.testing.assert_allclose(sum_tree.root(tree), expected.astype(np.float64).sum(), rtol=1e-5)


def test_masked_entries_are_not_written_and_do_not_shadow_writes():
    # Leaf 1: 5 (masked out, skipped) then 6 -> 6; leaf 2: 7 then 9 (masked out) -> 7;
    # leaf 3 only masked out -> stays 4. Leaves [1, 6, 7, 4].
    tree = sum_tree.set_leaves(
        jnp.asarray(TREE),
        jnp.array([1, 1, 2, 2, 3]),
        jnp.array([5.0, 6.0, 7.0, 9.0, 0.0]),
        jnp.add,
        jnp.array([False, True, True, False, False]),
    )
    np.testing.assert_array_equal(tree, [0.0, 18.0, 7.0, 11.0, 1.0, 6.0, 7.0, 4.0])
