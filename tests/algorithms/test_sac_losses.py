import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.sac.losses import (
    actor_loss,
    auto_target_entropy,
    critic_loss,
    temperature_loss,
)
from rljax.networks.distributions import SquashedDiagGaussian


@pytest.mark.parametrize("jit", [False, True])
def test_critic_loss_hand_computed(jit):
    fn = jax.jit(critic_loss) if jit else critic_loss
    # y = r + d * (q' - alpha * logp') = [1 + .9 * (2 - .5 * -1), 0 + 0 * (...)] = [3.25, 0]
    loss, td = fn(
        jnp.array([3.0, 1.0]),  # q1
        jnp.array([4.0, -1.0]),  # q2
        jnp.array([1.0, 0.0]),  # reward
        jnp.array([0.9, 0.0]),  # discount (second one terminated)
        jnp.array([2.0, 7.0]),  # min target Q at s'
        jnp.array([-1.0, 5.0]),  # log pi(a'|s')
        jnp.float32(0.5),
    )
    # q1 - y = [-.25, 1], q2 - y = [.75, -1]
    expected = 0.5 * np.mean([0.0625, 1.0]) + 0.5 * np.mean([0.5625, 1.0])
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(td, [0.5, 1.0], rtol=1e-6)


def test_critic_target_is_not_differentiated():
    g = jax.grad(
        lambda nq: critic_loss(
            jnp.ones(2), jnp.ones(2), jnp.ones(2), jnp.ones(2), nq, jnp.zeros(2), 0.1
        )[0]
    )
    np.testing.assert_array_equal(g(jnp.zeros(2)), 0.0)


def test_actor_and_temperature_losses():
    q_min = jnp.array([1.0, 3.0])
    logp = jnp.array([-2.0, 0.0])
    assert float(actor_loss(q_min, logp, jnp.float32(0.5))) == pytest.approx(
        ((-1 - 1) + (0 - 3)) / 2
    )
    # target entropy -1: -(log_alpha * mean(logp + target)) = -(0.2 * (-3 + -1) / 2) = 0.4
    assert float(temperature_loss(jnp.float32(0.2), logp, -1.0)) == pytest.approx(0.4)
    # d/dlog_alpha = -mean(logp + target) = 2 > 0: gradient descent lowers alpha when entropy is
    # high (logp low) -- and the gradient does not reach logp.
    assert float(jax.grad(temperature_loss)(jnp.float32(0.2), logp, -1.0)) == pytest.approx(2.0)
    np.testing.assert_array_equal(jax.grad(temperature_loss, argnums=1)(0.2, logp, -1.0), 0.0)
    assert auto_target_entropy(3) == -3.0


def test_squashed_gaussian_log_prob_matches_change_of_variables():
    d = SquashedDiagGaussian(1)
    inputs = jnp.array([[0.3, math.log(0.5)]])
    a, logp = d.sample_and_log_prob(jax.random.PRNGKey(0), inputs)
    u = math.atanh(float(a[0, 0]))
    normal = -0.5 * ((u - 0.3) / 0.5) ** 2 - math.log(0.5) - 0.5 * math.log(2 * math.pi)
    expected = normal - math.log(1 - math.tanh(u) ** 2)
    assert float(logp[0]) == pytest.approx(expected, rel=1e-4)
    assert float(d.mode(inputs)[0, 0]) == pytest.approx(math.tanh(0.3))
    samples, _ = d.sample_and_log_prob(jax.random.PRNGKey(1), jnp.repeat(inputs, 5000, axis=0))
    assert float(jnp.abs(samples).max()) < 1.0
