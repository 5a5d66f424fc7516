import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.replay import PrioritizedBufferState, make_prioritized_buffer
from rljax.replay.prioritized import importance_weights


def _fns(buffer, jit):
    if not jit:
        return buffer.add, buffer.sample, buffer.update_priorities
    return (
        jax.jit(buffer.add, donate_argnums=0),
        jax.jit(buffer.sample, static_argnums=2),
        jax.jit(buffer.update_priorities, donate_argnums=0),
    )


def _leaves(state, n):
    return np.asarray(state.sum_tree[state.sum_tree.shape[0] // 2 :][:n])


def _assert_trees_consistent(state):
    for tree, combine in ((state.sum_tree, np.add), (state.min_tree, np.minimum)):
        tree = np.asarray(tree)
        parents = np.arange(1, tree.shape[0] // 2)
        np.testing.assert_array_equal(
            tree[parents], combine(tree[2 * parents], tree[2 * parents + 1])
        )


@pytest.mark.parametrize("jit", [False, True])
def test_new_items_get_the_max_priority_and_updates_use_alpha(jit):
    buffer = make_prioritized_buffer({"x": np.float32(0)}, capacity=6, alpha=0.5, eps=0.0)
    add, _, update = _fns(buffer, jit)
    state = add(buffer.init(), {"x": jnp.arange(3.0)})
    assert isinstance(state, PrioritizedBufferState)
    np.testing.assert_array_equal(_leaves(state, 6), [1, 1, 1, 0, 0, 0])
    # p = |td| ** 0.5: td 4 -> 2, td -9 -> 3, td 0.25 -> 0.5.
    state = update(state, jnp.array([0, 1, 2]), jnp.array([4.0, -9.0, 0.25]))
    np.testing.assert_allclose(_leaves(state, 6), [2, 3, 0.5, 0, 0, 0], rtol=1e-6)
    assert float(state.max_priority) == pytest.approx(3.0)
    state = add(state, {"x": jnp.arange(2.0)})
    np.testing.assert_allclose(_leaves(state, 6), [2, 3, 0.5, 3, 3, 0], rtol=1e-6)
    assert float(state.sum_tree[1]) == pytest.approx(11.5)
    assert float(state.min_tree[1]) == pytest.approx(0.5)
    _assert_trees_consistent(state)


@pytest.mark.parametrize("jit", [False, True])
def test_repeated_indices_last_update_wins(jit):
    buffer = make_prioritized_buffer({"x": np.float32(0)}, capacity=4, alpha=1.0, eps=0.5)
    add, _, update = _fns(buffer, jit)
    state = add(buffer.init(), {"x": jnp.arange(4.0)})
    # Slot 1 gets td 3 then 1 (-> 1.5); slot 3 gets 7, -2, 0 (-> 0.5); slot 0 gets 2 (-> 2.5).
    state = update(state, jnp.array([1, 3, 0, 3, 1, 3]), jnp.array([3.0, 7.0, 2.0, -2.0, 1.0, 0.0]))
    np.testing.assert_allclose(_leaves(state, 4), [2.5, 1.5, 1.0, 0.5])
    assert float(state.sum_tree[1]) == 5.5
    assert float(state.min_tree[1]) == 0.5
    # The largest priority given so far counts every update, also the overwritten 7 + 0.5.
    assert float(state.max_priority) == 7.5
    _assert_trees_consistent(state)


def test_importance_weights_hand_computed():
    # p = [1, 2, 4, 8], N = 4, total 15: N * P(i) = [4, 8, 16, 32] / 15; with beta = 0.5,
    # (N P)^-beta / max = sqrt(4 / [4, 8, 16, 32]) = [1, 1/sqrt(2), 1/2, 1/(2 sqrt(2))].
    p = jnp.array([1.0, 2.0, 4.0, 8.0])
    expected = np.array([1.0, 2**-0.5, 0.5, 2**-1.5])
    np.testing.assert_allclose(importance_weights(p, 1.0, 0.5), expected, rtol=1e-6)
    np.testing.assert_allclose(
        importance_weights(jnp.array([8.0, 0.0]), 1.0, 0.5), [2**-1.5, 0.0], rtol=1e-6
    )
    n_p = 4 * np.array([1.0, 2, 4, 8]) / 15
    np.testing.assert_allclose(n_p**-0.5 / (n_p**-0.5).max(), expected, rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_stratified_sample_and_weights_hand_computed(jit):
    # alpha = 1, eps = 0: priorities [1, 2, 4, 8], total 15, so 15 strata are [i, i + 1) and the
    # prefix sums 1 | 3 | 7 | 15 fix every draw: slot 0 once, slot 1 twice, 2 four, 3 eight times.
    buffer = make_prioritized_buffer({"x": np.int32(0)}, capacity=4, alpha=1.0, beta=0.5, eps=0.0)
    add, sample, update = _fns(buffer, jit)
    state = add(buffer.init(), {"x": jnp.array([10, 11, 12, 13])})
    state = update(state, jnp.arange(4), jnp.array([1.0, 2.0, 4.0, 8.0]))
    batch, indices, weights = sample(state, jax.random.key(3), 15)
    np.testing.assert_array_equal(indices, [0, 1, 1, 2, 2, 2, 2] + [3] * 8)
    np.testing.assert_array_equal(batch["x"], 10 + np.asarray(indices))
    hand = np.array([1.0, 2**-0.5, 0.5, 2**-1.5])
    np.testing.assert_allclose(weights, hand[indices], rtol=1e-6)
    # beta given at the call (annealing) overrides the factory's: beta = 1 -> 1 / p.
    _, indices, weights = sample(state, jax.random.key(3), 15, 1.0)
    np.testing.assert_allclose(weights, 1.0 / np.array([1.0, 2, 4, 8])[indices], rtol=1e-6)


def test_sampling_never_returns_empty_slots():
    buffer = make_prioritized_buffer({"x": np.float32(0)}, capacity=10)
    state = buffer.add(buffer.init(), {"x": jnp.arange(3.0)})
    _, indices, weights = jax.jit(buffer.sample, static_argnums=2)(state, jax.random.key(0), 300)
    assert set(np.asarray(indices).tolist()) == {0, 1, 2}
    np.testing.assert_array_equal(weights, 1.0)


@pytest.mark.slow
def test_sampling_frequencies_match_priorities_chi_square():
    # 5 slots with priorities [0.7, 1.9, 3.3, 4.1, 10] (alpha = 1, total 20): 21,000 draws in
    # 3,000 stratified batches of 7 (strata of width 20/7, not aligned with the prefix sums
    # 0.7 | 2.6 | 5.9 | 10 | 20), fixed seed. Pearson's statistic with 4 degrees of freedom
    # exceeds 25 with probability 5e-5 under correct sampling (stratification only lowers it;
    # seeds 0-7 give 0.5 to 6.6). Uniform sampling would give about 22,700.
    priorities = np.array([0.7, 1.9, 3.3, 4.1, 10.0])
    buffer = make_prioritized_buffer({"x": np.float32(0)}, capacity=5, alpha=1.0, eps=0.0)
    state = buffer.add(buffer.init(), {"x": jnp.arange(5.0)})
    state = buffer.update_priorities(state, jnp.arange(5), jnp.asarray(priorities))
    keys = jax.random.split(jax.random.key(0), 3000)
    indices = jax.jit(jax.vmap(lambda k: buffer.sample(state, k, 7)[1]))(keys)
    counts = np.bincount(np.asarray(indices).ravel(), minlength=5)
    expected = counts.sum() * priorities / priorities.sum()
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 25.0, (counts, expected)
    uniform = np.full(5, counts.sum() / 5)
    assert ((uniform - expected) ** 2 / expected).sum() > 10_000


def test_ring_overwrite_gives_the_new_item_the_max_priority():
    buffer = make_prioritized_buffer({"x": np.float32(0)}, capacity=3, alpha=1.0, eps=0.0)
    state = buffer.add(buffer.init(), {"x": jnp.arange(3.0)})
    state = buffer.update_priorities(state, jnp.arange(3), jnp.array([0.5, 4.0, 0.25]))
    state = buffer.add(state, {"x": jnp.array([7.0])})  # overwrites slot 0
    np.testing.assert_array_equal(_leaves(state, 3), [4.0, 4.0, 0.25])
    np.testing.assert_array_equal(state.buffer.storage["x"], [7.0, 1.0, 2.0])
    assert float(state.min_tree[1]) == 0.25
    _assert_trees_consistent(state)
