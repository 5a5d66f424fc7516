"""The wide tree agrees with numpy, including its edge cases."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.replay import kary_tree


@pytest.mark.parametrize(
    "capacity, sizes",
    [
        (1, (16,)),
        (16, (16,)),
        (17, (32, 16)),
        (300, (304, 32, 16)),
        (65536, (65536, 4096, 256, 16)),
    ],
)
def test_level_sizes(capacity, sizes):
    assert kary_tree.level_sizes(capacity) == sizes


def test_sums_minima_and_descent_match_numpy():
    rng = np.random.default_rng(0)
    capacity = 1000
    values = rng.uniform(0.1, 2.0, capacity).astype(np.float32)
    values[rng.choice(capacity, 300, replace=False)] = 0.0  # empty slots are skipped
    idx = jnp.arange(capacity)
    s = kary_tree.set_leaves(kary_tree.init_tree(capacity), idx, jnp.asarray(values))
    m = kary_tree.set_leaves(
        kary_tree.init_tree(capacity, jnp.inf),
        idx,
        jnp.where(values > 0, values, jnp.inf),
        jnp.minimum,
    )
    np.testing.assert_allclose(kary_tree.total(s), values.sum(), rtol=1e-5)
    assert float(kary_tree.minimum(m)) == values[values > 0].min()
    cdf = np.cumsum(values, dtype=np.float64)
    u = rng.uniform(0, values.sum(), 4096).astype(np.float32)
    got = np.asarray(jax.jit(kary_tree.find_prefix_sum)(s, jnp.asarray(u)))
    expected = np.searchsorted(cdf, u, side="right")
    # Equal except where float32 rounding puts u on a boundary; never an empty leaf.
    assert np.mean(got == expected) > 0.999
    assert np.all(values[got] > 0)
    # At (and past) the total, the descent still lands on the last non-empty leaf.
    top = kary_tree.find_prefix_sum(s, jnp.asarray([values.sum() * 1.0001], jnp.float32))
    assert int(top[0]) == np.nonzero(values)[0][-1]


def test_last_write_mask():
    mask = kary_tree.last_write_mask(jnp.array([3, 1, 3, 2, 1, 3]))
    np.testing.assert_array_equal(mask, [False, False, False, True, True, True])


def test_agrees_with_numpy_under_repeated_masked_updates():
    capacity = 200
    rng = np.random.default_rng(1)
    wide, leaves = kary_tree.init_tree(capacity), np.zeros(capacity, np.float32)
    set_wide = jax.jit(kary_tree.set_leaves, static_argnums=3)
    for _ in range(50):
        idx = rng.integers(0, capacity, 32)  # repeats: last write wins
        val = rng.uniform(0, 1, 32).astype(np.float32)
        mask = rng.uniform(size=32) < 0.8
        wide = set_wide(
            wide, jnp.asarray(idx, jnp.int32), jnp.asarray(val), jnp.add, jnp.asarray(mask)
        )
        for i, v, m in zip(idx, val, mask, strict=True):  # one write after another
            if m:
                leaves[i] = v
    np.testing.assert_array_equal(np.asarray(wide[0][:capacity]), leaves)
    np.testing.assert_allclose(kary_tree.total(wide), leaves.sum(dtype=np.float64), rtol=1e-5)
    # Every internal node is the sum of its children up to rounding (recomputed, no drift).
    for lower, upper in zip(wide[:-1], wide[1:], strict=True):
        np.testing.assert_allclose(
            np.asarray(lower).reshape(-1, 16).sum(1), upper[: lower.shape[0] // 16], rtol=1e-5
        )
