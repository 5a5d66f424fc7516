import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.dqn.learner import (
    DQN_METRICS,
    DQNHyperparams,
    DQNLearnerState,
    make_dqn_learn,
)
from rljax.algorithms.dqn.losses import DQNLossConfig, dqn_loss, q_values
from rljax.algorithms.dqn.networks import DQNNetworks
from rljax.learners.update import make_optimizer, make_target_update

# Expected-value Q: two samples, three actions.
OUT = jnp.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])  # actions [1, 2] -> Q(s, a) = [2, 4]
ACTION = jnp.array([1, 2])
NEXT_ONLINE = jnp.array([[0.0, 5.0, 1.0], [2.0, 0.0, 1.0]])  # greedy next actions [1, 0]
NEXT_TARGET = jnp.array([[10.0, 3.0, 7.0], [1.0, 6.0, 2.0]])
REWARD = jnp.array([1.0, 3.6])
DISCOUNT = jnp.array([0.9, 0.0])  # the second sample terminated: no bootstrap
WEIGHTS = jnp.array([1.0, 0.5])


def _loss_fn(jit):
    return jax.jit(dqn_loss, static_argnums=(7,)) if jit else dqn_loss  # 7: the config


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize(
    "double_q, kind, expected_loss, expected_td",
    [
        # Double Q: bootstrap = Q_target(s', argmax Q_online) = [3, 1]; y = [1 + .9 * 3, 3.6] =
        # [3.7, 3.6]; td = [2 - 3.7, 4 - 3.6] = [-1.7, .4]. Huber: [1.7 - .5, .5 * .16] =
        # [1.2, .08], weighted [1.2, .04], mean .62.
        (True, "huber", 0.62, [-1.7, 0.4]),
        # Half squared error: [.5 * 2.89, .08] weighted [1.445, .04], mean .7425.
        (True, "mse", 0.7425, [-1.7, 0.4]),
        # Plain DQN: bootstrap = max Q_target(s') = [10, 6]; y = [1 + 9, 3.6]; td = [-8, .4].
        # Huber [7.5, .08] weighted [7.5, .04], mean 3.77.
        (False, "huber", 3.77, [-8.0, 0.4]),
    ],
)
def test_expected_value_loss_hand_computed(jit, double_q, kind, expected_loss, expected_td):
    cfg = DQNLossConfig(double_q=double_q, td_error_loss_fn=kind)
    online = NEXT_ONLINE if double_q else None
    loss, aux = _loss_fn(jit)(
        OUT, online, NEXT_TARGET, ACTION, REWARD, DISCOUNT, WEIGHTS, cfg, None
    )
    assert float(loss) == pytest.approx(expected_loss, rel=1e-6)
    np.testing.assert_allclose(aux.td_error, expected_td, rtol=1e-6)
    np.testing.assert_allclose(aux.q_taken, [2.0, 4.0])


