"""RLlib 1.x's dict config keys, by hand: each old key lands on the right new setting and
value, the keys without effect say so once, and every key not accepted is named in one error."""

from __future__ import annotations

import logging

import pytest

from rljax.agents import config_table
from rljax.agents.ppo import DEFAULT_CONFIG as PPO_DEFAULT_CONFIG
from rljax.agents.ppo import PPOTrainer
from rljax.agents.trainer import old_result_keys
from rljax.algorithms import registry
from rljax.utils import once
from rljax.utils.errors import ConfigError


def new_config(algo: str, old: dict):
    """The new config the trainer of ``algo`` builds from ``old`` (not yet validated)."""
    from rljax.agents import trainer_class

    return trainer_class(algo).to_config(old)


@pytest.fixture(autouse=True)
def fresh_notes(monkeypatch):
    monkeypatch.setitem(once.SAID, "old_api", set())


@pytest.mark.parametrize(
    "old, setting, value",
    [
        ({"num_workers": 3}, "num_env_runners", 3),
        ({"num_rollout_workers": 2}, "num_env_runners", 2),
        ({"num_envs_per_worker": 4}, "num_envs_per_env_runner", 4),
        ({"num_cpus_per_worker": 2}, "num_cpus_per_env_runner", 2),
        ({"sgd_minibatch_size": 64}, "minibatch_size", 64),
        ({"num_sgd_iter": 7}, "num_epochs", 7),
        ({"lambda": 0.9}, "lambda_", 0.9),
        ({"shuffle_sequences": False}, "shuffle_batch_per_epoch", False),
        ({"lr": 5e-4}, "lr", 5e-4),
        ({"clip_param": 0.1}, "clip_param", 0.1),
        ({"vf_loss_coeff": 0.5}, "vf_loss_coeff", 0.5),
        ({"entropy_coeff": 0.01}, "entropy_coeff", 0.01),
        ({"train_batch_size": 2000}, "train_batch_size", 2000),
        ({"metrics_smoothing_episodes": 7}, "metrics_num_episodes_for_smoothing", 7),
        ({"evaluation_num_workers": 2}, "evaluation_num_env_runners", 2),
        ({"ignore_worker_failures": True}, "ignore_env_runner_failures", True),
        ({"recreate_failed_workers": False}, "restart_failed_env_runners", False),
        ({"log_level": "INFO"}, "log_level", "INFO"),
    ],
)
def test_ppo_old_key_maps_to_its_setting(old, setting, value):
    assert getattr(new_config("PPO", old), setting) == value


def test_model_keys_land_in_model_config():
    c = new_config(
        "PPO",
        {
            "model": {"fcnet_hiddens": [32, 16], "fcnet_activation": "relu"},
            "vf_share_layers": False,
        },
    )
    assert tuple(c.model_config.fcnet_hiddens) == (32, 16)
    assert c.model_config.fcnet_activation == "relu"
    assert c.model_config.vf_share_layers is False


def test_evaluation_num_episodes_sets_duration_in_episodes():
    c = new_config("PPO", {"evaluation_num_episodes": 4})
    assert (c.evaluation_duration, c.evaluation_duration_unit) == (4, "episodes")


def test_dqn_keys():
    c = new_config(
        "DQN",
        {
            "buffer_size": 5000,
            "prioritized_replay": False,
            "learning_starts": 123,
            "timesteps_per_iteration": 400,
            "target_network_update_freq": 777,
            "hiddens": [64],
            "model": {"conv_filters": [[16, [4, 4], 2]]},
        },
    )
    assert c.replay_buffer_config["capacity"] == 5000
    assert c.replay_buffer_config["type"] == "EpisodeReplayBuffer"
    assert c.num_steps_sampled_before_learning_starts == 123
    assert c.min_sample_timesteps_per_iteration == 400
    assert c.target_network_update_freq == 777
    assert tuple(c.model_config.head_fcnet_hiddens) == (64,)
    assert c.model_config.conv_filters == ((16, (4, 4), 2),)


def test_dqn_exploration_fraction_is_an_epsilon_schedule():
    # RLlib 1.x: epsilon falls linearly from 1.0 over exploration_fraction of
    # schedule_max_timesteps (default 100,000), then stays at exploration_final_eps.
    c = new_config("DQN", {"exploration_fraction": 0.1, "exploration_final_eps": 0.01})
    assert c.epsilon == [(0, 1.0), (10_000, 0.01)]
    c = new_config(
        "DQN",
        {"exploration_fraction": 0.5, "schedule_max_timesteps": 2000, "exploration_final_eps": 0.1},
    )
    assert c.epsilon == [(0, 1.0), (1000, 0.1)]


