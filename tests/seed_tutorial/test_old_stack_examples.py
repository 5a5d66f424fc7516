"""What RLlib's old-API-stack example scripts (``ray/rllib/examples/_old_api_stack``) use: a
dict config that asks for the old stack through ``tune.Tuner``, old-stack replay buffer names,
``ray.rllib.evaluation.postprocessing``, ``action_mask_key`` and old callback hooks."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
import pytest

from rljax import tune
from rljax.agents import trainer_class
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.callbacks.callbacks import RLlibCallback
from rljax.evaluation.postprocessing import Postprocessing, compute_advantages, discount_cumsum
from rljax.examples._old_api_stack.models.parametric_actions_model import ParametricActionsModel
from rljax.models import ModelCatalog
from rljax.networks.models import MaskedActorCritic
from rljax.tune.old_api import asks_for_old_stack, old_api_trainable
from rljax.utils.errors import ConfigError
from rljax.utils.replay_buffers.replay_buffer import StorageUnit


@pytest.mark.parametrize(
    "config, old",
    [
        ({"env": "CartPole-v1", "enable_rl_module_and_learner": False}, True),
        ({"env": "CartPole-v1", "enable_env_runner_and_connector_v2": False}, True),
        ({"env": "CartPole-v1", "model": {"custom_model": "m"}}, True),
        ({"env": "CartPole-v1", "model": {"fcnet_hiddens": [8]}}, False),
        ({"env": "CartPole-v1", "enable_rl_module_and_learner": True}, False),
        ({"env": "CartPole-v1", "num_workers": 2}, False),  # an old key: new stack in a Tuner
    ],
)
def test_a_tuner_dict_that_asks_for_the_old_stack_trains_rllib_1x_trainer(config, old):
    assert asks_for_old_stack(config) is old
    expected = trainer_class("PPO") if old else "PPO"
    assert old_api_trainable("PPO", config, old_keys=False) is expected
    # tune.run reads any old key as RLlib 1.x's dict, as before.
    assert old_api_trainable("PPO", {"num_workers": 2}) is trainer_class("PPO")


@pytest.mark.slow  # a Tuner trial of PPO (about 3 s)
def test_tuner_trains_rllibs_parametric_actions_example_config():
    """RLlib's ``parametric_actions_cartpole.py``: ``tune.Tuner("PPO", param_space={"model":
    {"custom_model": "pa_model"}, ...})``. Was: refused ("model={'custom_model': ...} is
    RLlib's old-stack API") though the old API takes registered Flax models."""
    from rljax import register_env
    from rljax.examples.envs.classes.parametric_actions_cartpole import ParametricActionsCartPole

    register_env("pa_cartpole_tuner", lambda _: ParametricActionsCartPole(10))
    ModelCatalog.register_custom_model("pa_model_tuner", ParametricActionsModel)
    config = {
        "env": "pa_cartpole_tuner",
        "model": {"custom_model": "pa_model_tuner"},
        "num_env_runners": 0,
        "framework": "torch",
        "train_batch_size": 256,
        "sgd_minibatch_size": 128,
        "num_sgd_iter": 1,
    }
    stop = {"training_iteration": 1}
    results = tune.Tuner("PPO", param_space=config, run_config=tune.RunConfig(stop=stop)).fit()
    result = results[0]
    assert result.error is None
    assert result.metrics["env_runners"]["num_env_steps_sampled"] >= 256
    assert result.metrics["training_iteration"] == 1


def test_old_api_trainer_takes_the_api_stack_switches():
    trainer = trainer_class("DQN")
    config = trainer.to_config(
        {
            "env": "CartPole-v1",
            "enable_rl_module_and_learner": False,
            "enable_env_runner_and_connector_v2": False,
            "hiddens": [],
            "dueling": False,
        }
    )
    assert config.dueling is False and tuple(config.model_config.head_fcnet_hiddens) == ()
    with pytest.raises(ConfigError, match="enable_rl_module_and_learner='no': a bool"):
        trainer.to_config({"env": "CartPole-v1", "enable_rl_module_and_learner": "no"})


def test_old_stack_replay_buffer_names_are_the_same_replay():
    config = DQNConfig().training(
        replay_buffer_config={
            "type": "MultiAgentPrioritizedReplayBuffer",
            "prioritized_replay_alpha": 0.5,
            "prioritized_replay_beta": 0.3,
            "storage_unit": StorageUnit.TIMESTEPS,
            "replay_burn_in": 0,
            "capacity": 2000,
        }
    )
    assert config.replay_buffer_config == {
        "type": "MultiAgentPrioritizedEpisodeReplayBuffer",
        "capacity": 2000,
        "alpha": 0.5,
        "beta": 0.3,
    }
    plain = DQNConfig().training(replay_buffer_config={"type": "ReplayBuffer"})
    assert plain.replay_buffer_config["type"] == "EpisodeReplayBuffer"


def test_old_trainer_maps_old_replay_names_beside_its_top_level_keys():
    """Was: ``buffer_size`` beside ``replay_buffer_config={"prioritized_replay_alpha": ...}``
    failed ("gives 'prioritized_replay_alpha' and 'alpha'"): the defaults were merged first."""
    config = trainer_class("DQN").to_config(
        {
            "env": "CartPole-v1",
            "buffer_size": 5000,
            "replay_buffer_config": {
                "type": "MultiAgentPrioritizedReplayBuffer",
                "prioritized_replay_alpha": 0.5,
            },
        }
    )
    assert config.replay_buffer_config["capacity"] == 5000
    assert config.replay_buffer_config["alpha"] == 0.5
    assert config.replay_buffer_config["type"] == "MultiAgentPrioritizedEpisodeReplayBuffer"


@pytest.mark.slow  # a Tuner trial of PPO, then its restore (about 3 s)
def test_a_tuner_experiment_on_the_old_stack_restores(tmp_path):
    """Was: ``Tuner.restore(path, "PPO")`` of an experiment the old-stack dict sent to
    ``PPOTrainer`` failed ("the experiment trained algorithm 'PPOTrainer'; got 'PPO'")."""
    config = {
        "env": "CartPole-v1",
        "enable_rl_module_and_learner": False,
        "train_batch_size": 128,
        "sgd_minibatch_size": 64,
        "num_sgd_iter": 1,
    }
    run = tune.RunConfig(stop={"training_iteration": 1}, storage_path=str(tmp_path), name="exp")
    assert tune.Tuner("PPO", param_space=config, run_config=run).fit()[0].error is None
    tuner = tune.Tuner.restore(str(tmp_path / "exp"), "PPO")
    assert tuner.trainable_name == "PPOTrainer"
    assert tuner._algo_configs[0].minibatch_size == 64  # the variant read as an old dict


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"storage_unit": StorageUnit.SEQUENCES}, "storage_unit'\\]=<StorageUnit.SEQUENCES"),
        ({"storage_unit": "episodes"}, "only 'timesteps'"),
        ({"replay_burn_in": 20}, "replay_burn_in'\\]=20: .*R2D2"),
        ({"replay_sequence_length": 20}, "replay_sequence_length'\\]=20"),
    ],
)
def test_recurrent_replay_is_refused_saying_why(extra, message):
    """RLlib's ``replay_buffer_api.py`` asks for sequences with burn-in (R2D2); refused before
    anything is built, not dropped."""
    with pytest.raises(ConfigError, match=message):
        DQNConfig().training(replay_buffer_config={"type": "PrioritizedReplayBuffer", **extra})


