"""Non-finite updates: skipped inside the jitted update, counted, or raised, never applied."""

import gymnasium as gym
import jax
import numpy as np
import pytest

from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.utils.errors import ConfigError
from rljax.utils.nonfinite import NonFiniteUpdateError

# Whole training runs with a NaN planted in them; the jitted skip itself is unit-tested, fast, in
# tests/learners/test_update.py.
pytestmark = pytest.mark.slow


class NaNRewardCartPole(gym.Env):
    """CartPole whose 30th step pays a NaN reward (once per env instance)."""

    def __init__(self, config=None):
        self.env = gym.make("CartPole-v1")
        self.observation_space, self.action_space = (
            self.env.observation_space,
            self.env.action_space,
        )
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        self.steps += 1
        return obs, float("nan") if self.steps == 30 else reward, term, trunc, info


def _ppo(mode):
    return (
        PPOConfig()
        .environment(NaNRewardCartPole)
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .fault_tolerance(on_non_finite_update=mode)
        .debugging(seed=0)
    )


def _leaves(algo):
    return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(algo.get_module().params))]


def test_ppo_skips_and_counts_non_finite_steps_and_trains_on():
    algo = _ppo("skip").build_algo()
    try:
        before = _leaves(algo)
        # The NaN reward poisons the batch's advantages (normalised over the batch), so every
        # step of the first iteration is skipped: 2 epochs x 2 minibatches.
        result = algo.train()
        assert result["learners"]["__all_modules__"]["num_non_finite_updates"] == 4
        for b, a in zip(before, _leaves(algo), strict=True):
            np.testing.assert_array_equal(b, a)
        result = algo.train()  # the envs pay finite rewards from now on
        modules = result["learners"]["__all_modules__"]
        assert modules["num_non_finite_updates"] == 0
        assert modules["num_non_finite_updates_lifetime"] == 4
        after = _leaves(algo)
        assert all(np.all(np.isfinite(a)) for a in after)
        assert any(not np.array_equal(b, a) for b, a in zip(before, after, strict=True))
    finally:
        algo.stop()


def test_ppo_raises_when_asked_and_the_parameters_stay_finite():
    algo = _ppo("raise").build_algo()
    try:
        before = _leaves(algo)
        with pytest.raises(NonFiniteUpdateError, match="iteration 1: 4 update step"):
            algo.train()
        for b, a in zip(before, _leaves(algo), strict=True):
            np.testing.assert_array_equal(b, a)
    finally:
        algo.stop()
    with pytest.raises(
        ConfigError, match=r"on_non_finite_update='ignore' \(str\).*'skip' or 'raise'"
    ):
        _ppo("ignore").validate()


@pytest.mark.parametrize("buffer", ["EpisodeReplayBuffer", "PrioritizedEpisodeReplayBuffer"])
def test_dqn_skips_steps_on_a_nan_transition_and_keeps_finite_parameters(buffer):
    algo = (
        DQNConfig()
        .environment(NaNRewardCartPole)
        .training(
            num_steps_sampled_before_learning_starts=32,
            train_batch_size=32,
            replay_buffer_config={"type": buffer, "capacity": 64},
        )
        .reporting(min_sample_timesteps_per_iteration=64)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
        .build_algo()
    )
    try:
        result = algo.train()
        skipped = result["learners"]["__all_modules__"]["num_non_finite_updates"]
        assert 0 < skipped < result["learners"]["default_policy"]["num_updates"]
        assert all(np.all(np.isfinite(a)) for a in _leaves(algo))
        if buffer.startswith("Prioritized"):
            # The NaN row's priority is the lowest, not NaN: the sum tree stays finite and
            # later batches rarely hold it, so most steps train.
            buf = jax.device_get(algo.state.buffer)
            assert np.isnan(buf.storage["reward"]).any()  # the bad row is in the buffer
            for level in buf.sum_tree:
                assert np.all(np.isfinite(level))
            assert np.isfinite(buf.max_priority)
            result = algo.train()
            modules = result["learners"]["__all_modules__"]
            assert (
                modules["num_non_finite_updates"]
                < result["learners"]["default_policy"]["num_updates"] / 2
            )
    finally:
        algo.stop()
