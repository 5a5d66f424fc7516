import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.sac.losses import (
    actor_loss,
    auto_target_entropy,
    critic_loss,
    discrete_actor_loss,
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


def test_discrete_actor_loss_is_the_expectation_over_actions_by_hand():
    # Two states, two actions. State 0: pi = (0.25, 0.75), min Q = (1, 2); state 1: pi = (0.5,
    # 0.5), min Q = (0, 4); alpha 0.5.
    # sum_a pi (alpha log pi - Q): state 0: .25 (.5 ln .25 - 1) + .75 (.5 ln .75 - 2);
    # state 1: .5 (.5 ln .5 - 0) + .5 (.5 ln .5 - 4).
    logp = jnp.log(jnp.array([[0.25, 0.75], [0.5, 0.5]]))
    q_min = jnp.array([[1.0, 2.0], [0.0, 4.0]])
    loss, expected_logp = discrete_actor_loss(q_min, logp, jnp.float32(0.5))
    s0 = 0.25 * (0.5 * math.log(0.25) - 1) + 0.75 * (0.5 * math.log(0.75) - 2)
    s1 = 0.5 * (0.5 * math.log(0.5)) + 0.5 * (0.5 * math.log(0.5) - 4)
    np.testing.assert_allclose(loss, (s0 + s1) / 2, rtol=1e-6)
    np.testing.assert_allclose(
        expected_logp,
        [0.25 * math.log(0.25) + 0.75 * math.log(0.75), math.log(0.5)],
        rtol=1e-6,
    )
    # The gradient reaches the policy only: none flows into Q or alpha.
    g_q, g_alpha = jax.grad(lambda q, a: discrete_actor_loss(q, logp, a)[0], argnums=(0, 1))(
        q_min, jnp.float32(0.5)
    )
    assert float(jnp.abs(g_q).sum()) == 0.0 and float(g_alpha) == 0.0


def test_discrete_sac_learn_step_by_hand():
    """One SAC-Discrete step with networks that ignore the observation (the actor's logits and
    the critics' table are parameters), the critics' rate 0 so that the actor's loss sees them
    unchanged: every loss against numbers computed here."""
    import flax.linen as nn

    from rljax.algorithms.sac.learner import (
        SACHyperparams,
        SACLearnerState,
        SACNetworks,
        make_sac_learn,
        make_sac_optimizers,
    )
    from rljax.networks.distributions import Categorical

    logits = np.log(np.array([0.25, 0.75], np.float32))
    table = np.array([[1.0, 2.0], [1.5, 1.0]], np.float32)  # [critic, action]
    target = np.array([[0.0, 3.0], [1.0, 2.0]], np.float32)

    class Actor(nn.Module):
        @nn.compact
        def __call__(self, obs):
            w = self.param("logits", lambda k: jnp.asarray(logits))
            return jnp.broadcast_to(w, (obs.shape[0], 2))

    class Critic(nn.Module):
        @nn.compact
        def __call__(self, obs):
            q = self.param("q", lambda k: jnp.asarray(table))
            return jnp.broadcast_to(q[:, None, :], (2, obs.shape[0], 2))

    hp = SACHyperparams(-1.0, 0.005, 0.5, 1e-3, 0.0, 1e-3, None)
    actor, critic = Actor(), Critic()
    obs = jnp.zeros((2, 3))
    a_params = actor.init(jax.random.PRNGKey(0), obs)
    c_params = critic.init(jax.random.PRNGKey(0), obs)
    t_params = {"params": {"q": jnp.asarray(target)}}
    opts = make_sac_optimizers(hp)
    log_alpha = jnp.log(jnp.float32(0.5))
    state = SACLearnerState(
        a_params,
        c_params,
        t_params,
        log_alpha,
        opts.actor.init(a_params),
        opts.critic.init(c_params),
        opts.alpha.init(log_alpha),
    )
    learn = make_sac_learn(SACNetworks(actor, critic, Categorical(2)), opts, hp)
    batch = {
        "obs": obs,
        "action": jnp.array([0, 1]),
        "reward": jnp.array([1.0, 0.0]),
        "discount": jnp.array([0.9, 0.0]),
        "next_obs": obs,
    }
    new, td, m = learn(state, batch, jnp.ones(2), jax.random.PRNGKey(1))
    p = np.array([0.25, 0.75])
    lp = np.log(p)
    # Soft value at s': sum_a p (min(target critics) - alpha log p); min target = (0, 2).
    v_next = float(np.sum(p * (np.array([0.0, 2.0]) - 0.5 * lp)))
    y = np.array([1.0 + 0.9 * v_next, 0.0])
    q1, q2 = np.array([1.0, 2.0]), np.array([1.5, 1.0])  # the stored actions 0 and 1
    qf_loss = 0.5 * np.mean((q1 - y) ** 2) + 0.5 * np.mean((q2 - y) ** 2)
    np.testing.assert_allclose(m["qf_loss"], qf_loss, rtol=1e-5)
    np.testing.assert_allclose(td, 0.5 * (np.abs(q1 - y) + np.abs(q2 - y)), rtol=1e-5)
    # Actor: against min(critics) = (1, 1), unchanged by the critics' zero rate.
    pi_loss = float(np.sum(p * (0.5 * lp - np.array([1.0, 1.0]))))
    np.testing.assert_allclose(m["policy_loss"], pi_loss, rtol=1e-5)
    # Temperature: -log_alpha * (sum p log p + target_entropy).
    expected = float(np.sum(p * lp))
    np.testing.assert_allclose(m["alpha_loss"], -math.log(0.5) * (expected - 1.0), rtol=1e-5)
    np.testing.assert_allclose(m["entropy"], -expected, rtol=1e-5)
    np.testing.assert_array_equal(new.critic["params"]["q"], table)
    assert not np.allclose(new.actor["params"]["logits"], logits)