def test_dqn_exploration_config_epsilon_greedy():
    c = new_config(
        "DQN",
        {
            "exploration_config": {
                "type": "EpsilonGreedy",
                "initial_epsilon": 0.8,
                "final_epsilon": 0.05,
                "epsilon_timesteps": 5000,
            }
        },
    )
    assert c.epsilon == [(0, 0.8), (5000, 0.05)]


@pytest.mark.parametrize("algo", ["PPO", "DQN"])
def test_a_schedule_wins_over_the_plain_value_in_either_order(algo):
    """Was: a later "lr" (or "entropy_coeff") replaced an earlier "lr_schedule" unsaid."""
    schedule = [[0, 1e-2], [100_000, 1e-4]]
    for old in ({"lr": 5e-5, "lr_schedule": schedule}, {"lr_schedule": schedule, "lr": 5e-5}):
        assert list(new_config(algo, old).lr) == [(0, 1e-2), (100_000, 1e-4)]
    assert new_config(algo, {"lr_schedule": None, "lr": 5e-5}).lr == 5e-5
    if algo == "PPO":
        ent = [[0, 0.01], [1000, 0.0]]
        c = new_config(algo, {"entropy_coeff_schedule": ent, "entropy_coeff": 0.01})
        assert list(c.entropy_coeff) == [(0, 0.01), (1000, 0.0)]


def test_exploration_config_keys_are_checked_not_dropped():
    """Was: misspelled or unsupported keys inside exploration_config were dropped unsaid."""
    with pytest.raises(ConfigError, match=r"got unknown keys \['final_epislon'\].*final_epsilon"):
        new_config("DQN", {"exploration_config": {"type": "EpsilonGreedy", "final_epislon": 0.1}})
    with pytest.raises(ConfigError, match=r"unknown keys \['stdev'\].*did you mean 'stddev'"):
        new_config("TD3", {"exploration_config": {"type": "GaussianNoise", "stdev": 0.5}})
    with pytest.raises(ConfigError, match="initial_scale=1.0, final_scale=0.02: .*constant scale"):
        new_config("TD3", {"exploration_config": {"initial_scale": 1.0, "final_scale": 0.02}})
    with pytest.raises(ConfigError, match="random_timesteps.*set that instead"):
        new_config("TD3", {"exploration_config": {"stddev": 0.3, "random_timesteps": 5000}})
    with pytest.raises(ConfigError, match="expected numbers"):
        new_config("DQN", {"exploration_fraction": "0.5"})
    # RLlib's full class path names the class; warmup holds epsilon before its decay.
    path = "ray.rllib.utils.exploration.epsilon_greedy.EpsilonGreedy"
    c = new_config(
        "DQN",
        {"exploration_config": {"type": path, "warmup_timesteps": 100, "epsilon_timesteps": 900}},
    )
    assert c.epsilon == [(0, 1.0), (100, 1.0), (1000, 0.05)]
    # StochasticSampling, PPO's and SAC's default, is what they do: accepted.
    c = new_config("PPO", {"exploration_config": {"type": "StochasticSampling"}})
    new_config("PPO", {"exploration_config": {"type": "StochasticSampling", "random_timesteps": 0}})
    with pytest.raises(ConfigError, match="samples from its policy from the first step"):
        new_config("SAC", {"exploration_config": {"random_timesteps": 100}})
    with pytest.raises(ConfigError, match="DQN here explores with EpsilonGreedy"):
        new_config("DQN", {"exploration_config": {"type": "StochasticSampling"}})


def test_sac_nested_forms():
    c = new_config(
        "SAC",
        {
            "q_model_config": {"fcnet_hiddens": [64, 64]},
            "policy_model_config": {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"},
            "optimization": {
                "actor_learning_rate": 1e-4,
                "critic_learning_rate": 2e-4,
                "entropy_learning_rate": 3e-4,
            },
            "tau": 0.01,
            "buffer_size": 9000,
        },
    )
    assert (c.actor_lr, c.critic_lr, c.alpha_lr) == (1e-4, 2e-4, 3e-4)
    assert tuple(c.model_config.fcnet_hiddens) == (64, 64)
    assert c.model_config.fcnet_activation == "tanh"
    assert c.tau == 0.01
    assert c.replay_buffer_config["capacity"] == 9000


def test_sac_networks_that_differ_are_refused():
    with pytest.raises(ConfigError, match="share one model_config"):
        new_config(
            "SAC",
            {
                "q_model_config": {"fcnet_hiddens": [256, 256]},
                "policy_model_config": {"fcnet_hiddens": [64]},
            },
        )


def test_td3_keys():
    c = new_config(
        "TD3",
        {
            "exploration_config": {"type": "GaussianNoise", "stddev": 0.2},
            "optimization": {"actor_learning_rate": 1e-3, "critic_learning_rate": 2e-3},
            "actor_hiddens": [64, 64],
        },
    )
    assert c.exploration_noise == 0.2
    assert (c.actor_lr, c.critic_lr) == (1e-3, 2e-3)
    assert tuple(c.model_config.fcnet_hiddens) == (64, 64)


def test_multiagent_dict():
    import gymnasium as gym

    import rljax

    obs, act = gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2)
    rljax.register_env("seed_tutorial_table_env", lambda cfg: None)
    c = new_config(
        "PPO",
        {
            "env": "seed_tutorial_table_env",
            "multiagent": {
                "policies": {"p1": (None, obs, act, {"lr": 1e-4}), "p2": None},
                "policy_mapping_fn": lambda agent_id: "p1",
                "policies_to_train": ["p1"],
            },
        },
    )
    assert list(c.policies) == ["p1", "p2"]
    assert c.policies["p1"].config == {"lr": 1e-4}
    assert c.policies_to_train == ["p1"]
    assert c.policy_mapping_fn("a") == "p1"
    # The name stays (configs and checkpoints store it); its creator now reads old envs.
    assert c.env == "seed_tutorial_table_env"
    from rljax.env.registry import registered_creator

    assert type(registered_creator("seed_tutorial_table_env")).__name__ == "OldEnvCreator"
    assert c.to_dict()["env"] == "seed_tutorial_table_env"


