import logging
import time

import gymnasium as gym
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.utils import once
from rljax.utils.errors import ConfigError


def _base() -> PPOConfig:
    return PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=4)


def test_setters_chain_and_record():
    cfg = (
        _base()
        .training(lr=1e-3, gamma=0.95, lambda_=0.9, num_epochs=3, minibatch_size=64)
        .learners(num_learners=0)
        .rl_module(model_config={"fcnet_hiddens": [32], "vf_share_layers": False})
        .debugging(seed=3)
        .reporting(metrics_num_episodes_for_smoothing=20)
        .evaluation(evaluation_interval=2, evaluation_duration=3)
    )
    assert isinstance(cfg, PPOConfig)
    assert (cfg.lr, cfg.gamma, cfg.lambda_, cfg.num_epochs, cfg.minibatch_size) == (
        1e-3,
        0.95,
        0.9,
        3,
        64,
    )
    assert cfg.model_config == DefaultModelConfig(fcnet_hiddens=(32,), vf_share_layers=False)
    assert cfg.seed == 3 and cfg.metrics_num_episodes_for_smoothing == 20
    cfg.validate()


def test_rllib_defaults():
    cfg = PPOConfig()
    assert (cfg.lr, cfg.clip_param, cfg.vf_clip_param, cfg.kl_coeff, cfg.kl_target) == (
        5e-5,
        0.3,
        10.0,
        0.2,
        0.01,
    )
    assert (cfg.num_epochs, cfg.minibatch_size, cfg.train_batch_size_per_learner) == (30, 128, 4000)
    assert cfg.model_config.fcnet_hiddens == (256, 256) and cfg.model_config.vf_share_layers


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda c: c.training(lamda=0.9), "did you mean 'lambda_'"),
        (lambda c: c.training(sgd_minibatch_size=64), "calls it 'minibatch_size'"),
        (lambda c: c.env_runners(num_workers=2), "calls it 'num_env_runners'"),
        (lambda c: c.env_runners(num_env_runner=2), "did you mean 'num_env_runners'"),
        (lambda c: c.rl_module(model_config={"fcnet_hidden": [8]}), "did you mean 'fcnet_hiddens'"),
        (
            lambda c: c.rl_module(model_config={"fcnet_activation": "sigmoidish"}),
            "is not supported",
        ),
        (
            lambda c: c.env_runners(gym_env_vectorize_mode="PARALLEL"),
            "gym_env_vectorize_mode='PARALLEL'",
        ),
    ],
)
def test_setter_errors_name_the_fix(call, fragment):
    with pytest.raises(ConfigError, match=fragment):
        call(_base())


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (
            lambda c: c.training(minibatch_size=5000, train_batch_size_per_learner=4000),
            "minibatch_size=5000 is larger",
        ),
        (lambda c: c.training(lr=-1.0), "lr=-1.0"),
        (lambda c: c.training(gamma=1.5), "gamma=1.5"),
        (lambda c: c.training(num_epochs=0), "num_epochs=0"),
        (lambda c: c.training(minibatch_size=12.5), "minibatch_size=12.5"),
        (lambda c: c.env_runners(num_envs_per_env_runner=0), "num_envs_per_env_runner=0"),
        (lambda c: c.env_runners(num_env_runners=-1), "num_env_runners=-1"),
        (lambda c: c.environment("CartPol-v1"), "did you mean 'CartPole-v1'"),
        (lambda c: c.environment(None), "no environment"),
        (
            lambda c: (
                c.env_runners(num_envs_per_env_runner=3, rollout_fragment_length=3)
                .learners(num_learners=2)
                .training(minibatch_size=2)
            ),
            "does not divide across num_learners=2",
        ),
        (
            lambda c: c.env_runners(num_envs_per_env_runner=1, gym_env_vectorize_mode="ASYNC"),
            "EnvPool ASYNC needs",
        ),
        (lambda c: c.evaluation(evaluation_duration_unit="hours"), "evaluation_duration_unit"),
    ],
)
def test_validate_rejects_impossible_settings_fast(mutate, fragment):
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=fragment):  # in the setter, or in build_algo()
        mutate(_base()).build_algo()
    assert time.perf_counter() - start < 5.0  # before anything compiles


def test_devices_beyond_what_exists_fail_at_once():
    with pytest.raises(ConfigError, match="GPU"):
        _base().learners(num_gpus_per_learner=1).build_algo()
    with pytest.raises(ConfigError, match="num_gpus_per_env_runner"):
        _base().env_runners(num_gpus_per_env_runner=1).build_algo()


