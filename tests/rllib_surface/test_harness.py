"""RLlib's example-script harness: its flags, what they set, its stop criteria and --as-test."""

from __future__ import annotations

import numpy as np
import pytest

from rljax import tune
from rljax.algorithms.ppo import PPOConfig
from rljax.examples import utils as examples_utils
from rljax.utils import test_utils
from rljax.utils.errors import ConfigError
from rljax.utils.test_utils import (
    add_rllib_example_script_args,
    check_learning_achieved,
    run_rllib_example_script_experiment,
)


def _tiny() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )


def test_flags_have_rllibs_names_and_defaults():
    parser = add_rllib_example_script_args(
        default_reward=42.0, default_timesteps=1234, default_iters=7
    )
    args = parser.parse_args([])
    assert (args.stop_reward, args.stop_timesteps, args.stop_iters) == (42.0, 1234, 7)
    assert args.algo == "PPO" and args.framework == "torch" and args.num_samples == 1
    assert args.evaluation_duration == 10 and args.evaluation_interval == 0
    assert args.num_env_runners is None and args.num_learners is None and not args.no_tune
    args = parser.parse_args(["--evaluation-duration=auto", "--num-env-runners=3", "--as-test"])
    assert args.evaluation_duration == "auto" and args.num_env_runners == 3 and args.as_test
    with pytest.raises(SystemExit):
        parser.parse_args(["--evaluation-duration=soon"])
    # RLlib's newer home of the same functions.
    assert examples_utils.add_rllib_example_script_args is add_rllib_example_script_args


def test_flags_set_the_config_as_rllibs_harness_does():
    args = add_rllib_example_script_args().parse_args(
        [
            "--env=Pendulum-v1",
            "--num-env-runners=2",
            "--num-envs-per-env-runner=3",
            "--evaluation-interval=2",
            "--evaluation-duration=20",
            "--evaluation-duration-unit=timesteps",
            "--log-level=INFO",
        ]
    )
    config = test_utils._apply_args(PPOConfig(), args)
    assert config.env == "Pendulum-v1"
    assert (config.num_env_runners, config.num_envs_per_env_runner) == (2, 3)
    assert (config.evaluation_interval, config.evaluation_duration) == (2, 20)
    assert config.evaluation_duration_unit == "timesteps" and config.log_level == "INFO"
    # The script's env wins over --env; without --evaluation-interval nothing is evaluated.
    args = add_rllib_example_script_args().parse_args(["--env=Pendulum-v1"])
    config = test_utils._apply_args(PPOConfig().environment("CartPole-v1"), args)
    assert config.env == "CartPole-v1" and config.evaluation_interval is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--num-gpus=1"], "use --num-gpus-per-learner=1 and --num-learners"),
    ],
)
def test_flags_rljax_cannot_honour_are_refused_before_anything_builds(flags, message):
    args = add_rllib_example_script_args().parse_args(flags)
    with pytest.raises(ConfigError, match=message):
        run_rllib_example_script_experiment(PPOConfig().environment("CartPole-v1"), args)


def test_no_effect_flags_say_so_once(caplog):
    args = add_rllib_example_script_args().parse_args(["--framework=tf2", "--local-mode"])
    test_utils._said_once(args)
    said = [r.getMessage() for r in caplog.records]
    assert any("--framework has no effect here" in m for m in said)
    assert any("--local-mode has no effect here" in m for m in said)


@pytest.mark.slow
def test_no_tune_stops_at_the_first_criterion_met_and_as_test_raises_when_short(capsys):
    parser = add_rllib_example_script_args(default_reward=1e9, default_iters=3)
    args = parser.parse_args(["--no-tune", "--stop-timesteps=400"])
    result = run_rllib_example_script_experiment(_tiny(), args)
    # Up to 256 env steps per iteration (the rows that auto-reset a sub-env are no env step):
    # the second iteration passes 400 and stops the run.
    assert result["training_iteration"] == 2
    assert 400 <= result["env_runners"]["num_env_steps_sampled_lifetime"] <= 512
    assert "Stop criterium (env_runners/num_env_steps_sampled_lifetime=400) fulfilled!" in (
        capsys.readouterr().out
    )
    args = parser.parse_args(["--no-tune", "--stop-iters=1", "--as-test"])
    with pytest.raises(ValueError, match=r"`env_runners/episode_return_mean` of 1000000000.0"):
        run_rllib_example_script_experiment(_tiny(), args)


@pytest.mark.slow
def test_tune_run_returns_the_result_grid_and_as_test_passes_when_reached(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RLJAX_RESULTS_DIR", str(tmp_path))
    args = add_rllib_example_script_args(default_reward=5.0).parse_args(
        ["--stop-iters=2", "--verbose=0", "--as-test", "--checkpoint-at-end"]
    )
    grid = run_rllib_example_script_experiment(_tiny(), args)
    (result,) = list(grid)
    assert [r["training_iteration"] for r in result.history] == [1]  # return 5 met at once
    assert result.checkpoint is not None
    check_learning_achieved(grid, 5.0)
    with pytest.raises(ValueError, match="of 1000.0 not reached"):
        check_learning_achieved(grid, 1000.0)
    with pytest.raises(ValueError, match="evaluation/env_runners/episode_return_mean"):
        check_learning_achieved(result.history[-1], 1.0, evaluation=True)


def test_a_failing_trial_raises_its_own_error_as_rllibs_harness_does(tmp_path, monkeypatch):
    monkeypatch.setenv("RLJAX_RESULTS_DIR", str(tmp_path))
    calls = []

    def broken(config):
        calls.append(config.seed)
        raise KeyError("the trainable's own error")

    args = add_rllib_example_script_args().parse_args(["--verbose=0"])
    config = _tiny().debugging(seed=tune.grid_search([1, 2, 3]))
    # RLlib's harness runs with FailureConfig(fail_fast="raise"): the first failure ends the
    # run, and fit() raises that trial's exception (not a wrapper of it).
    with pytest.raises(KeyError, match="the trainable's own error"):
        run_rllib_example_script_experiment(config, args, trainable=broken, keep_config=True)
    assert calls == [1]


def test_check_compares_nested_results_as_rllibs_does():
    import jax.numpy as jnp

    from rljax.utils.test_utils import check

    check({"a": [1, 2.0000001], "b": (None, "x", True)}, {"a": [1, 2.0], "b": [None, "x", True]})
    check(jnp.array([1.0, 2.0]), np.array([1.0, 2.000001]))  # 5 decimals by default
    check(1.0, 1.1, atol=0.2)
    check(100.0, 101.0, rtol=0.02)
    check(np.array(["a", "b"]), np.array(["a", "b"]))
    check(1.0, 1.1, false=True)
    check({"a": 1}, {"a": 2}, false=True)
    failing = [
        lambda: check({"a": 1}, {"a": 1, "b": 2}),  # y has a key x lacks
        lambda: check({"a": 1}, {"b": 1}),
        lambda: check([1, 2], [1]),
        lambda: check(1.0, 1.001),  # not to 5 decimals
        lambda: check(1.0, 1.3, atol=0.2),
        lambda: check(True, False),
        lambda: check("x", "y"),
        lambda: check(2, 2, false=True),
        lambda: check(np.array([1.0]), np.array([1.0]), false=True),
    ]
    for call in failing:
        with pytest.raises(AssertionError):
            call()