def test_multiagent_env_name_not_registered():
    with pytest.raises(ConfigError, match="'nowhere_env' is not registered"):
        new_config("PPO", {"env": "nowhere_env", "multiagent": {"policies": ["p"]}})


def test_framework_and_missing_gpu_are_noted_once(caplog):
    with caplog.at_level(logging.WARNING, logger="rljax"):
        for _ in range(2):
            c = new_config("PPO", {"framework": "torch", "num_gpus": 1, "eager_tracing": True})
    notes = [r.getMessage() for r in caplog.records if "old API" in r.getMessage()]
    assert len([n for n in notes if "framework='torch'" in n]) == 1
    assert len([n for n in notes if "eager_tracing" in n]) == 1
    if not config_table.gpu_visible():
        assert len([n for n in notes if "JAX sees no GPU" in n]) == 1
        assert c.num_gpus_per_learner == 0
    else:
        assert c.num_gpus_per_learner == 1


def test_unknown_and_misplaced_keys_are_all_in_one_error():
    with pytest.raises(ConfigError) as e:
        new_config(
            "PPO",
            {
                "learning_rate": 5e-4,  # the tutorial's own: RLlib calls it lr
                "num_sgd_iters": 3,
                "buffer_size": 1000,  # DQN/SAC/TD3's
                "entropy_coef": 0.1,
                "no_such_thing_at_all": 1,
            },
        )
    msg = str(e.value)
    assert "5 key(s) not accepted" in msg
    assert "'learning_rate' is unknown (did you mean 'lr'?)" in msg
    assert "'num_sgd_iters' is unknown (did you mean 'num_sgd_iter'?)" in msg
    assert "'buffer_size' is a setting of DQN/SAC/TD3, not PPO" in msg
    assert "'entropy_coef' is unknown (did you mean 'entropy_coeff'?)" in msg
    assert "'no_such_thing_at_all' is unknown" in msg


def test_nested_unknown_keys_are_named():
    with pytest.raises(ConfigError) as e:
        new_config("SAC", {"optimization": {"actor_lr": 1e-3}, "multiagent": {"policy": {}}})
    msg = str(e.value)
    assert "optimization['actor_lr'] is not one of actor_learning_rate" in msg
    assert "multiagent['policy'] is not one of policies" in msg


def test_bad_values_fail_before_anything_is_built():
    with pytest.raises(ConfigError, match="num_env_runners"):
        PPOTrainer(config={"env": "CartPole-v1", "num_workers": -1})
    with pytest.raises(ConfigError, match="takes a dict"):
        PPOTrainer(config=["env", "CartPole-v1"])


def test_default_config_is_the_new_defaults_by_old_names():
    assert PPO_DEFAULT_CONFIG["num_workers"] == 0
    assert PPO_DEFAULT_CONFIG["sgd_minibatch_size"] == registry.config_class("PPO")().minibatch_size
    assert PPO_DEFAULT_CONFIG["lambda"] == registry.config_class("PPO")().lambda_
    # The trainer takes it back unchanged.
    c = new_config("PPO", {**PPO_DEFAULT_CONFIG, "env": "CartPole-v1"})
    assert c.to_dict() == {
        **registry.config_class("PPO")().to_dict(),
        "env": "CartPole-v1",
    }


