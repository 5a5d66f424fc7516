"""RLlib's settings rljax lacks, its API-stack and framework switches, deprecated names, and
the registry's algorithm classes."""

from __future__ import annotations

import logging

import pytest

from rljax.algorithms.appo import APPOConfig
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.impala import IMPALAConfig
from rljax.algorithms.ppo import PPO, PPOConfig
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.tune.registry import get_trainable_cls
from rljax.utils import once
from rljax.utils.errors import ConfigError


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda c: c.update_from_dict({"enable_connectors": False}),
            "rljax has only RLlib's new API stack",
        ),
        (
            lambda c: c.env_runners(observation_filter="MeanStdFilter"),
            "env_to_module_connector=lambda env, spaces, device: MeanStdFilter",
        ),
        (lambda c: c.environment(normalize_actions=True), "clipped to the space's bounds"),
        (
            lambda c: APPOConfig().training(_separate_vf_optimizer=True, _lr_vf=1e-3),
            "old API stack's IMPALA/APPO option",
        ),
    ],
)
def test_rllib_only_settings_are_refused_with_what_to_do(call, message):
    with pytest.raises(ConfigError, match=message) as e:
        call(PPOConfig())
    assert "is RLlib's" in str(e.value) and "did you mean" not in str(e.value)


def test_rllib_settings_without_effect_are_accepted_and_said_once(caplog, monkeypatch):
    monkeypatch.setitem(once.SAID, "rllib_only", set())
    config = PPOConfig().env_runners(create_env_on_local_worker=True, num_envs_per_env_runner=2)
    config.env_runners(create_env_on_local_worker=True, batch_mode="truncate_episodes")
    said = [
        r.getMessage() for r in caplog.records if "create_env_on_local_worker" in r.getMessage()
    ]
    assert len(said) == 1 and "has no effect in rljax" in said[0]
    assert config.num_envs_per_env_runner == 2
    # RLlib 2.60's tuned examples set these; nothing here to convert or to separate.
    config.env_runners(episodes_to_numpy=False)
    APPOConfig().training(_separate_vf_optimizer=False)
    # An RLlib config's dict holds _lr_vf (0.0005) beside _separate_vf_optimizer=False: it loads.
    loaded = IMPALAConfig().update_from_dict({"_separate_vf_optimizer": False, "_lr_vf": 0.0005})
    assert loaded.lr == IMPALAConfig().lr
    said = [r.getMessage() for r in caplog.records]
    assert any("episodes_to_numpy=False has no effect in rljax" in m for m in said)
    assert any("_separate_vf_optimizer=False has no effect in rljax" in m for m in said)
    assert any("_lr_vf=0.0005 has no effect in rljax" in m for m in said)


def test_api_stack_off_asks_for_the_old_stack_and_a_framework_warns_once(caplog, monkeypatch):
    # Was: an error. Either switch off is RLlib's old stack (rljax.agents' trainer builds).
    assert PPOConfig().api_stack(enable_rl_module_and_learner=False).is_old_api_stack
    assert PPOConfig().api_stack(True, False).is_old_api_stack
    config = PPOConfig().api_stack(True, True)
    assert config.enable_rl_module_and_learner and config.enable_env_runner_and_connector_v2
    assert not config.is_old_api_stack
    monkeypatch.setitem(once.SAID, "config", set())  # said once per process
    with caplog.at_level(logging.WARNING, logger="rljax"):
        PPOConfig().framework("torch")
        PPOConfig().framework("tf2", eager_tracing=True)
        PPOConfig().framework("jax")
    said = [r.getMessage() for r in caplog.records if "framework(" in r.getMessage()]
    assert said == [
        "framework('torch'): rljax's models run in JAX (with XLA); the setting has no effect"
    ]


def test_deprecated_names_set_the_current_setting(caplog):
    config = PPOConfig().training(mini_batch_size_per_learner=64)
    assert config.minibatch_size == 64
    config = PPOConfig().rl_module(model_config_dict={"fcnet_hiddens": [8]})
    assert config.model_config.fcnet_hiddens == (8,)
    assert PPOConfig().update_from_dict({"mini_batch_size_per_learner": 32}).minibatch_size == 32
    with pytest.raises(ConfigError, match="'minibatch_size' twice"):
        PPOConfig().training(minibatch_size=32, mini_batch_size_per_learner=64)
    # RLlib's old-stack model keys that the new stack renamed.
    mc = DefaultModelConfig.from_any({"post_fcnet_hiddens": [4], "post_fcnet_activation": None})
    assert mc.head_fcnet_hiddens == (4,) and mc.head_fcnet_activation == "linear"


