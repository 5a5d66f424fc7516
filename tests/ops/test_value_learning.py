import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.ops.value_learning import (
    categorical_projection,
    double_q_bootstrap,
    dueling_q,
    n_step_targets,
    td_loss,
)

# gamma 0.5, n 3. Steps: 0 1 2 3 4 5; step 2 is truncated (bootstrap from V(final)=8), step 4
# terminates; the sequence ends after step 5.
R = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
NV = np.array([10.0, 20.0, 8.0, 40.0, 50.0, 60.0], np.float32)
TERM = np.array([0, 0, 0, 0, 1, 0], bool)
TRUNC = np.array([0, 0, 1, 0, 0, 0], bool)
# t=0: 1 + .5*2 + .25*3 + .125*8 = 3.75   (window 0..2 ends at the truncation)
# t=1: 2 + .5*3 + .25*8 = 5.5             (window 1..2)
# t=2: 3 + .5*8 = 7                       (window 2..2)
# t=3: 4 + .5*5 = 6.5                     (window 3..4, terminated: no bootstrap)
# t=4: 5                                  (terminated)
# t=5: 6 + .5*60 = 36                     (sequence end)
EXPECTED = np.array([3.75, 5.5, 7.0, 6.5, 5.0, 36.0], np.float32)
EXPECTED_STEPS = np.array([3, 2, 1, 2, 1, 1])


@pytest.mark.parametrize("jit", [False, True])
def test_n_step_targets_hand_computed(jit):
    fn = jax.jit(n_step_targets, static_argnums=(4, 5)) if jit else n_step_targets
    targets, steps = fn(R, NV, TERM, TRUNC, 0.5, 3)
    np.testing.assert_allclose(targets, EXPECTED, rtol=1e-6)
    np.testing.assert_array_equal(steps, EXPECTED_STEPS)


def test_one_step_is_the_plain_td_target():
    targets, steps = n_step_targets(R, NV, TERM, TRUNC, 0.9, 1)
    np.testing.assert_allclose(targets, R + 0.9 * np.where(TERM, 0, NV), rtol=1e-6)
    np.testing.assert_array_equal(steps, 1)


def test_double_q_uses_online_argmax_and_target_values():
    online = jnp.array([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]])
    target = jnp.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    np.testing.assert_allclose(double_q_bootstrap(online, target), [20.0, 40.0])


def test_dueling_aggregation():
    q = dueling_q(jnp.array([1.0, -2.0]), jnp.array([[1.0, 2.0, 3.0], [0.0, 0.0, 3.0]]))
    np.testing.assert_allclose(q, [[0.0, 1.0, 2.0], [-3.0, -3.0, 0.0]])


def test_td_losses_and_weights():
    q = jnp.array([1.0, 0.0, 3.0])
    t = jnp.array([0.5, 2.0, 3.0])
    # td = [0.5, -2, 0]; huber: [.125, 2 - .5 = 1.5, 0]; mse: [.125, 2, 0]
    loss, td = td_loss(q, t, "huber")
    assert float(loss) == pytest.approx((0.125 + 1.5) / 3)
    np.testing.assert_allclose(td, [0.5, -2.0, 0.0])
    loss, _ = td_loss(q, t, "mse", weights=jnp.array([2.0, 0.5, 1.0]))
    assert float(loss) == pytest.approx((0.25 + 1.0) / 3)
    grad = jax.grad(lambda t: td_loss(q, t)[0])(t)  # no gradient flows into the targets
    np.testing.assert_array_equal(grad, 0.0)
    with pytest.raises(ValueError, match="td_error_loss_fn"):
        td_loss(q, t, "l1")


def test_categorical_projection_hand_computed():
    support = jnp.array([-1.0, 0.0, 1.0])
    probs = jnp.array([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])
    rewards = jnp.array([0.5, 0.0, 0.25])
    discounts = jnp.array([0.5, 0.0, 1.0])
    out = np.asarray(categorical_projection(probs, rewards, discounts, support))
    # Row 0: atoms move to 0.5 + 0.5 z = [0, 0.5, 1]: 0.2 -> the atom at 0; 0.3 split 0.15/0.15
    # between the atoms at 0 and 1; 0.5 -> the atom at 1. Row 1: terminal, all mass at r = 0. Row 2: [-0.75, 0.25,
    # 1.25 -> clipped to 1]: 0.2 -> 0.75 at -1, 0.25 at 0; 0.3 -> 0.75 at 0, 0.25 at 1; 0.5 at 1.
    np.testing.assert_allclose(out[0], [0.0, 0.35, 0.65], atol=1e-6)
    np.testing.assert_allclose(out[1], [0.0, 1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(out[2], [0.15, 0.05 + 0.225, 0.075 + 0.5], atol=1e-6)
    np.testing.assert_allclose(out.sum(1), 1.0, atol=1e-6)