def test_old_result_keys_from_a_new_result():
    new = {
        "env_runners": {
            "episode_return_mean": 21.5,
            "episode_return_max": 40.0,
            "episode_return_min": 9.0,
            "episode_len_mean": 21.5,
            "num_episodes": 4,
            "num_episodes_lifetime": 10,
            "num_env_steps_sampled": 100,
        },
        "learners": {
            "default_policy": {"total_loss": 1.5},
            "__all_modules__": {"num_env_steps_trained": 100},
        },
        "num_env_steps_sampled_lifetime": 300,
        "num_env_steps_trained_lifetime": 280,
    }
    old = old_result_keys(new)
    assert old["episode_reward_mean"] == 21.5
    assert old["episode_reward_max"] == 40.0
    assert old["episode_reward_min"] == 9.0
    assert old["episode_len_mean"] == 21.5
    assert old["episodes_this_iter"] == 4
    assert old["episodes_total"] == 10
    assert old["timesteps_total"] == 300
    assert old["info"]["learner"]["default_policy"]["total_loss"] == 1.5
    assert old["info"]["learner"]["default_policy"]["learner_stats"]["total_loss"] == 1.5
    assert "__all_modules__" not in old["info"]["learner"]
    assert old["info"]["num_steps_trained"] == 280


def test_new_config_update_from_dict_names_every_old_key_and_the_trainer():
    from rljax.algorithms.ppo import PPOConfig

    with pytest.raises(ConfigError) as e:
        PPOConfig().update_from_dict({"num_sgd_iterr": 2, "sgd_minibatch_size": 64, "lr": 1e-3})
    msg = str(e.value)
    assert "'num_sgd_iterr' (did you mean 'num_epochs' (RLlib's old name 'num_sgd_iter')?)" in msg
    assert "'sgd_minibatch_size' (RLlib's new API stack calls it 'minibatch_size')" in msg
    assert "rljax.agents.ppo.PPOTrainer(config=d)" in msg


@pytest.mark.parametrize(
    "algo, module, name, env",
    [
        ("PPO", "ppo", "PPOTrainer", "CartPole-v1"),
        ("DQN", "dqn", "DQNTrainer", "CartPole-v1"),
        ("SAC", "sac", "SACTrainer", "Pendulum-v1"),
        ("TD3", "td3", "TD3Trainer", "Pendulum-v1"),
        ("IMPALA", "impala", "ImpalaTrainer", "CartPole-v1"),
        ("APPO", "appo", "APPOTrainer", "CartPole-v1"),
    ],
)
def test_each_trainer_takes_its_default_config_back(algo, module, name, env):
    import importlib

    from rljax.algorithms.algorithm import Algorithm

    mod = importlib.import_module(f"rljax.agents.{module}")
    trainer = getattr(mod, name)
    assert issubclass(trainer, Algorithm) and trainer.algo_name == algo
    c = trainer.to_config({**mod.DEFAULT_CONFIG, "env": env, "num_workers": 1})
    assert c.checked_algo_class() is trainer
    assert c.num_env_runners == 1
    assert c.to_dict() == {
        **registry.config_class(algo)().to_dict(),
        "env": env,
        "num_env_runners": 1,
    }


@pytest.mark.parametrize(
    ("algo", "old", "setting", "value"),
    [
        ("IMPALA", {"num_sgd_iter": 2}, "num_epochs", 2),  # was refused as PPO's
        ("APPO", {"num_sgd_iter": 3}, "num_epochs", 3),
        ("APPO", {"use_critic": True}, "num_epochs", 1),
        ("IMPALA", {"replay_proportion": 0.0}, "num_epochs", 1),
        ("PPO", {"horizon": None, "soft_horizon": False, "no_done_at_end": False}, "lr", 5e-5),
    ],
)
def test_rllib_1x_keys_of_impala_appo_and_the_horizon(algo, old, setting, value):
    assert getattr(new_config(algo, {"env": "CartPole-v1", **old}), setting) == value


@pytest.mark.parametrize(
    ("algo", "old", "message"),
    [
        ("APPO", {"use_critic": False}, "always learns its critic"),
        ("IMPALA", {"replay_proportion": 0.5}, "fresh batches only"),
        ("PPO", {"horizon": 200}, r"TimeLimit\(env, max_episode_steps=N\)"),
        ("PPO", {"no_done_at_end": True}, "no sampler-side horizon"),
        # Checked as on a host with GPUs (was: accepted with a no-GPU note).
        ("PPO", {"num_gpus": "abc"}, "num_gpus='abc': expected a number of GPUs >= 0"),
        ("PPO", {"num_gpus_per_worker": -2}, "num_gpus_per_worker=-2: expected a number"),
    ],
)
def test_rllib_1x_keys_that_do_not_apply_are_refused_saying_why(algo, old, message):
    with pytest.raises(ConfigError, match=message):
        new_config(algo, {"env": "CartPole-v1", **old})
