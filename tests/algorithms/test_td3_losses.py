"""TD3's losses and noise, against hand-computed values, jitted and not."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.td3.losses import (
    actor_loss,
    clipped_double_q_target,
    critic_loss,
    smoothed_target_action,
)
from rljax.algorithms.td3.networks import gaussian_exploration


@pytest.mark.parametrize("jit", [False, True])
def test_clipped_double_q_target_takes_the_lower_critic(jit):
    fn = jax.jit(clipped_double_q_target) if jit else clipped_double_q_target
    reward = jnp.array([1.0, 0.0, -2.0])
    discount = jnp.array([0.9, 0.0, 0.5])  # the second one terminated
    next_q = jnp.array([[2.0, 7.0, 4.0], [3.0, -5.0, -6.0]])
    # min over critics: [2, -5, -6]; y = r + d * min = [1 + 1.8, 0 + 0, -2 - 3]
    np.testing.assert_allclose(fn(reward, discount, next_q), [2.8, 0.0, -5.0], rtol=1e-6)
    # One critic (twin_q=False): its own value, no minimum.
    np.testing.assert_allclose(fn(reward, discount, next_q[:1]), [2.8, 0.0, 0.0], rtol=1e-6)


def test_target_is_not_differentiated():
    grad = jax.grad(lambda nq: jnp.sum(clipped_double_q_target(jnp.ones(2), jnp.ones(2), nq)))
    np.testing.assert_array_equal(grad(jnp.zeros((2, 2))), 0.0)


@pytest.mark.parametrize("jit", [False, True])
def test_critic_loss_hand_computed(jit):
    fn = jax.jit(critic_loss) if jit else critic_loss
    q = jnp.array([[3.0, 1.0], [4.0, -1.0]])  # [critic, batch]
    target = jnp.array([3.25, 0.0])
    # Q1 - y = [-0.25, 1], Q2 - y = [0.75, -1]
    loss, td = fn(q, target)
    expected = 0.5 * np.mean([0.0625, 1.0]) + 0.5 * np.mean([0.5625, 1.0])  # 0.65625
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(td, [0.5, 1.0], rtol=1e-6)  # mean of |0.25|, |0.75|; of 1, 1
    # Importance weights [2, 0]: only the first row counts, twice.
    loss_w, td_w = fn(q, target, jnp.array([2.0, 0.0]))
    assert float(loss_w) == pytest.approx(0.5 * (2 * 0.0625 / 2) + 0.5 * (2 * 0.5625 / 2))
    np.testing.assert_allclose(td_w, td)  # priorities do not depend on the weights


def test_critic_loss_gradient_pulls_each_critic_to_the_target():
    q = jnp.array([[3.0, 1.0], [4.0, -1.0]])
    grad = jax.grad(lambda q: critic_loss(q, jnp.array([3.25, 0.0]))[0])(q)
    # d/dQ_i,b of 0.5 * mean_b (Q_i,b - y_b)^2 = (Q_i,b - y_b) / B
    np.testing.assert_allclose(grad, [[-0.125, 0.5], [0.375, -0.5]], rtol=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_actor_loss_is_minus_the_first_critic(jit):
    fn = jax.jit(actor_loss) if jit else actor_loss
    assert float(fn(jnp.array([1.0, 3.0]))) == pytest.approx(-2.0)
    np.testing.assert_allclose(jax.grad(fn)(jnp.array([1.0, 3.0])), [-0.5, -0.5])


def test_deterministic_policy_gradient_through_a_known_critic():
    # Actor a = tanh(w), critic Q(a) = -(a - 0.3)^2: dL/dw = 2 (a - 0.3) (1 - a^2).
    def loss(w):
        a = jnp.tanh(w)
        return actor_loss(-((a - 0.3) ** 2))

    w = jnp.array([0.5, -1.0])
    a = np.tanh(np.array([0.5, -1.0]))
    expected = 2 * (a - 0.3) * (1 - a**2) / 2  # the mean over the batch of 2
    np.testing.assert_allclose(jax.grad(loss)(w), expected, rtol=1e-5)


@pytest.mark.parametrize("jit", [False, True])
def test_target_smoothing_noise_is_clipped_then_the_action(jit):
    fn = jax.jit(smoothed_target_action, static_argnums=(2, 3)) if jit else smoothed_target_action
    key = jax.random.PRNGKey(3)
    action = jnp.array([[0.0, 0.8, -0.9], [0.2, -0.2, 0.95]])
    # Noise far beyond the clip: every entry moves by exactly +-0.5, then is clipped to [-1, 1].
    sign = np.sign(np.asarray(jax.random.normal(key, action.shape)))
    expected = np.clip(np.asarray(action) + 0.5 * sign, -1.0, 1.0)
    np.testing.assert_allclose(fn(key, action, 1e3, 0.5), expected, rtol=1e-6)
    # No noise (smooth_target_policy=False) or a zero clip: the target actor's action itself.
    np.testing.assert_array_equal(fn(key, action, 0.0, 0.5), action)
    np.testing.assert_array_equal(fn(key, action, 0.2, 0.0), action)


def test_target_smoothing_noise_has_its_standard_deviation():
    out = smoothed_target_action(jax.random.PRNGKey(0), jnp.zeros((20000, 1)), 0.2, 0.5)
    # N(0, 0.2) clipped at 2.5 sigma: the std shrinks only to 0.2 * 0.9887 = 0.1977.
    assert float(jnp.std(out)) == pytest.approx(0.1977, abs=0.003)
    assert float(jnp.max(jnp.abs(out))) <= 0.5


def test_gaussian_exploration_noise_bounds_and_uniform_start():
    key = jax.random.PRNGKey(1)
    mean = jnp.full((20000, 1), 0.5)
    noisy = gaussian_exploration(key, mean, 0.1, jnp.asarray(False))
    assert float(jnp.mean(noisy)) == pytest.approx(0.5, abs=0.005)
    assert float(jnp.std(noisy)) == pytest.approx(0.1, abs=0.005)
    edge = gaussian_exploration(key, jnp.full((1000, 1), 0.99), 0.1, jnp.asarray(False))
    assert float(jnp.max(edge)) == 1.0  # clipped to the bound, never beyond
    np.testing.assert_array_equal(gaussian_exploration(key, mean, 0.0, jnp.asarray(False)), mean)
    uniform = np.asarray(gaussian_exploration(key, mean, 0.1, jnp.asarray(True)))
    assert uniform.min() >= -1.0 and uniform.max() <= 1.0
    # Uniform on [-1, 1]: mean 0, std 1/sqrt(3); independent of the actor's action.
    assert abs(uniform.mean()) < 0.02 and uniform.std() == pytest.approx(3**-0.5, abs=0.01)
