"""DQN's, SAC's and TD3's dynamic settings: the learning rates are read from their schedules
once per step and written into optimizers built once (``optax.inject_hyperparams``, the rate
in the optimizer state); checkpoints store the optimizer states without the injected rates,
and a new checkpoint restores into the live layout and steps as the saved algorithm does."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.sac import SACConfig
from rljax.algorithms.td3.learner import (
    TD3Hyperparams,
    TD3Networks,
    TD3Optimizers,
    init_td3_state,
    make_td3_learn,
    make_td3_optimizers,
)
from rljax.algorithms.td3.networks import DeterministicActor
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.learners.hyperparams import saved_layout
from rljax.learners.update import make_optimizer
from rljax.networks.q_models import TwinCritic

SCHEDULE = ((0, 1e-2), (100, 1e-4))
# The schedule's value at env step 50, halfway between its points.
RATE_AT_50 = 1e-2 + 0.5 * (1e-4 - 1e-2)


def _batch(b=16, obs_dim=3, action=None):
    k = jax.random.split(jax.random.PRNGKey(1), 4)
    return {
        "obs": jax.random.normal(k[0], (b, obs_dim)),
        "next_obs": jax.random.normal(k[1], (b, obs_dim)),
        "action": (
            jax.random.uniform(k[2], (b, 1), minval=-1, maxval=1) if action is None else action
        ),
        "reward": jax.random.normal(k[3], (b,)),
        "discount": jnp.full((b,), 0.99),
    }, jnp.ones((b,))


def test_td3_steps_at_the_scheduled_rate_its_optimizer_state_holds():
    mc = DefaultModelConfig(fcnet_hiddens=(8,))
    networks = TD3Networks(DeterministicActor(1, mc), TwinCritic(mc, 2))
    # policy_delay 1: the actor steps too.
    hp = TD3Hyperparams(0.1, 1, 0.2, 0.5, 0.1, 0, SCHEDULE, SCHEDULE, 1.0)
    key, obs, act = jax.random.PRNGKey(0), jnp.zeros((1, 3)), jnp.zeros((1, 1))
    optimizers = make_td3_optimizers(hp)
    state = init_td3_state(networks, optimizers, key, obs, act)
    assert float(state.critic_opt.hyperparams["learning_rate"]) == pytest.approx(1e-2)
    batch, weights = _batch()
    t = jnp.asarray(50, jnp.int32)
    new, _, metrics = jax.jit(make_td3_learn(networks, optimizers, hp))(
        state, batch, weights, key, t
    )
    for name in ("qf_learning_rate", "policy_learning_rate"):
        assert float(metrics[name]) == pytest.approx(RATE_AT_50, rel=1e-6)
    for opt_state in (new.critic_opt, new.actor_opt):
        assert float(opt_state.hyperparams["learning_rate"]) == pytest.approx(RATE_AT_50, rel=1e-6)
        assert float(opt_state.hyperparams["max_norm"]) == 1.0
        assert int(opt_state.count) == 0  # kept at 0: checkpoints do not store it

    # The same step with Adam built at that rate, as before the rate lived in the state.
    fixed = dataclasses.replace(hp, actor_lr=RATE_AT_50, critic_lr=RATE_AT_50)
    plain = TD3Optimizers(make_optimizer(RATE_AT_50, 1.0), make_optimizer(RATE_AT_50, 1.0))
    ref_state = init_td3_state(networks, plain, key, obs, act)
    ref, _, _ = jax.jit(make_td3_learn(networks, plain, fixed))(ref_state, batch, weights, key, t)
    assert not np.allclose(jax.tree.leaves(new.critic)[0], jax.tree.leaves(state.critic)[0])
    for a, b in zip(
        jax.tree.leaves((new.actor, new.critic)),
        jax.tree.leaves((ref.actor, ref.critic)),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    stored = saved_layout(new)
    assert jax.tree.structure(stored.critic_opt) == jax.tree.structure(ref.critic_opt)


def _small(algo_name):
    if algo_name == "SAC":
        config = (
            SACConfig()
            .environment("Pendulum-v1")
            .training(
                actor_lr=[list(p) for p in SCHEDULE],
                critic_lr=[list(p) for p in SCHEDULE],
                alpha_lr=[[0, 3e-3], [200, 3e-4]],
                grad_clip=1.0,
                train_batch_size_per_learner=16,
            )
        )
    else:
        config = (
            DQNConfig()
            .environment("CartPole-v1")
            .training(lr=[list(p) for p in SCHEDULE], train_batch_size_per_learner=16)
        )
    return (
        config.env_runners(num_envs_per_env_runner=2)
        .training(
            num_steps_sampled_before_learning_starts=32, replay_buffer_config={"capacity": 512}
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .reporting(min_sample_timesteps_per_iteration=64)
        .debugging(seed=0)
    )


def _leaves_equal(a, b):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(np.array_equal(x, y) for x, y in zip(la, lb, strict=True))


@pytest.mark.slow  # builds and trains
@pytest.mark.parametrize("algo_name", ["DQN", "SAC"])
def test_a_new_checkpoint_stores_the_old_layout_and_steps_the_same_restored(algo_name, tmp_path):
    algo = _small(algo_name).build_algo()
    try:
        algo.train()
        live = algo.state.learner
        timestep = algo.state.timestep
        stored = algo._checkpoint_state(False)["state"]["learner"]
        path = algo.save_to_path(tmp_path / "ckpt")
    finally:
        algo.stop()
    # The stored tree holds no injected values: the layout every checkpoint has.
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(stored)]
    assert paths and not any("hyperparams" in p for p in paths)

    restored = Algorithm.from_checkpoint(path)
    try:
        learner = restored.state.learner
        opt_fields = [
            f.name
            for f in dataclasses.fields(learner)
            if isinstance(getattr(learner, f.name), optax.InjectStatefulHyperparamsState)
        ]
        assert len(opt_fields) == (1 if algo_name == "DQN" else 3)
        assert _leaves_equal(saved_layout(learner), stored)
        # One step from either state: the same numbers (the step writes its own rate first).
        key = jax.random.PRNGKey(7)
        if algo_name == "DQN":
            batch, weights = _batch(obs_dim=4, action=jnp.zeros((16,), jnp.int32))
        else:
            batch, weights = _batch()
        learn = jax.jit(restored.replay_learner.learn)
        after_saved = learn(live, batch, weights, key, timestep)
        after_restored = learn(learner, batch, weights, key, timestep)
        assert _leaves_equal(after_saved, after_restored)
        metrics = after_restored[2]
        rate_name = "default_optimizer_learning_rate" if algo_name == "DQN" else "qf_learning_rate"
        expected = float(
            np.interp(int(timestep), [s for s, _ in SCHEDULE], [v for _, v in SCHEDULE])
        )
        assert float(metrics[rate_name]) == pytest.approx(expected, rel=1e-5)
    finally:
        restored.stop()


def test_recurrent_policies_are_a_declared_property_of_the_config_class():
    """``use_lstm`` is refused by what a config class declares (``has_recurrent_policies``),
    not by its algorithm's name."""
    from rljax.algorithms.ppo import PPOConfig
    from rljax.utils.errors import ConfigError

    assert PPOConfig.has_recurrent_policies and not DQNConfig.has_recurrent_policies
    lstm = {"fcnet_hiddens": [8], "use_lstm": True}
    with pytest.raises(ConfigError, match="use_lstm=True: DQN has no recurrent policies"):
        DQNConfig().environment("CartPole-v1").rl_module(model_config=lstm).validate()

    class NamedOtherwise(PPOConfig):
        algo_name = "MyPPO"

    NamedOtherwise().environment("CartPole-v1").rl_module(model_config=lstm).validate()
