"""Hand-computed values of the prioritization helpers the episode and frame-stack buffers share."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.replay.priorities import importance_weights, priorities_from_td, stratified_targets


def test_priorities_from_td_hand_computed():
    # (|td| + eps) ** alpha with alpha 0.5, eps 0: 4 -> 2, -9 -> 3, 0.25 -> 0.5.
    p = priorities_from_td(jnp.array([4.0, -9.0, 0.25]), 0.5, 0.0)
    np.testing.assert_allclose(p, [2.0, 3.0, 0.5], rtol=1e-6)
    # eps keeps a zero error sampleable: (0 + 0.5) ** 1 = 0.5.
    np.testing.assert_allclose(priorities_from_td(jnp.array([0.0, -1.0]), 1.0, 0.5), [0.5, 1.5])
    assert p.dtype == jnp.float32
    # No gradient flows into the TD errors through their priorities.
    grad = jax.grad(lambda td: priorities_from_td(td, 1.0, 0.0).sum())(jnp.array([2.0]))
    np.testing.assert_array_equal(grad, [0.0])


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
def test_stratified_targets_one_draw_per_segment(jit):
    fn = jax.jit(stratified_targets, static_argnums=2) if jit else stratified_targets
    targets = np.asarray(fn(jax.random.key(3), jnp.float32(15.0), 5))
    # Segment i of [0, 15) cut in 5 is [3 i, 3 i + 3): exactly one target in each, increasing.
    np.testing.assert_array_equal(np.floor(targets / 3.0), np.arange(5))
    assert np.all(np.diff(targets) > 0)
    u = np.asarray(jax.random.uniform(jax.random.key(3), (5,), jnp.float32))
    np.testing.assert_allclose(targets, (np.arange(5) + u) * 3.0, rtol=1e-6)