def test_get_trainable_cls_and_default_configs():
    assert get_trainable_cls("PPO") is PPO
    config = get_trainable_cls("DQN").get_default_config()
    assert isinstance(config, DQNConfig) and config.algo_class is get_trainable_cls("DQN")
    assert PPO.get_default_config().to_dict() == PPOConfig().to_dict()
    with pytest.raises(
        ConfigError, match=r"get_trainable_cls\('ppo'\): no such algorithm \(did you mean 'PPO'\?\)"
    ):
        get_trainable_cls("ppo")
    with pytest.raises(ConfigError, match="rljax has"):
        get_trainable_cls("DreamerV3")
    from rljax.algorithms.cql import CQL
    from rljax.algorithms.iql import IQL
    from rljax.algorithms.marwil import BC, MARWIL

    assert get_trainable_cls("MARWIL") is MARWIL and get_trainable_cls("BC") is BC
    assert get_trainable_cls("CQL") is CQL and get_trainable_cls("IQL") is IQL


def test_old_stack_env_runner_settings_at_rllibs_defaults_are_accepted_and_others_refused():
    # RLlib 2.60's migration guide lists these as settings its new stack ignores; at RLlib's
    # defaults they change nothing here either, other values are refused with what to do.
    config = PPOConfig().env_runners(
        sample_collector=None,
        remote_worker_envs=False,
        remote_env_batch_wait_ms=0,
        preprocessor_pref="deepmind",
        enable_tf1_exec_eagerly=False,
        sampler_perf_stats_ema_coef=None,
        exploration_config={"type": "StochasticSampling"},
        num_envs_per_env_runner=3,
    )
    assert config.num_envs_per_env_runner == 3
    # RLlib's fault-tolerance settings of the training loop; rljax replaces runners in-step.
    config.fault_tolerance(
        num_consecutive_env_runner_failures_tolerance=3,
        delay_between_env_runner_restarts_s=1.0,
        env_runner_restore_timeout_s=60.0,
        max_num_env_runner_restarts=5,
    )
    assert config.max_num_env_runner_restarts == 5
    with pytest.raises(ConfigError, match="remote_worker_envs=True is RLlib's.*'ASYNC'"):
        PPOConfig().env_runners(remote_worker_envs=True)
    with pytest.raises(ConfigError, match="exploration_config=.*EpsilonGreedy.*use epsilon"):
        PPOConfig().env_runners(exploration_config={"type": "EpsilonGreedy"})


def test_rllib_260s_multi_agent_setter_forms():
    """Were refused: a policies_to_train function, count_steps_by, and
    .rl_module(algorithm_config_overrides_per_module=...) (RLlib 2.60's place for it), whose
    error suggested the name it had refused."""
    asked = []

    def trains(module_id, batch=None):
        asked.append((module_id, batch))
        return module_id == "p0"

    config = PPOConfig().multi_agent(
        policies={"p0", "p1"},
        policy_mapping_fn=lambda aid, ep, **kw: f"p{aid}",
        policies_to_train=trains,
        count_steps_by="env_steps",
    )
    assert config.policies_to_train == ["p0"] and sorted(asked) == [("p0", None), ("p1", None)]
    config.rl_module(algorithm_config_overrides_per_module={"p1": {"lr": 1e-4}})
    assert config.algorithm_config_overrides_per_module == {"p1": {"lr": 1e-4}}
    with pytest.raises(ConfigError, match=r"count_steps_by='agent_steps'\): rljax's multi-agent"):
        PPOConfig().multi_agent(count_steps_by="agent_steps")
    with pytest.raises(ConfigError, match=r"unknown keyword 'lr'; it is set by .training\(lr="):
        PPOConfig().rl_module(lr=1.0)
    with pytest.raises(ConfigError, match="policies_to_train as a function needs the policies"):
        PPOConfig().multi_agent(policies_to_train=trains)


def test_learners_takes_the_settings_rllib_260_moved_there(caplog):
    """RLlib 2.60's ``.learners()`` takes ``learner_config_dict`` and the learner pipeline's
    settings (``.training()`` still does). Was: unknown keywords."""
    config = PPOConfig().learners(learner_config_dict={"foo": 1}, num_learners=0)
    assert config.learner_config_dict == {"foo": 1} and config.num_learners == 0
    PPOConfig().learners(
        add_default_connectors_to_learner_pipeline=True,
        custom_resources_per_learner={"a": 1},
        max_requests_in_flight_per_learner=3,
        local_gpu_idx=0,
    )
    with pytest.raises(ConfigError, match=r"^\.learners\(\): add_default.*cannot be left out"):
        PPOConfig().learners(add_default_connectors_to_learner_pipeline=False)
    # A refusal names the call written (was: .training(), where the setting is kept).
    with pytest.raises(ConfigError, match=r"^\.learners\(\): learner_connector="):
        PPOConfig().learners(learner_connector=lambda *a: None)
    with pytest.raises(ConfigError, match="CUDA_VISIBLE_DEVICES"):
        PPOConfig().learners(local_gpu_idx=1)


def test_a_learning_rate_of_zero_is_taken_as_rllib_takes_it():
    """RLlib's Atari scripts compute ``lr * num_gpus``, 0 without a GPU. Was: refused."""
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.impala import IMPALAConfig

    for config in (PPOConfig(), IMPALAConfig(), DQNConfig()):
        assert config.training(lr=0.0).lr == 0.0
        with pytest.raises(ConfigError, match="lr=-0.1"):
            config.training(lr=-0.1)
