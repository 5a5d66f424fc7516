import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.ops.gae import gae_advantages, gae_advantages_time_major

# One sequence holding a truncation (t=1, bootstrapped from the final observation's value 5.0)
# and a termination (t=3, not bootstrapped). gamma=0.9, lambda=0.8, so gamma*lambda=0.72:
#   delta = [1 + .9*1 - .5, 2 + .9*5 - 1, 3 + .9*1.5 - 2, 4 - 1.5] = [1.4, 5.5, 2.35, 2.5]
#   A3 = 2.5; A2 = 2.35 + .72*2.5 = 4.15; A1 = 5.5 (cut); A0 = 1.4 + .72*5.5 = 5.36
REWARDS = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
VALUES = np.array([0.5, 1.0, 2.0, 1.5], np.float32)
NEXT_VALUES = np.array([1.0, 5.0, 1.5, 9.0], np.float32)
TERMINATED = np.array([False, False, False, True])
TRUNCATED = np.array([False, True, False, False])
EXPECTED_ADV = np.array([5.36, 5.5, 4.15, 2.5], np.float32)


@pytest.mark.parametrize("jit", [False, True])
def test_gae_hand_computed(jit):
    fn = jax.jit(gae_advantages, static_argnums=(5, 6)) if jit else gae_advantages
    adv, targets = fn(REWARDS, VALUES, NEXT_VALUES, TERMINATED, TRUNCATED, 0.9, 0.8)
    np.testing.assert_allclose(adv, EXPECTED_ADV, rtol=1e-6)
    np.testing.assert_allclose(targets, EXPECTED_ADV + VALUES, rtol=1e-6)


def test_terminal_next_value_is_ignored():
    other = NEXT_VALUES.copy()
    other[3] = -123.0
    a, _ = gae_advantages(REWARDS, VALUES, NEXT_VALUES, TERMINATED, TRUNCATED, 0.9, 0.8)
    b, _ = gae_advantages(REWARDS, VALUES, other, TERMINATED, TRUNCATED, 0.9, 0.8)
    np.testing.assert_array_equal(a, b)


def _reference(r, v, nv, term, trunc, gamma, lam):
    adv = np.zeros_like(r)
    last = 0.0
    for t in reversed(range(len(r))):
        delta = r[t] + gamma * (1 - term[t]) * nv[t] - v[t]
        last = delta + gamma * lam * (1 - term[t]) * (1 - trunc[t]) * last
        adv[t] = last
    return adv


def test_gae_matches_sequential_loop_on_random_data():
    rng = np.random.default_rng(0)
    n = 257
    r, v, nv = (rng.normal(size=n).astype(np.float32) for _ in range(3))
    term = rng.random(n) < 0.05
    trunc = (rng.random(n) < 0.05) & ~term
    adv, _ = jax.jit(gae_advantages, static_argnums=(5, 6))(r, v, nv, term, trunc, 0.99, 0.95)
    np.testing.assert_allclose(
        adv, _reference(r, v, nv, term, trunc, 0.99, 0.95), rtol=1e-4, atol=1e-4
    )


def test_time_major_batches_columns_independently():
    cols = [
        (REWARDS, VALUES, NEXT_VALUES, TERMINATED, TRUNCATED),
        (REWARDS[::-1], VALUES, NEXT_VALUES, np.zeros(4, bool), np.zeros(4, bool)),
    ]
    stacked = [jnp.stack([c[i] for c in cols], axis=1) for i in range(5)]
    adv, _ = gae_advantages_time_major(*stacked, 0.9, 0.8)
    assert adv.shape == (4, 2)
    np.testing.assert_allclose(adv[:, 0], EXPECTED_ADV, rtol=1e-6)
    np.testing.assert_allclose(
        adv[:, 1], _reference(*[np.asarray(x) for x in cols[1]], 0.9, 0.8), rtol=1e-5
    )


def test_shape_mismatch_is_rejected():
    with pytest.raises(AssertionError):
        gae_advantages(REWARDS, VALUES[:3], NEXT_VALUES, TERMINATED, TRUNCATED, 0.9, 0.8)