def test_expected_value_gradient_reaches_the_taken_q_values_only():
    cfg = DQNLossConfig(double_q=True, td_error_loss_fn="huber")
    grads = jax.grad(
        lambda out, online, target: dqn_loss(
            out, online, target, ACTION, REWARD, DISCOUNT, WEIGHTS, cfg
        )[0],
        argnums=(0, 1, 2),
    )(OUT, NEXT_ONLINE, NEXT_TARGET)
    # d/dQ(s, a) of mean(w * huber(td)): w * clip(td, -1, 1) / B = [1 * -1 / 2, .5 * .4 / 2].
    expected = np.zeros((2, 3))
    expected[0, 1], expected[1, 2] = -0.5, 0.1
    np.testing.assert_allclose(grads[0], expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(grads[1], 0.0)  # the next-state outputs are not trained on
    np.testing.assert_array_equal(grads[2], 0.0)


def test_no_weights_means_weights_of_one():
    cfg = DQNLossConfig(double_q=True, td_error_loss_fn="huber")
    args = (OUT, NEXT_ONLINE, NEXT_TARGET, ACTION, REWARD, DISCOUNT)
    loss, _ = dqn_loss(*args, None, cfg)
    assert float(loss) == pytest.approx((1.2 + 0.08) / 2, rel=1e-6)


def test_double_q_without_the_online_next_output_is_refused():
    cfg = DQNLossConfig(double_q=True, td_error_loss_fn="huber")
    with pytest.raises(ValueError, match="next_out_online"):
        dqn_loss(OUT, None, NEXT_TARGET, ACTION, REWARD, DISCOUNT, WEIGHTS, cfg)


# C51: two samples, two actions, three atoms at -1, 0, 1. Logits are log-probabilities, so each
# softmax gives back the probabilities written here.
SUPPORT = jnp.array([-1.0, 0.0, 1.0])
LOG = jnp.log
C51_OUT = LOG(
    jnp.array(
        [
            [[0.2, 0.3, 0.5], [1 / 3, 1 / 3, 1 / 3]],  # sample 0 took action 0: mean .3
            [[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]],  # sample 1 took action 1: mean .25
        ]
    )
)
C51_ACTION = jnp.array([0, 1])
# At s' the online means are [.7, -.7] (double Q picks action 0), the target means [0, .6]
# (plain DQN picks action 1).
C51_NEXT_ONLINE = LOG(jnp.array([[[0.1, 0.1, 0.8], [0.8, 0.1, 0.1]]] * 2))
C51_NEXT_TARGET = LOG(jnp.array([[[0.25, 0.5, 0.25], [0.1, 0.2, 0.7]]] * 2))
C51_REWARD = jnp.array([0.5, 2.0])
C51_DISCOUNT = jnp.array([0.5, 0.0])
C51_WEIGHTS = jnp.array([1.0, 2.0])


def _c51_loss(out, double_q, jit=False):
    cfg = DQNLossConfig(double_q=double_q, td_error_loss_fn="huber")
    online = C51_NEXT_ONLINE if double_q else None
    next_target, action, reward, discount = C51_NEXT_TARGET, C51_ACTION, C51_REWARD, C51_DISCOUNT
    args = (out, online, next_target, action, reward, discount, C51_WEIGHTS, cfg, SUPPORT)
    return _loss_fn(jit)(*args)


def test_q_values_are_the_means_of_the_return_distributions():
    np.testing.assert_allclose(q_values(C51_OUT, SUPPORT), [[0.3, 0.0], [-0.25, 0.25]], atol=1e-6)
    np.testing.assert_array_equal(q_values(OUT), OUT)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize(
    "double_q, ce0",
    [
        # Sample 0, double Q: next distribution [.25, .5, .25] at .5 + .5 * z = [0, .5, 1]: the
        # atom at 0 goes to atom 0 (.25), the one at .5 splits evenly between 0 and 1 (.25
        # each), the one at 1 stays (.25): target [0, .5, .5]. CE to [.2, .3, .5] =
        # -(.5 log .3 + .5 log .5).
        (True, -(0.5 * math.log(0.3) + 0.5 * math.log(0.5))),
        # Plain DQN: next distribution [.1, .2, .7] -> [0, .1 + .1, .1 + .7] = [0, .2, .8].
        (False, -(0.2 * math.log(0.3) + 0.8 * math.log(0.5))),
    ],
)
def test_c51_loss_hand_computed(jit, double_q, ce0):
    loss, aux = _c51_loss(C51_OUT, double_q, jit)
    # Sample 1 terminated with reward 2, clipped to v_max = 1: target [0, 0, 1], CE -log .5.
    ce1 = -math.log(0.5)
    np.testing.assert_allclose(aux.td_error, [ce0, ce1], rtol=1e-5)
    assert float(loss) == pytest.approx((1.0 * ce0 + 2.0 * ce1) / 2, rel=1e-5)
    np.testing.assert_allclose(aux.q_taken, [0.3, 0.25], rtol=1e-5)


def test_c51_gradient_is_the_weighted_softmax_minus_target():
    grad = jax.grad(lambda out: _c51_loss(out, double_q=True)[0])(C51_OUT)
    # d CE / d logits = softmax - target, times w / B, at the taken action only.
    expected = np.zeros((2, 2, 3))
    expected[0, 0] = (np.array([0.2, 0.3, 0.5]) - [0.0, 0.5, 0.5]) * 1.0 / 2
    expected[1, 1] = (np.array([0.25, 0.25, 0.5]) - [0.0, 0.0, 1.0]) * 2.0 / 2
    np.testing.assert_allclose(grad, expected, atol=1e-6)


class _Linear(nn.Module):
    """Q(s) = s @ W: three actions from two features, no bias."""

    @nn.compact
    def __call__(self, obs, noise=False):
        return nn.Dense(3, use_bias=False)(obs)


def _hp(double_q=True, **kw):
    base = dict(
        loss=DQNLossConfig(double_q=double_q, td_error_loss_fn="huber"),
        noisy=False,
        num_atoms=1,
        v_min=-10.0,
        v_max=10.0,
        tau=0.25,
        epsilon=((0, 1.0),),
    )
    return DQNHyperparams(**{**base, **kw})


@pytest.mark.parametrize("double_q", [True, False])
def test_learn_step_is_one_adam_step_on_the_loss(double_q):
    hp = _hp(double_q=double_q)
    networks = DQNNetworks(_Linear(), noisy=False, support=hp.support())
    optimizer = make_optimizer(0.1, 40.0, always_chain=True)
    # W = identity on the first two actions, 0 on the third; target W = 2x that.
    w = jnp.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    params = {"params": {"Dense_0": {"kernel": w}}}
    target = {"params": {"Dense_0": {"kernel": 2 * w}}}
    state = DQNLearnerState(params, target, optimizer.init(params))
    batch = {
        "obs": jnp.array([[1.0, 0.0], [0.0, 2.0]]),  # Q = [[1, 0, 0], [0, 2, 0]]
        "action": jnp.array([0, 2]),  # Q(s, a) = [1, 0]
        "reward": jnp.array([1.0, 0.0]),
        "discount": jnp.array([0.5, 0.5]),
        "next_obs": jnp.array([[0.0, 1.0], [1.0, 0.0]]),  # online [[0,1,0],[1,0,0]]
    }
    # Next greedy actions: online [1, 0], target (2x online) the same; target values [2, 2]
    # either way. y = [1 + .5 * 2, 0 + .5 * 2] = [2, 1]; td = [1 - 2, 0 - 1] = [-1, -1];
    # huber .5 each, loss .5.
    learn = jax.jit(make_dqn_learn(networks, optimizer, hp))
    new, td, metrics = learn(state, batch, jnp.ones(2), jax.random.PRNGKey(0))
    np.testing.assert_allclose(td, [-1.0, -1.0])
    assert set(metrics) == set(DQN_METRICS)
    assert float(metrics["qf_loss"]) == pytest.approx(0.5)
    assert float(metrics["qf_mean"]) == pytest.approx(0.5)
    assert (float(metrics["qf_max"]), float(metrics["qf_min"])) == (1.0, 0.0)
    assert float(metrics["td_error_mean"]) == pytest.approx(1.0)
    # dL/dW[i, a] = mean_b td_b * obs_b[i] * [a_b == a]: W[0, 0] gets -1 * 1 / 2, W[1, 2] gets
    # -1 * 2 / 2; global norm sqrt(.25 + 1).
    assert float(metrics["gradients_global_norm"]) == pytest.approx(math.sqrt(1.25), rel=1e-6)
    # Adam's first step moves each weight with a gradient by lr against its sign.
    expected = np.asarray(w).copy()
    expected[0, 0] += 0.1
    expected[1, 2] += 0.1
    np.testing.assert_allclose(new.params["params"]["Dense_0"]["kernel"], expected, atol=1e-6)
    np.testing.assert_array_equal(new.target_params["params"]["Dense_0"]["kernel"], 2 * w)
    # The target moves tau = .25 of the way to the online weights.
    moved = make_target_update(hp.tau, {"target_params": "params"})(new)
    np.testing.assert_allclose(
        moved.target_params["params"]["Dense_0"]["kernel"],
        0.75 * 2 * w + 0.25 * expected,
        atol=1e-6,
    )
