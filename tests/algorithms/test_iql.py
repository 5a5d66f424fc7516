"""IQL (rljax.algorithms.iql): the losses by hand, the target's period, the settings it
refuses, and what it learns: on an offline bandit whose data hold a good and a bad action
equally often, IQL's critics and value find the good one and its actor takes it, where cloning
(``beta`` near 0) averages the two."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("pyarrow")

from rljax.algorithms.algorithm import Algorithm  # noqa: E402
from rljax.algorithms.iql import IQLConfig  # noqa: E402
from rljax.algorithms.iql.losses import (  # noqa: E402
    IQLLearnerState,
    IQLNetworks,
    IQLOptimizers,
    expectile_loss,
    make_iql_learn,
    make_iql_target_update,
)
from rljax.core.rl_module.default_model_config import DefaultModelConfig  # noqa: E402
from rljax.learners.update import make_optimizer  # noqa: E402
from rljax.networks.distributions import SquashedDiagGaussian  # noqa: E402
from rljax.networks.q_models import GaussianActor, TwinCritic  # noqa: E402
from rljax.offline import OfflineWriter  # noqa: E402
from rljax.utils.errors import ConfigError  # noqa: E402


def test_expectile_loss_by_hand():
    loss = expectile_loss(jnp.array([2.0, -2.0, 0.0]), 0.8)
    np.testing.assert_allclose(loss, [0.8 * 4, 0.2 * 4, 0.0], rtol=1e-6)


def _parts(beta=2.0, expectile=0.7):
    mc = DefaultModelConfig(fcnet_hiddens=[8])
    actor, critic = GaussianActor(1, mc), TwinCritic(mc, num_critics=2)
    value = TwinCritic(mc, num_critics=1, num_actions=1)
    adam = make_optimizer(1e-3, always_chain=True)
    obs, act = jnp.ones((1, 3)), jnp.zeros((1, 1))
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    p = (actor.init(k[0], obs), critic.init(k[1], obs, act), value.init(k[2], obs))
    # A target unlike the critics, so that the losses tell them apart.
    target = jax.tree.map(lambda x: 0.5 * x + 0.1, p[1])
    state = IQLLearnerState(p[0], p[1], target, p[2], *(adam.init(x) for x in p), jnp.int32(0))
    nets = IQLNetworks(actor, critic, value, SquashedDiagGaussian(1))
    learn = jax.jit(
        make_iql_learn(
            nets,
            IQLOptimizers(adam, adam, adam),
            {"actor_lr": 1e-3, "critic_lr": 1e-3, "value_lr": 1e-3},
            beta=beta,
            expectile=expectile,
        )
    )
    return nets, state, learn


def test_one_step_s_losses_by_hand():
    nets, state, learn = _parts()
    rng = np.random.default_rng(0)
    batch = {
        "obs": jnp.asarray(rng.normal(size=(5, 3)), jnp.float32),
        "action": jnp.asarray(rng.uniform(-0.9, 0.9, (5, 1)), jnp.float32),
        "reward": jnp.asarray(rng.normal(size=5), jnp.float32),
        "discount": jnp.asarray([0.9, 0.9, 0.0, 0.9, 0.9], jnp.float32),
        "next_obs": jnp.asarray(rng.normal(size=(5, 3)), jnp.float32),
    }
    new, td, metrics = learn(state, batch, jnp.ones(5), jax.random.PRNGKey(1), None)
    # The same losses computed here from the networks' outputs at the starting parameters.
    obs, act = np.asarray(batch["obs"]), np.asarray(batch["action"])
    q_target = np.min(np.asarray(nets.critic.apply(state.target_critic, obs, act)), 0)
    v = np.asarray(nets.value.apply(state.value, obs))[0, :, 0]
    v_next = np.asarray(nets.value.apply(state.value, batch["next_obs"]))[0, :, 0]
    diff = q_target - v
    value_loss = np.mean(np.where(diff > 0, 0.7, 0.3) * diff**2)
    target = np.asarray(batch["reward"]) + np.asarray(batch["discount"]) * v_next
    q = np.asarray(nets.critic.apply(state.critic, obs, act))
    critic_loss = np.mean((target[None] - q) ** 2)
    inputs = nets.actor.apply(state.actor, obs)
    logp = np.asarray(nets.dist.log_prob(inputs, jnp.asarray(act)))
    weight = np.minimum(np.exp(2.0 * diff), 100.0)
    actor_loss = -np.mean(weight * logp)
    np.testing.assert_allclose(metrics["value_loss"], value_loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["qf_loss"], critic_loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["policy_loss"], actor_loss, rtol=1e-5)
    np.testing.assert_allclose(td, target - q[0], rtol=1e-5, atol=1e-6)
    # Each part moved; the target critics did not (that is update_target's).
    for name in ("actor", "critic", "value"):
        before, after = jax.tree.leaves(getattr(state, name)), jax.tree.leaves(getattr(new, name))
        assert any(not np.array_equal(a, b) for a, b in zip(before, after, strict=True)), name
    assert jax.tree.all(jax.tree.map(np.array_equal, state.target_critic, new.target_critic))
    assert int(new.steps) == 1


def test_the_exponentiated_advantage_is_capped_at_100():
    nets, state, learn = _parts(beta=1e4)
    batch = {
        "obs": jnp.ones((2, 3)),
        "action": jnp.zeros((2, 1)),
        "reward": jnp.zeros(2),
        "discount": jnp.zeros(2),
        "next_obs": jnp.ones((2, 3)),
    }
    # Twin targets raised far above the value: exp(1e4 * advantage) overflows, the cap holds.
    high = state.replace(target_critic=jax.tree.map(lambda x: x + 10.0, state.target_critic))
    _, _, metrics = learn(high, batch, jnp.ones(2), jax.random.PRNGKey(0), None)
    assert float(metrics["exp_advantage_mean"]) == 100.0


def test_the_target_critics_move_every_period_steps():
    _, state, _ = _parts()
    update = make_iql_target_update(0.5, 3)
    moved = []
    for steps in range(1, 7):
        out = update(state.replace(steps=jnp.int32(steps)))
        moved.append(
            not jax.tree.all(jax.tree.map(np.array_equal, out.target_critic, state.target_critic))
        )
    assert moved == [False, False, True, False, False, True]
    # tau 1 and period 0 (RLlib's defaults): the targets are the critics after every step.
    copied = make_iql_target_update(1.0, 0)(state)
    assert jax.tree.all(jax.tree.map(np.allclose, copied.target_critic, state.critic))


def _bandit(path, episodes=256, seed=0) -> None:
    """One-step episodes from one state: action +1 (env scale) pays 1, -1 pays 0, each taken
    half the time."""
    env = gym.make("Pendulum-v1")
    writer = OfflineWriter(path, env.observation_space, env.action_space)
    rng = np.random.default_rng(seed)
    obs = np.array([1.0, 0.0, 0.0], np.float32)
    for _ in range(episodes):
        a = float(rng.choice([-1.0, 1.0]))
        writer.add_episode([obs, obs], [np.array([a], np.float32)], [float(a > 0)], True, False)
    writer.flush()


def _iql(path, **training):
    return (
        IQLConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=str(path), dataset_num_iters_per_learner=1500)
        .training(train_batch_size_per_learner=64, **training)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .debugging(seed=0)
    )


@pytest.mark.slow  # two builds, 1,500 gradient steps each
def test_iql_takes_the_data_s_better_action_where_cloning_averages(tmp_path):
    _bandit(tmp_path)
    obs = np.array([1.0, 0.0, 0.0], np.float32)
    actions = {}
    for beta in (10.0, 1e-4):
        algo = _iql(tmp_path, beta=beta, expectile=0.9).build_algo()
        try:
            metrics = algo.train()["learners"]["default_policy"]
            actions[beta] = float(algo.compute_single_action(obs, explore=False)[0])
            if beta == 10.0:
                # Q(s, +1) ~ 1 and Q(s, -1) ~ 0 (one-step episodes: the reward), V(s) between.
                assert 0.3 < metrics["vf_mean"] < 1.0
                with_state = algo.state.learner
                q = algo.critic.apply(
                    with_state.critic, np.stack([obs, obs]), np.array([[0.5], [-0.5]], np.float32)
                )
                np.testing.assert_allclose(np.asarray(q).mean(0), [1.0, 0.0], atol=0.15)
        finally:
            algo.stop()
    assert actions[10.0] > 0.7  # the paying action, +1
    assert abs(actions[1e-4]) < 0.4  # the two actions' average


def test_settings_iql_refuses_naming_them(tmp_path):
    with pytest.raises(ConfigError, match=r"IQL: learns from offline data"):
        IQLConfig().environment("Pendulum-v1").validate()
    with pytest.raises(ConfigError, match=r"expectile=1.5"):
        _iql(tmp_path, expectile=1.5).validate()
    with pytest.raises(ConfigError, match=r"beta=0"):
        _iql(tmp_path, beta=0.0).validate()
    with pytest.raises(ConfigError, match=r"n_step=3"):
        _iql(tmp_path, n_step=3).validate()
    _bandit(tmp_path, episodes=4)
    with pytest.raises(ConfigError, match=r"IQL needs a 1-D Box action space.*BC or MARWIL"):
        _iql(tmp_path).environment("CartPole-v1").build_algo()


def test_a_checkpoint_restores_every_part(tmp_path):
    data = tmp_path / "data"
    _bandit(data, episodes=16)
    algo = _iql(data).offline_data(dataset_num_iters_per_learner=5).build_algo()
    try:
        algo.train()
        algo.save_to_path(tmp_path / "ckpt")
        restored = Algorithm.from_checkpoint(tmp_path / "ckpt")
        try:
            same = jax.tree.map(np.array_equal, algo.state.learner, restored.state.learner)
            assert jax.tree.all(same)
            # Trained on from there, both reach the same state (the data's draws are in it).
            algo.train(), restored.train()
            same = jax.tree.map(np.array_equal, algo.state, restored.state)
            assert jax.tree.all(same)
        finally:
            restored.stop()
    finally:
        algo.stop()