def test_discount_cumsum_by_hand():
    np.testing.assert_allclose(discount_cumsum(np.array([1.0, 2.0, 3.0]), 0.5), [2.75, 3.5, 3.0])
    with pytest.raises(ValueError, match="non-empty"):
        discount_cumsum(np.array([]), 0.5)


def test_compute_advantages_by_hand():
    # values [0.5, 0.5] then last_r 1: deltas 1 + 0.9 * 0.5 - 0.5 = 0.95 and 1 + 0.9 - 0.5 = 1.4;
    # lambda 1: advantages 0.95 + 0.9 * 1.4 = 2.21 and 1.4; targets add the values back.
    batch = compute_advantages(
        {"rewards": np.array([1.0, 1.0]), "vf_preds": np.array([0.5, 0.5])}, 1.0, 0.9, 1.0
    )
    np.testing.assert_allclose(batch[Postprocessing.ADVANTAGES], [2.21, 1.4], rtol=1e-6)
    np.testing.assert_allclose(batch[Postprocessing.VALUE_TARGETS], [2.71, 1.9], rtol=1e-6)
    assert batch[Postprocessing.ADVANTAGES].dtype == np.float32
    # Without GAE: returns [1 + 0.9 * (1 + 0.9 * 2), 1 + 0.9 * 2] = [3.52, 2.8].
    plain = compute_advantages(
        {"rewards": np.array([1.0, 1.0])}, 2.0, 0.9, use_gae=False, use_critic=False
    )
    np.testing.assert_allclose(plain[Postprocessing.ADVANTAGES], [3.52, 2.8], rtol=1e-6)
    np.testing.assert_array_equal(plain[Postprocessing.VALUE_TARGETS], [0.0, 0.0])
    with pytest.raises(ValueError, match="use_gae=True needs use_critic=True"):
        compute_advantages({"rewards": np.ones(2)}, 0.0, use_critic=False)


def test_action_mask_key_names_the_masks_key():
    space = gym.spaces.Dict(
        {
            "valid": gym.spaces.Box(0, 1, (3,), np.float32),
            "observations": gym.spaces.Box(-1, 1, (2,), np.float32),
        }
    )

    class Env(gym.Env):
        observation_space = space
        action_space = gym.spaces.Discrete(3)

        def __init__(self, config=None):
            pass

        def reset(self, *, seed=None, options=None):
            return space.sample(), {}

        def step(self, action):
            return space.sample(), 0.0, True, False, {}

    config = PPOConfig().environment(Env, action_mask_key="valid")
    with config.build_algo() as algo:
        assert isinstance(algo.module, MaskedActorCritic) and algo.module.mask_key == "valid"
        obs = {
            "valid": np.array([0.0, 0.0, 1.0], np.float32),
            "observations": np.zeros(2, np.float32),
        }
        assert {algo.compute_single_action(obs, explore=True) for _ in range(8)} == {2}
    with pytest.raises(ConfigError, match="action_mask_key=''"):
        PPOConfig().environment(action_mask_key="")


def test_an_old_hook_is_named_once_per_class(caplog):
    """Was: warned on every copy of the config (twice for one build)."""

    class OldHooks(RLlibCallback):
        def on_postprocess_trajectory(self, **kwargs):  # RLlib's old stack's hook
            pass

    with caplog.at_level(logging.WARNING, logger="rljax"):
        config = PPOConfig().environment("CartPole-v1").callbacks(OldHooks)
        config.copy().validate()
        config.copy()
    said = [r for r in caplog.records if "on_postprocess_trajectory" in r.getMessage()]
    assert len(said) == 1 and "rljax never calls" in said[0].getMessage()
