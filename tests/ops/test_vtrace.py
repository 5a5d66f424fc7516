import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.ops.gae import gae_advantages
from rljax.ops.vtrace import vtrace

# Three steps cut after the last (a fragment's end), gamma 0.9, lambda 1, every threshold 1;
# behaviour/target ratios rho = [2, 0.5, 1] -> clipped [1, 0.5, 1], c = [1, 0.5, 1]:
#   delta = [1 * (1 + .9 * 1 - .5), .5 * (2 + .9 * 2 - 1), 1 * (3 + .9 * 4 - 2)] = [1.4, 1.4, 4.6]
#   v - V: t2 = 4.6; t1 = 1.4 + .9 * .5 * 4.6 = 3.47; t0 = 1.4 + .9 * 1 * 3.47 = 4.523
#   vs = V + (v - V) = [5.023, 4.47, 6.6]
#   v' = [vs1, vs2, V(s'_2)] = [4.47, 6.6, 4.0]; q = r + .9 v' = [5.023, 7.94, 6.6]
#   A = min(1, rho) * (q - V) = [4.523, .5 * 6.94, 4.6] = [4.523, 3.47, 4.6]
LOG_RHOS = np.log(np.array([2.0, 0.5, 1.0], np.float32))
REWARDS = np.array([1.0, 2.0, 3.0], np.float32)
VALUES = np.array([0.5, 1.0, 2.0], np.float32)
NEXT_VALUES = np.array([1.0, 2.0, 4.0], np.float32)
NOT = np.zeros(3, bool)
LAST = np.array([False, False, True])


def _call(fn, *args, **kw):
    arrays = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    return fn(*arrays, **kw)


@pytest.mark.parametrize("jit", [False, True])
def test_vtrace_hand_computed(jit):
    fn = jax.jit(vtrace, static_argnums=(6,)) if jit else vtrace
    out = _call(fn, LOG_RHOS, REWARDS, VALUES, NEXT_VALUES, NOT, LAST, 0.9)
    np.testing.assert_allclose(out.vs, [5.023, 4.47, 6.6], rtol=1e-5)
    np.testing.assert_allclose(out.pg_advantages, [4.523, 3.47, 4.6], rtol=1e-5)
    np.testing.assert_allclose(out.clipped_rhos, [1.0, 0.5, 1.0], rtol=1e-6)


def test_termination_drops_the_next_value_and_truncation_bootstraps_it():
    # gamma .5, rho 1: step 0 terminates (its next value 100 must not count), step 1 is cut by a
    # time limit and bootstraps V(s'_1) = 8, step 2 is its own sequence.
    r, v = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 1.0])
    nv = np.array([100.0, 8.0, 2.0])
    term, trunc = np.array([True, False, False]), np.array([False, True, False])
    out = _call(vtrace, np.zeros(3), r, v, nv, term, trunc, 0.5)
    #   vs0 = r0 = 1; vs1 = 2 + .5 * 8 = 6; vs2 = 3 + .5 * 2 = 4; A = vs - V (on policy).
    np.testing.assert_allclose(out.vs, [1.0, 6.0, 4.0])
    np.testing.assert_allclose(out.pg_advantages, [1.0, 5.0, 3.0])


def test_on_policy_vtrace_is_gae_with_the_same_lambda():
    rng = np.random.default_rng(0)
    t = 12
    r, v, nv = (rng.normal(size=t).astype(np.float32) for _ in range(3))
    nv[:-1] = v[1:]  # a trajectory: the next observation's value is the next step's
    term = rng.uniform(size=t) < 0.15
    trunc = (rng.uniform(size=t) < 0.15) & ~term
    trunc[-1] = True
    for s in np.nonzero(term | trunc)[0][:-1]:
        nv[s] = rng.normal()  # after an end the next row starts another episode
    out = _call(vtrace, np.zeros(t), r, v, nv, term, trunc, 0.97, lambda_=0.9)
    adv, targets = _call(gae_advantages, r, v, nv, term, trunc, 0.97, 0.9)
    np.testing.assert_allclose(out.vs, targets, rtol=1e-5, atol=1e-5)
    # lambda < 1: the pg advantage is the one-step TD error on the V-trace target, not GAE's.
    next_vs = np.where(trunc, nv, np.append(np.asarray(out.vs)[1:], 0.0))
    q = r + 0.97 * (1 - term) * next_vs
    np.testing.assert_allclose(out.pg_advantages, q - v, rtol=1e-5, atol=1e-5)


def _paper_sum(log_rhos, r, v, nv, gamma, rho_bar, c_bar, pg_bar):
    """The paper's definition written plainly for one uncut, unterminated sequence:
    v_s = V(x_s) + sum_{t>=s} gamma^(t-s) (prod_{i=s}^{t-1} c_i) delta_t V."""
    rhos = np.exp(log_rhos)
    t = len(r)
    values_next = np.append(v[1:], nv[-1])
    deltas = np.minimum(rho_bar, rhos) * (r + gamma * values_next - v)
    cs = np.minimum(c_bar, rhos)
    vs = np.zeros(t)
    for s in range(t):
        total, trace = 0.0, 1.0
        for u in range(s, t):
            total += gamma ** (u - s) * trace * deltas[u]
            trace *= cs[u]
        vs[s] = v[s] + total
    vs_next = np.append(vs[1:], nv[-1])
    adv = np.minimum(pg_bar, rhos) * (r + gamma * vs_next - v)
    return vs, adv


@pytest.mark.parametrize("thresholds", [(1.0, 1.0, 1.0), (0.7, 1.3, 2.0)])
def test_matches_the_papers_sum_over_a_batch(thresholds):
    rho_bar, pg_bar, c_bar = thresholds
    rng = np.random.default_rng(1)
    t, b = 7, 5
    log_rhos = rng.normal(scale=0.8, size=(t, b))
    r, v = rng.normal(size=(t, b)), rng.normal(size=(t, b))
    nv = np.concatenate([v[1:], rng.normal(size=(1, b))])
    last = np.zeros((t, b), bool)
    last[-1] = True
    out = jax.jit(vtrace, static_argnums=(6,))(
        *(jnp.asarray(x, jnp.float32) for x in (log_rhos, r, v, nv)),
        jnp.zeros((t, b), bool),
        jnp.asarray(last),
        0.95,
        clip_rho_threshold=rho_bar,
        clip_pg_rho_threshold=pg_bar,
        clip_c_threshold=c_bar,
    )
    for j in range(b):
        column = (log_rhos[:, j], r[:, j], v[:, j], nv[:, j])
        vs, adv = _paper_sum(*column, 0.95, rho_bar, c_bar, pg_bar)
        np.testing.assert_allclose(out.vs[:, j], vs, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(out.pg_advantages[:, j], adv, rtol=1e-4, atol=1e-5)


def test_no_gradient_flows_through_the_targets():
    def loss(values):
        out = vtrace(
            jnp.zeros(3),
            jnp.asarray(REWARDS),
            values,
            jnp.asarray(NEXT_VALUES),
            jnp.asarray(NOT),
            jnp.asarray(LAST),
            0.9,
        )
        return jnp.sum(out.vs) + jnp.sum(out.pg_advantages)

    np.testing.assert_array_equal(jax.grad(loss)(jnp.asarray(VALUES)), 0.0)