def test_more_cpu_learners_than_devices_share_one_device(caplog, monkeypatch):
    """RLlib's num_learners=2 on a one-device CPU: both learners' shards of the batch in one
    program on that device (tests/algorithms/multidevice_check.py shows that program's update
    equals the one on a device per learner)."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .learners(num_learners=2, num_gpus_per_learner=0)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    monkeypatch.setitem(once.SAID, "learners", set())  # said once per process
    with caplog.at_level(logging.WARNING, logger="rljax"), config.build_algo() as algo:
        assert algo.mesh is None and len(algo.learner_devices) == 1 and algo.hp.num_shards == 2
        result = algo.train()
    assert "the 2 learners share one device" in caplog.text
    assert result["num_env_steps_sampled_lifetime"] == 2 * 64  # each learner's batch
    assert np.isfinite(result["learners"]["default_policy"]["policy_loss"])


def test_vectorize_mode_accepts_gymnasium_enum():
    cfg = _base().env_runners(
        gym_env_vectorize_mode=gym.VectorizeMode.ASYNC, num_envs_per_env_runner=4
    )
    assert cfg.gym_env_vectorize_mode == "ASYNC"
    cfg = _base().env_runners(gym_env_vectorize_mode="sync")
    assert cfg.gym_env_vectorize_mode == "SYNC"


def test_auto_fragment_length_covers_the_batch():
    cfg = (
        _base().env_runners(num_envs_per_env_runner=16).training(train_batch_size_per_learner=4000)
    )
    assert cfg.get_rollout_fragment_length() == 250 and cfg.sampled_batch_size == 4000
    cfg = cfg.env_runners(
        num_envs_per_env_runner=16, gym_env_vectorize_mode="ASYNC", async_batch_size=8
    )
    assert cfg.envs_per_step == 8 and cfg.get_rollout_fragment_length() == 500


def test_dict_and_yaml_round_trip(tmp_path):
    cfg = (
        _base()
        .training(lr=2e-4, vf_clip_param=None)
        .rl_module(model_config={"fcnet_hiddens": [16, 16]})
    )
    d = cfg.to_dict()
    again = PPOConfig.from_dict(d)
    assert again.to_dict() == d
    path = tmp_path / "ppo.yaml"
    path.write_text(
        "env: CartPole-v1\nconfig:\n  lr: 0.001\n  num_epochs: 4\n  model_config:\n    fcnet_hiddens: [8]\n"
    )
    loaded = PPOConfig.from_yaml(path)
    assert (loaded.env, loaded.lr, loaded.num_epochs, loaded.model_config.fcnet_hiddens) == (
        "CartPole-v1",
        1e-3,
        4,
        (8,),
    )
    path.write_text("lr: 0.001\nnum_sgd_iter: 3\n")
    with pytest.raises(ConfigError, match="num_epochs"):
        PPOConfig.from_yaml(path)


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (5 s alone)
def test_total_train_batch_size_splits_across_learners():
    cfg = _base().training(train_batch_size=4000)
    algo = cfg.build_algo()
    try:
        assert algo.config.train_batch_size_per_learner == 4000
    finally:
        algo.stop()


def test_from_yaml_names_a_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        PPOConfig.from_yaml(tmp_path / "missing.yaml")


def test_episode_metrics_are_per_iteration_as_rllib_reports_them():
    import math

    import numpy as np

    from rljax.algorithms.algorithm import EpisodeStats

    stats = EpisodeStats(window=3)
    stats.add(np.array([10.0, 20.0]), np.array([10, 20]))
    assert stats.summary()["episode_return_mean"] == 15.0
    # The next iteration's episodes replace the last ones; only the newest `window` count.
    stats.add(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1, 2, 3, 4]))
    summary = stats.summary()
    assert summary["episode_return_mean"] == 3.0
    assert (summary["episode_len_min"], summary["episode_len_max"]) == (2, 4)
    stats.add(np.array([]), np.array([], int))  # no episode finished this iteration
    assert math.isnan(stats.summary()["episode_return_mean"])
    assert stats.num_episodes_lifetime == 6


def test_the_base_from_dict_builds_the_algorithm_the_dict_names():
    """Was: ``AlgorithmConfig.from_dict(ppo_config.to_dict())`` raised "this dict is a 'PPO'
    config, not Algorithm"."""
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.algorithms.ppo import PPOConfig

    d = PPOConfig().environment("CartPole-v1").training(lr=0.01).to_dict()
    config = AlgorithmConfig.from_dict(d)
    assert type(config) is PPOConfig and config.lr == 0.01 and config.env == "CartPole-v1"
