"""IMPALA's and APPO's losses against hand-computed values."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.impala.losses import (
    APPOLossConfig,
    VTraceBatch,
    VTraceLossConfig,
    appo_loss,
    impala_loss,
)
from rljax.networks.distributions import Categorical

DIST = Categorical(2)
LOG_HALF = math.log(0.5)

# One column of two steps, cut after the second; gamma 0.5, lambda 1. Behaviour and current
# policy both uniform over 2 actions (rho = 1), so V-trace gives n-step returns:
#   vs1 = 2 + .5 * V(s'_1) = 2 + .5 * 3 = 3.5; vs0 = 1 + .5 * vs1 = 2.75
#   A0 = 1 + .5 * vs1 - V0 = 2.25; A1 = 2 + .5 * 3 - V1 = 2.5
#   pi_loss = -mean(log .5 * A) = log 2 * 2.375 = 1.646224
#   vf_loss = .5 * mean((V - vs)^2) = .5 * ((.5 - 2.75)^2 + (1 - 3.5)^2) / 2 = 2.828125
#   entropy = log 2; total = pi + .5 vf - .01 entropy = 3.053355
VALUES = jnp.array([[0.5], [1.0]])
NEXT_VALUES = jnp.array([[1.0], [3.0]])
UNIFORM = jnp.zeros((2, 1, 2))
BATCH = VTraceBatch(
    action=jnp.array([[0], [1]]),
    behaviour_logp=jnp.full((2, 1), LOG_HALF),
    reward=jnp.array([[1.0], [2.0]]),
    terminated=jnp.zeros((2, 1), bool),
    truncated=jnp.array([[False], [True]]),
    mask=jnp.ones((2, 1)),
)
CFG = VTraceLossConfig(
    gamma=0.5,
    lambda_=1.0,
    vtrace_clip_rho_threshold=1.0,
    vtrace_clip_pg_rho_threshold=1.0,
    vf_loss_coeff=0.5,
    entropy_coeff=0.01,
)


@pytest.mark.parametrize("jit", [False, True])
def test_impala_loss_hand_computed(jit):
    fn = jax.jit(impala_loss, static_argnums=(4, 5)) if jit else impala_loss
    total, m = fn(UNIFORM, VALUES, NEXT_VALUES, BATCH, DIST, CFG)
    np.testing.assert_allclose(m["pi_loss"], math.log(2) * 2.375, rtol=1e-5)
    np.testing.assert_allclose(m["vf_loss"], 2.828125, rtol=1e-6)
    np.testing.assert_allclose(m["entropy"], math.log(2), rtol=1e-6)
    np.testing.assert_allclose(total, 1.6462244 + 1.4140625 - 0.01 * math.log(2), rtol=1e-5)
    np.testing.assert_allclose(m["mean_rho"], 1.0)
    np.testing.assert_allclose(m["mean_vs"], (2.75 + 3.5) / 2, rtol=1e-6)


def test_impala_gradients_treat_the_targets_as_constants():
    # d total / d V = vf_coeff * .5 * 2 (V - vs) / 2 rows = .25 (V - vs) = [-.5625, -.625]:
    # nothing flows through vs or the advantages.
    grad_v = jax.grad(lambda v: impala_loss(UNIFORM, v, NEXT_VALUES, BATCH, DIST, CFG)[0])(VALUES)
    np.testing.assert_allclose(grad_v, [[-0.5625], [-0.625]], rtol=1e-6)
    # d pi_loss / d logits = -A_t (onehot(a_t) - softmax) / 2 rows; entropy's gradient is 0 at
    # the uniform policy: row 0 (a=0, A=2.25): [-.5625, .5625]; row 1 (a=1, A=2.5): [.625, -.625].
    grad_logits = jax.grad(lambda x: impala_loss(x, VALUES, NEXT_VALUES, BATCH, DIST, CFG)[0])(
        UNIFORM
    )
    np.testing.assert_allclose(grad_logits[:, 0], [[-0.5625, 0.5625], [0.625, -0.625]], rtol=1e-5)


def test_a_masked_row_counts_nowhere():
    # Row 1 masked: every mean is over row 0 alone (its targets still bootstrap from row 1).
    batch = BATCH._replace(mask=jnp.array([[1.0], [0.0]]))
    _, m = impala_loss(UNIFORM, VALUES, NEXT_VALUES, batch, DIST, CFG)
    np.testing.assert_allclose(m["pi_loss"], math.log(2) * 2.25, rtol=1e-5)
    np.testing.assert_allclose(m["vf_loss"], 0.5 * 2.25**2, rtol=1e-6)


def _appo_cfg(use_kl_loss=False):
    return APPOLossConfig(CFG, clip_param=0.4, target_worker_clipping=2.0, use_kl_loss=use_kl_loss)


def _logits(p):
    """Logits of a 2-action policy with p(action 0) = p."""
    return math.log(p) - math.log(1 - p)


def test_appo_at_the_target_policy_is_the_plain_policy_gradient():
    # Current = target = behaviour: ratio 1, surrogate = A, pi_loss = -mean(A) = -2.375.
    total, m = appo_loss(
        UNIFORM, VALUES, NEXT_VALUES, UNIFORM, BATCH, DIST, jnp.float32(0.2), _appo_cfg(True)
    )
    np.testing.assert_allclose(m["pi_loss"], -2.375, rtol=1e-6)
    np.testing.assert_allclose(m["mean_kl_loss"], 0.0, atol=1e-7)
    np.testing.assert_allclose(total, -2.375 + 0.5 * 2.828125 - 0.01 * math.log(2), rtol=1e-5)


def test_appo_clips_the_ratio_to_the_target_policy():
    # The current policy gives each taken action probability .8 (target and behaviour .5):
    # ratio = .8 / .5 = 1.6 > 1 + .4, A > 0, so each row contributes 1.4 * A:
    # pi_loss = -1.4 * 2.375 = -3.325; all rows clipped. KL(target || current) per row =
    # .5 log(.5/.8) + .5 log(.5/.2) = .22314; with use_kl_loss it adds kl_coeff * KL.
    current = jnp.array([[[_logits(0.8), 0.0]], [[0.0, _logits(0.8)]]])
    total, m = appo_loss(
        current, VALUES, NEXT_VALUES, UNIFORM, BATCH, DIST, jnp.float32(0.5), _appo_cfg(True)
    )
    np.testing.assert_allclose(m["pi_loss"], -3.325, rtol=1e-5)
    np.testing.assert_allclose(m["clip_fraction"], 1.0)
    kl = 0.5 * math.log(0.5 / 0.8) + 0.5 * math.log(0.5 / 0.2)
    np.testing.assert_allclose(m["mean_kl_loss"], kl, rtol=1e-5)
    entropy = -(0.8 * math.log(0.8) + 0.2 * math.log(0.2))
    expected = -3.325 + 0.5 * 2.828125 - 0.01 * entropy + 0.5 * kl
    np.testing.assert_allclose(total, expected, rtol=1e-5)
    # The clipped surrogate has no gradient into the policy where it is clipped.
    grad = jax.grad(
        lambda x: appo_loss(
            x, VALUES, NEXT_VALUES, UNIFORM, BATCH, DIST, jnp.float32(0.0), _appo_cfg()
        )[1]["pi_loss"]
    )(current)
    np.testing.assert_allclose(grad, 0.0, atol=1e-7)


def test_appo_target_worker_clipping_bounds_the_behaviour_correction():
    # Behaviour p(a) = .9; target (= current) .5 in row 0, .3 in row 1. r = min(mu / pi_old, 2)
    # * pi / mu: row 0 min(1.8, 2) * .5 / .9 = 1; row 1 min(3, 2) * .3 / .9 = 2/3 (clipped at 2).
    # V-trace's rho = pi_old / mu = 5/9 and 1/3 (c alike), gamma .5:
    #   vs1 = 1 + 1/3 * (2 + .5 * 3 - 1) = 1.8333; A1 = 1/3 * 2.5 = .8333
    #   A0 = 5/9 * (1 + .5 * vs1 - .5) = .787037
    #   pi_loss = -(1 * A0 + 2/3 * A1) / 2 = -.671296 (without the clip at 2: -.810185)
    behaviour = jnp.full((2, 1), math.log(0.9))
    batch = BATCH._replace(behaviour_logp=behaviour)
    old = jnp.array([[[_logits(0.5), 0.0]], [[0.0, _logits(0.3)]]])
    _, m = appo_loss(old, VALUES, NEXT_VALUES, old, batch, DIST, jnp.float32(0.0), _appo_cfg())
    np.testing.assert_allclose(m["pi_loss"], -(0.787037 + 2 / 3 * 0.833333) / 2, rtol=1e-5)
    np.testing.assert_allclose(m["mean_rho"], (5 / 9 + 1 / 3) / 2, rtol=1e-5)
    np.testing.assert_allclose(m["clip_fraction"], 0.0)
