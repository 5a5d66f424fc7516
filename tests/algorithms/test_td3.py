"""TD3: config (RLlib's names and defaults), the learner's delays, both execution paths, checkpoints."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import rljax
from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.td3 import TD3Config
from rljax.algorithms.td3.learner import (
    TD3Hyperparams,
    TD3Networks,
    init_td3_state,
    make_td3_learn,
    make_td3_optimizers,
    make_td3_target_update,
)
from rljax.algorithms.td3.networks import DeterministicActor
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.networks.q_models import TwinCritic
from rljax.utils.errors import ConfigError

rljax.register_env("rljax-test-gym-pendulum", lambda cfg: gym.make("Pendulum-v1"))


# A small TD3 (flat settings, as a YAML file gives them): learning from env step 64.
SMALL = {
    "env": "Pendulum-v1",
    "num_steps_sampled_before_learning_starts": 64,
    "replay_buffer_config": {"capacity": 2048},
    "train_batch_size_per_learner": 32,
    "model_config": {"fcnet_hiddens": [32, 32]},
    "min_sample_timesteps_per_iteration": 100,
    "seed": 0,
}


def _small_td3(**settings):
    return TD3Config.from_dict({**SMALL, **settings})


def test_rllib_defaults():
    c = TD3Config()
    assert c.twin_q and c.smooth_target_policy and c.policy_delay == 2
    assert (c.target_noise, c.target_noise_clip, c.exploration_noise) == (0.2, 0.5, 0.1)
    assert (c.actor_lr, c.critic_lr, c.tau) == (1e-3, 1e-3, 5e-3)
    assert c.train_batch_size_per_learner == 100 and c.target_network_update_freq == 0
    assert c.num_steps_sampled_before_learning_starts == 10_000
    assert c.replay_buffer_config == {"type": "EpisodeReplayBuffer", "capacity": 1_000_000}
    assert c.model_config.fcnet_hiddens == (400, 300)


@pytest.mark.parametrize(
    "training, fragment",
    [
        ({"policy_delay": 0}, "policy_delay=0"),
        ({"policy_delay": 2.0}, "policy_delay=2.0 (float)"),
        ({"target_noise": -0.1}, "target_noise=-0.1"),
        ({"target_noise_clip": "0.5"}, "target_noise_clip='0.5' (str)"),
        ({"exploration_noise": float("nan")}, "exploration_noise=nan"),
        ({"smooth_target_policy": 1}, "smooth_target_policy=1 (int)"),
        ({"actor_lr": 0}, "actor_lr=0"),
        ({"target_network_update_freq": 100}, "set target_network_update_freq=0"),
    ],
)
def test_bad_td3_settings_fail_in_validate(training, fragment):
    with pytest.raises(ConfigError) as e:
        _small_td3(**training).validate()
    assert fragment in str(e.value)


def test_target_network_update_freq_works_without_a_policy_delay():
    _small_td3(policy_delay=1, target_network_update_freq=100).validate()


def test_old_name_exploration_config_points_to_exploration_noise():
    with pytest.raises(ConfigError, match=r"exploration_config=.*or exploration_noise \(TD3\)"):
        TD3Config().training(exploration_config={"type": "GaussianNoise"})


def test_wrong_action_spaces_are_refused_at_build():
    with pytest.raises(ConfigError, match="1-D Box action space with finite bounds"):
        _small_td3(env="CartPole-v1").build_algo()


def _learner(policy_delay=2, tau=0.1, twin=True):
    mc = DefaultModelConfig(fcnet_hiddens=(8,))
    networks = TD3Networks(DeterministicActor(1, mc), TwinCritic(mc, 2 if twin else 1))
    hp = TD3Hyperparams(tau, policy_delay, 0.2, 0.5, 0.1, 0, 1e-2, 1e-2, None)
    optimizers = make_td3_optimizers(hp)
    state = init_td3_state(
        networks, optimizers, jax.random.PRNGKey(0), jnp.zeros((1, 3)), jnp.zeros((1, 1))
    )
    learn = jax.jit(make_td3_learn(networks, optimizers, hp))
    return state, learn, jax.jit(make_td3_target_update(hp))


def _batch(b=16):
    k = jax.random.split(jax.random.PRNGKey(1), 4)
    batch = {
        "obs": jax.random.normal(k[0], (b, 3)),
        "next_obs": jax.random.normal(k[1], (b, 3)),
        "action": jax.random.uniform(k[2], (b, 1), minval=-1, maxval=1),
        "reward": jax.random.normal(k[3], (b,)),
        "discount": jnp.full((b,), 0.99),
    }
    return batch, jnp.ones((b,))


def _same(a, b):
    return all(jax.tree.leaves(jax.tree.map(np.array_equal, a, b)))


@pytest.mark.parametrize("twin", [True, False])
def test_actor_and_targets_move_every_policy_delay_critic_updates(twin):
    state, learn, target_update = _learner(policy_delay=3, tau=0.1, twin=twin)
    batch, weights = _batch()
    assert jax.tree.leaves(state.critic)[0].shape[0] == (2 if twin else 1)
    for step in (1, 2, 3):
        before = state
        state, td, metrics = learn(state, batch, weights, jax.random.PRNGKey(step))
        state = target_update(state)
        assert int(state.step) == step and td.shape == (16,)
        assert not _same(state.critic, before.critic)  # the critics learn every step
        if step < 3:
            assert _same(state.actor, before.actor) and _same(state.actor_opt, before.actor_opt)
            assert _same(state.target_actor, before.target_actor)
            assert _same(state.target_critic, before.target_critic)
            assert float(metrics["policy_loss"]) == 0.0  # no actor update yet
        else:
            assert not _same(state.actor, before.actor)
            # Polyak by tau = 0.1 towards the networks after this step's updates.
            for online, target, old in (
                (state.critic, state.target_critic, before.target_critic),
                (state.actor, state.target_actor, before.target_actor),
            ):
                expected = optax.incremental_update(online, old, 0.1)
                jax.tree.map(
                    lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6), target, expected
                )
            # -Q1 of the actor's actions before its update, scored by this step's critics.
            mc = DefaultModelConfig(fcnet_hiddens=(8,))
            actions = DeterministicActor(1, mc).apply(before.actor, batch["obs"])
            q = TwinCritic(mc, 2 if twin else 1).apply(state.critic, batch["obs"], actions)
            assert float(metrics["policy_loss"]) == pytest.approx(-float(jnp.mean(q[0])), rel=1e-5)
            assert float(state.policy_loss) == float(metrics["policy_loss"])


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (10 s alone)
def test_fused_path_explores_uniformly_then_around_the_actor_and_compiles_once():
    algo = _small_td3(num_steps_sampled_before_learning_starts=150).build_algo()
    try:
        assert algo.fused and algo.cycles_per_iteration == 100
        obs = np.zeros((2000, 3), np.float32)
        r1 = algo.train()  # 99 transitions: all actions still uniform random, no update
        assert r1["learners"]["default_policy"]["num_updates"] == 0
        early = algo.compute_actions(obs, explore=True)
        assert early.min() < -1.9 and early.max() > 1.9 and abs(early.std() - 4 / 12**0.5) < 0.05
        algo.train()
        result = algo.train()
        learner = result["learners"]["default_policy"]
        assert learner["num_updates"] == 100  # one update per env step once learning started
        assert int(algo.state.learner.step) == int(algo.state.num_updates)
        assert learner["num_updates_lifetime"] == int(algo.state.num_updates)
        for key in ("qf_loss", "policy_loss", "qf_mean", "td_error_mean"):
            assert np.isfinite(learner[key]) and learner[key] != 0.0, key
        assert algo._iteration._cache_size() == 1
        greedy = algo.compute_actions(obs)
        noisy = algo.compute_actions(obs, explore=True)
        assert greedy.shape == (2000, 1) and np.ptp(greedy) == 0
        assert np.all(np.abs(noisy) <= 2.0)
        # exploration_noise 0.1 in half action ranges: a std of 0.2 in Pendulum's torque units
        # (less where the clip at the bound cuts it).
        assert 0.1 < np.std(noisy) <= 0.21
        out = algo.get_module().forward_inference({"obs": obs[:4]})
        np.testing.assert_allclose(out["actions"], greedy[:4])
        assert out["action_dist_inputs"].shape == (4, 1)
    finally:
        algo.stop()


@pytest.mark.slow
def test_runner_path_trains_saves_restores_and_acts_within_bounds(tmp_path):
    algo = _small_td3(
        env="rljax-test-gym-pendulum", num_env_runners=1, store_buffer_in_checkpoints=True
    ).build_algo()
    try:
        assert not algo.fused
        result = algo.train()
        # 100 env steps; the first is the reset. Learning starts after transition 64.
        assert result["num_env_steps_sampled_lifetime"] == 99
        assert result["learners"]["default_policy"]["num_updates"] == 99 - 64 + 1
        algo.save_to_path(tmp_path / "td3")
        restored = Algorithm.from_checkpoint(tmp_path / "td3")
        try:
            assert type(restored).__name__ == "TD3" and not restored.fused
            s, r = jax.device_get(algo.state), jax.device_get(restored.state)
            assert _same(s.learner, r.learner) and _same(s.buffer, r.buffer)
            assert int(r.learner.step) == int(s.learner.step) == 99 - 64 + 1
            obs = np.array([1.0, 0.0, -3.0], np.float32)
            np.testing.assert_array_equal(
                restored.compute_single_action(obs), algo.compute_single_action(obs)
            )
            for o in np.random.default_rng(0).uniform(-8, 8, (20, 3)).astype(np.float32):
                action = restored.compute_single_action(o, explore=True)
                assert action.shape == (1,) and -2.0 <= action[0] <= 2.0
            assert restored.train()["training_iteration"] == 2
        finally:
            restored.stop()
    finally:
        algo.stop()
