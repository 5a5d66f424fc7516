"""The loop contract's typed result and the one function that turns it into RLlib's dict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.execution.loop import AgentMetrics, IterationResult, Timers, single_policy
from rljax.execution.on_policy import SampleRecord, runner_group_metrics, runner_lag
from rljax.execution.results import IterationTotals, module_learner_figures, result_dict


def _totals(**kw) -> IterationTotals:
    base = dict(
        iteration=3,
        elapsed_s=2.0,
        time_total_s=7.5,
        num_env_steps_sampled_lifetime=900,
        num_env_steps_trained_lifetime=800,
        episodes={"episode_return_mean": 4.0, "episode_len_mean": 10.0},
        num_episodes_lifetime=12,
        env_runner_metrics={"my_metric": 1.5},
        num_non_finite_updates=1,
        num_non_finite_updates_lifetime=2,
        num_non_finite_weights_loaded=0,
        fault_tolerance={"num_healthy_workers": 2},
    )
    return IterationTotals(**{**base, **kw})


def _records() -> list[SampleRecord]:
    # Update at version 4 took fragments (slot, version) (0, 4), (0, 3); update at 5 took (1, 2).
    return [
        SampleRecord([0, 0], [4, 3], [10, 10], [0.5, 0.5], [0.1, 0.3], 4, 0.2),
        SampleRecord([1], [2], [10], [2.0], [0.0], 5, 0.4),
    ]


def test_timers_keep_only_what_was_measured_in_a_fixed_order():
    timers = Timers(learner_update_timer=0.25, training_step=1.0, population_step_s=3.0)
    assert timers.as_dict() == {
        "training_step": 1.0,
        "learner_update_timer": 0.25,
        "population_step_s": 3.0,
    }
    assert list(timers.as_dict()) == ["training_step", "learner_update_timer", "population_step_s"]
    assert Timers().as_dict() == {}


def test_runner_lag_is_the_typed_runner_group_metrics():
    lag = runner_lag(_records(), num_runners=3)
    assert lag.policy_lag_mean == pytest.approx(4 / 3)
    assert lag.policy_lag_max == 3
    assert lag.learner_wait_s == pytest.approx(0.6)
    assert lag.per_runner[0].num_fragments == 2 and lag.per_runner[0].policy_lag == 0.5
    assert lag.per_runner[1].env_steps_per_s == 5.0
    assert lag.per_runner[2].num_fragments == 0 and math.isnan(lag.per_runner[2].policy_lag)
    as_dict = runner_group_metrics(_records(), num_runners=3)
    assert as_dict["per_runner"]["2"] == lag.per_runner[1]._asdict()
    assert set(as_dict) == {
        "policy_lag_mean",
        "policy_lag_max",
        "runner_wait_for_learner_s",
        "learner_wait_s",
        "per_runner",
    }


def test_result_dict_of_a_single_policy_iteration():
    result = IterationResult(
        num_env_steps_sampled=200,
        num_env_steps_trained=100,
        episode_returns=np.array([3.0, 5.0]),
        episode_lens=np.array([9, 11]),
        learner_metrics=single_policy({"total_loss": np.float32(0.5), "num_updates": 4}),
        timers=Timers(training_step=1.5, env_runner_sampling_timer=0.5),
        runner_lag=runner_lag(_records(), num_runners=3),
    )
    out = result_dict(result, _totals(), {})
    env = out["env_runners"]
    assert env["num_episodes"] == 2
    assert env["num_env_steps_sampled"] == 200
    assert env["num_env_steps_sampled_per_second"] == 100.0  # 200 steps in 2 s
    assert env["num_env_steps_sampled_lifetime"] == 900
    assert env["num_episodes_lifetime"] == 12
    assert env["episode_return_mean"] == 4.0
    assert env["my_metric"] == 1.5  # what callbacks logged
    assert env["policy_lag_max"] == 3 and env["per_runner"]["1"]["num_fragments"] == 2
    assert "learner_wait_s" not in env  # a timer, not a runner metric
    # RLlib 2.60's single-agent runner's per-agent and per-module figures: one of each.
    assert env["num_agent_steps_sampled"] == {"default_agent": 200}
    assert env["num_agent_steps_sampled_lifetime"] == {"default_agent": 900}
    assert env["num_module_steps_sampled"] == {"default_policy": 200}
    assert env["num_module_steps_sampled_lifetime"] == {"default_policy": 900}
    assert env["agent_episode_return_mean"] == {"default_agent": 4.0}
    assert env["module_episode_return_mean"] == {"default_policy": 4.0}
    assert out["learners"]["default_policy"] == {
        "total_loss": 0.5,
        "num_updates": 4.0,
        "num_module_steps_trained": 100.0,
        "num_module_steps_trained_lifetime": 800.0,
    }
    assert all(type(v) is float for v in out["learners"]["default_policy"].values())
    assert out["learners"]["__all_modules__"] == {
        "num_module_steps_trained": 100,
        "num_non_finite_updates": 1,
        "num_non_finite_updates_lifetime": 2,
        "num_non_finite_weights_loaded": 0,
        "num_env_steps_trained": 100,
        "num_env_steps_trained_lifetime": 800,
        "num_env_steps_trained_per_second": 50.0,
    }
    assert out["timers"] == {
        "training_iteration": 2.0,
        "training_step": 1.5,
        "env_runner_sampling_timer": 0.5,
    }
    assert out["fault_tolerance"] == {"num_healthy_workers": 2}
    assert (out["training_iteration"], out["time_this_iter_s"], out["time_total_s"]) == (
        3,
        2.0,
        7.5,
    )
    assert out["num_env_steps_sampled_per_second"] == 100.0
    assert out["done"] is False and isinstance(out["timestamp"], int)


def test_result_dict_of_a_multi_agent_iteration_and_no_time():
    agents = AgentMetrics(
        module_episode_returns_mean={"p0": 1.0, "p1": 2.0},
        agent_episode_returns_mean={"0": 1.0, "1": 2.0},
        agent_steps={"0": 15, "1": 25},
        agent_steps_lifetime={"0": 30, "1": 50},
        module_steps={"p0": 15, "p1": 25},
        module_steps_lifetime={"p0": 30, "p1": 50},
    )
    result = IterationResult(
        num_env_steps_sampled=20,
        num_env_steps_trained=40,
        episode_returns=np.zeros(0),
        episode_lens=np.zeros(0, int),
        learner_metrics={
            "p0": {"vf_loss": 1.0, "num_module_steps_trained": 15},
            "p1": {"vf_loss": 2.0, "num_module_steps_trained": 25},
        },
        agents=agents,
    )
    out = result_dict(result, _totals(elapsed_s=0.0, env_runner_metrics={}), {})
    env = out["env_runners"]
    assert "agent_episode_return_mean" not in env  # the single-agent key
    assert out["learners"]["__all_modules__"]["num_module_steps_trained"] == 40  # 15 + 25
    assert env["module_episode_returns_mean"] == {"p0": 1.0, "p1": 2.0}
    # RLlib's multi-agent runner's dicts (was: the totals, 40 and 80).
    assert env["num_agent_steps_sampled"] == {"0": 15, "1": 25}
    assert env["num_agent_steps_sampled_lifetime"] == {"0": 30, "1": 50}
    assert env["num_module_steps_sampled"] == {"p0": 15, "p1": 25}
    assert env["num_module_steps_sampled_lifetime"] == {"p0": 30, "p1": 50}
    assert env["num_episodes"] == 0
    assert math.isnan(env["num_env_steps_sampled_per_second"])
    assert "policy_lag_mean" not in env
    assert set(out["learners"]) == {"p0", "p1", "__all_modules__"}
    assert out["timers"] == {"training_iteration": 0.0}


def test_a_callback_metric_named_like_a_result_key_is_refused():
    result = IterationResult(
        num_env_steps_sampled=1,
        num_env_steps_trained=1,
        episode_returns=np.zeros(0),
        episode_lens=np.zeros(0, int),
        learner_metrics=single_policy({}),
    )
    with pytest.raises(ValueError, match="env_runners/num_episodes"):
        result_dict(result, _totals(env_runner_metrics={"num_episodes": 5}), {})


def test_every_module_reports_its_lifetime_steps_and_learning_rate():
    """RLlib's learners log both for every module. Was: a multi-agent module had neither, and
    a PPO module with a constant ``lr`` no learning rate."""
    learners = {
        "p0": {"num_module_steps_trained": 100.0},
        "p1": {"num_module_steps_trained": 50.0, "default_optimizer_learning_rate": 0.5},
        "sac": {"num_module_steps_trained": 10.0, "qf_learning_rate": 3e-4},
        "__all_modules__": {"num_module_steps_trained": 160},
    }
    lifetime = {"p0": 300}
    config = PPOConfig().multi_agent(
        policies={"p0", "p1", "sac"},
        policy_mapping_fn=lambda aid, *a, **kw: "p0",
        algorithm_config_overrides_per_module={"p0": {"lr": 1e-3}, "p1": {"lr": 2e-3}},
    )
    module_learner_figures(learners, lifetime, config)
    assert lifetime == {"p0": 400, "p1": 50, "sac": 10}
    assert learners["p0"]["num_module_steps_trained_lifetime"] == 400.0
    assert learners["p0"]["default_optimizer_learning_rate"] == 1e-3
    assert learners["p1"]["default_optimizer_learning_rate"] == 0.5  # the update's own, kept
    assert "default_optimizer_learning_rate" not in learners["sac"]  # its optimizers' rates
    assert "num_module_steps_trained_lifetime" not in learners["__all_modules__"]
    # A schedule (RLlib's [[step, value], ...]) is the learner's to report, not a number here.
    again = {"p0": {"num_module_steps_trained": 1.0}}
    module_learner_figures(again, {}, PPOConfig().training(lr=[[0, 1e-3], [100, 1e-4]]))
    assert "default_optimizer_learning_rate" not in again["p0"]
