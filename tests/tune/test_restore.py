"""Tuner.restore: experiment_state.json, trials loaded back or continued from checkpoints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rljax import tune
from rljax.tune import experiment_state as es
from rljax.utils.errors import ConfigError


class Interrupted(BaseException):
    """Stands for a Ctrl-C or a killed process: nothing in fit() catches it."""


def _make_trainable(calls, interrupt_at, tmp_path):
    """Steps 1..4; saves a checkpoint holding the step at each one; raises ``Interrupted``
    at ``interrupt_at`` = (a, step) while it is set."""

    def counted(config):
        checkpoint = tune.get_checkpoint()
        start = int(Path(checkpoint.path, "step").read_text()) if checkpoint else 0
        for step in range(start + 1, 5):
            calls.append((config["a"], step))
            if interrupt_at and (config["a"], step) == interrupt_at[0]:
                raise Interrupted
            src = tmp_path / "src" / f"{config['a']}_{step}"
            src.mkdir(parents=True)
            (src / "step").write_text(str(step))
            tune.report({"score": config["a"] * step}, checkpoint=src)

    return counted


def _statuses(path: Path) -> list[str]:
    data = json.loads((path / es.STATE_FILE).read_text())
    return [t["status"] for t in data["trials"]]


def test_an_interrupted_experiment_restores_without_recomputing_finished_trials(tmp_path):
    calls: list[tuple[int, int]] = []
    interrupt = [(2, 3)]
    trainable = _make_trainable(calls, interrupt, tmp_path)
    tuner = tune.Tuner(
        trainable,
        param_space={"a": tune.grid_search([1, 2, 3])},
        tune_config=tune.TuneConfig(metric="score", mode="max"),
        run_config=tune.RunConfig(name="exp", storage_path=str(tmp_path / "out"), verbose=0),
    )
    with pytest.raises(Interrupted):
        tuner.fit()
    experiment = tmp_path / "out" / "exp"
    assert _statuses(experiment) == ["TERMINATED", "RUNNING", "PENDING"]
    assert tune.Tuner.can_restore(experiment) and not tune.Tuner.can_restore(tmp_path)
    assert calls == [(1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (2, 2), (2, 3)]

    # The directory may move; a function is given again (it cannot be saved).
    moved = tmp_path / "moved"
    shutil.move(str(experiment), moved)
    interrupt.clear()
    calls.clear()
    grid = tune.Tuner.restore(str(moved), trainable=trainable).fit()

    # Trial 1 is not run again; trial 2 continues after its checkpoint of step 2; trial 3 runs.
    assert calls == [(2, 3), (2, 4), (3, 1), (3, 2), (3, 3), (3, 4)]
    assert len(grid) == 3 and grid.num_errors == 0 and grid.num_terminated == 3
    assert [r.config for r in grid] == [{"a": 1}, {"a": 2}, {"a": 3}]
    assert [r.metrics["score"] for r in grid] == [4, 8, 12]
    assert [h["training_iteration"] for h in grid[1].history] == [1, 2, 3, 4]
    assert [h["score"] for h in grid[0].history] == [1, 2, 3, 4]  # loaded from result.json
    assert grid[0].metrics["done"] and Path(grid[0].path).parent == moved
    lines = (Path(grid[1].path) / "result.json").read_text().splitlines()
    assert [json.loads(line)["training_iteration"] for line in lines] == [1, 2, 3, 4]
    rows = (Path(grid[1].path) / "progress.csv").read_text().splitlines()
    assert len(rows) == 5 and rows[0].startswith("score,")
    assert Path(grid[1].checkpoint.path).name == "checkpoint_000004"
    assert grid.get_best_result().config == {"a": 3}
    assert _statuses(moved) == ["TERMINATED"] * 3
    # Restoring a finished experiment runs nothing.
    calls.clear()
    again = tune.Tuner.restore(moved, trainable=trainable).fit()
    assert calls == [] and [r.metrics["score"] for r in again] == [4, 8, 12]


def test_errored_trials_per_the_flags(tmp_path):
    calls: list[int] = []
    fail = {"on": True}

    def flaky(config):
        calls.append(config["a"])
        tune.report({"score": config["a"]})
        if config["a"] == 2 and fail["on"]:
            raise RuntimeError("flaky")
        tune.report({"score": config["a"] * 10})

    run_config = tune.RunConfig(name="exp", storage_path=str(tmp_path), verbose=0)
    grid = tune.Tuner(
        flaky, param_space={"a": tune.grid_search([1, 2])}, run_config=run_config
    ).fit()
    assert grid.num_errors == 1 and _statuses(tmp_path / "exp") == ["TERMINATED", "ERROR"]

    # Default: an errored trial is returned as it was, its error's text kept.
    calls.clear()
    kept = tune.Tuner.restore(tmp_path / "exp", flaky).fit()
    assert calls == [] and kept.num_errors == 1
    assert isinstance(kept[1].error, es.TrialError) and "RuntimeError: flaky" in str(kept[1].error)
    assert kept[1].metrics["score"] == 2 and not kept[1].metrics.get("done")

    # restart_errored: started over, its old files gone.
    fail["on"] = False
    grid = tune.Tuner.restore(tmp_path / "exp", flaky, restart_errored=True).fit()
    assert calls == [2] and grid.num_errors == 0
    assert [h["score"] for h in grid[1].history] == [2, 20]
    assert not (Path(grid[1].path) / "error.txt").exists()
    assert _statuses(tmp_path / "exp") == ["TERMINATED", "TERMINATED"]


def test_resume_unfinished_false_leaves_them_as_they_are(tmp_path):
    calls: list[tuple[int, int]] = []
    trainable = _make_trainable(calls, [(1, 2)], tmp_path)
    tuner = tune.Tuner(
        trainable,
        param_space={"a": tune.grid_search([1, 2])},
        run_config=tune.RunConfig(name="exp", storage_path=str(tmp_path / "out"), verbose=0),
    )
    with pytest.raises(Interrupted):
        tuner.fit()
    calls.clear()
    grid = tune.Tuner.restore(tmp_path / "out" / "exp", trainable, resume_unfinished=False).fit()
    assert calls == []
    assert [len(r.history) for r in grid] == [1, 0] and grid.num_errors == 0


def test_restore_refuses_what_it_cannot_continue(tmp_path):
    with pytest.raises(ConfigError, match="no experiment_state.json"):
        tune.Tuner.restore(tmp_path, trainable=lambda config: None)

    def fn(config):
        tune.report({"x": 1})

    stopper = tune.stopper.MaximumIterationStopper(1)
    tune.Tuner(
        fn, run_config=tune.RunConfig(name="e", storage_path=str(tmp_path), stop=stopper, verbose=0)
    ).fit()
    with pytest.raises(ConfigError, match="MaximumIterationStopper.*stop=\\.\\.\\."):
        tune.Tuner.restore(tmp_path / "e", fn)
    assert len(tune.Tuner.restore(tmp_path / "e", fn, stop=stopper).fit()) == 1
    with pytest.raises(ConfigError, match="trained function 'fn'; got the algorithm 'PPO'"):
        tune.Tuner.restore(
            tmp_path / "e",
            tune.Tuner("PPO", run_config=tune.RunConfig(stop={"x": 1}))._base,
            stop=stopper,
        )
    (tmp_path / "e" / es.STATE_FILE).write_text('{"format_version": 1, "trainable": 3}')
    with pytest.raises(ConfigError, match="'trainable' is missing or of the wrong type"):
        tune.Tuner.restore(tmp_path / "e", fn)


def test_tuples_in_variants_need_the_param_space_again(tmp_path):
    seen = []

    def fn(config):
        seen.append(config)
        tune.report({"x": 1})

    space = {"shape": (2, 3), "a": tune.grid_search([1, 2])}
    run = tune.RunConfig(name="e", storage_path=str(tmp_path), verbose=0)
    tune.Tuner(fn, param_space=space, run_config=run).fit()
    state = json.loads((tmp_path / "e" / es.STATE_FILE).read_text())
    state["trials"][1]["status"] = "PENDING"
    (tmp_path / "e" / es.STATE_FILE).write_text(json.dumps(state))
    with pytest.raises(ConfigError, match="pass the original param_space"):
        tune.Tuner.restore(tmp_path / "e", fn)
    seen.clear()
    grid = tune.Tuner.restore(tmp_path / "e", fn, param_space=space).fit()
    assert seen == [{"shape": (2, 3), "a": 2}] and grid[1].config == {"shape": (2, 3), "a": 2}


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (10 s alone)
def test_an_algorithm_trial_continues_from_its_checkpoint(tmp_path):
    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )

    class InterruptAfterFirst(tune.Stopper):
        def __call__(self, trial_id, result):
            if result["training_iteration"] == 1:
                raise RuntimeError("the machine went away")
            return result["training_iteration"] >= 2

    tuner = tune.Tuner(
        config,
        param_space={"lr": tune.grid_search([1e-3])},
        run_config=tune.RunConfig(
            name="ppo",
            storage_path=str(tmp_path),
            stop=InterruptAfterFirst(),
            checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1),
            verbose=0,
        ),
    )
    with pytest.raises(ConfigError, match="the machine went away"):
        tuner.fit()
    experiment = tmp_path / "ppo"
    assert _statuses(experiment) == ["RUNNING"]
    first = es.read_history(next(experiment.glob("PPO_*")))
    assert [r["training_iteration"] for r in first] == [1]

    # By name: the base settings (env, batch sizes) come back from the saved state.
    grid = tune.Tuner.restore(experiment, "PPO", stop={"training_iteration": 2}).fit()
    assert grid.num_errors == 0, grid.errors
    result = grid[0]
    assert result.config["lr"] == 1e-3 and result.config["env"] == "CartPole-v1"
    assert [h["training_iteration"] for h in result.history] == [1, 2]
    steps = [h["num_env_steps_sampled_lifetime"] for h in result.history]
    # Continued from the checkpoint's counters: a run started over would be at about steps[0].
    assert steps[0] > 0 and steps[1] > 1.5 * steps[0]
    assert Path(result.checkpoint.path).name == "checkpoint_000002"
    assert _statuses(experiment) == ["TERMINATED"]


def test_resume_errored_continues_from_the_checkpoint(tmp_path):
    calls: list[tuple[int, int]] = []
    fail = {"on": True}

    def fails_at_3(config):
        checkpoint = tune.get_checkpoint()
        start = int(Path(checkpoint.path, "step").read_text()) if checkpoint else 0
        for step in range(start + 1, 5):
            calls.append((config["a"], step))
            if step == 3 and fail["on"]:
                raise RuntimeError("at step 3")
            src = tmp_path / "src" / f"{fail['on']}_{step}"
            src.mkdir(parents=True)
            (src / "step").write_text(str(step))
            tune.report({"step": step}, checkpoint=src)

    run = tune.RunConfig(name="e", storage_path=str(tmp_path / "out"), verbose=0)
    grid = tune.Tuner(fails_at_3, param_space={"a": 1}, run_config=run).fit()
    assert grid.num_errors == 1 and (Path(grid[0].path) / "error.txt").is_file()
    fail["on"] = False
    calls.clear()
    grid = tune.Tuner.restore(tmp_path / "out" / "e", fails_at_3, resume_errored=True).fit()
    assert calls == [(1, 3), (1, 4)] and grid.num_errors == 0
    assert [h["step"] for h in grid[0].history] == [1, 2, 3, 4]
    assert not (Path(grid[0].path) / "error.txt").exists()


def test_an_algorithm_experiment_restores_its_base_settings(tmp_path):
    """The saved base config comes back for a name or a class; a config given again wins."""
    from rljax.algorithms.ppo import PPO, PPOConfig

    base = PPOConfig().environment("CartPole-v1").training(gamma=0.9, lr=tune.grid_search([1, 2]))
    run = tune.RunConfig(name="e", storage_path=str(tmp_path), stop={"training_iteration": 1})
    tuner = tune.Tuner(
        base, param_space={"entropy_coeff": tune.grid_search([0.0, 0.1])}, run_config=run
    )
    (tmp_path / "e").mkdir()
    tuner._new_state(tmp_path / "e")  # the state fit() writes first; nothing is built here

    for trainable in ("PPO", PPO):
        restored = tune.Tuner.restore(tmp_path / "e", trainable)
        configs = restored._algo_configs
        assert [(c.lr, c.entropy_coeff) for c in configs] == [
            (1, 0.0),
            (1, 0.1),
            (2, 0.0),
            (2, 0.1),
        ]
        assert all(c.gamma == 0.9 and c.env == "CartPole-v1" for c in configs)
        assert restored._variants == tuner._variants
    other = PPOConfig().environment("CartPole-v1").training(gamma=0.5)
    configs = tune.Tuner.restore(tmp_path / "e", other)._algo_configs
    assert all(c.gamma == 0.5 for c in configs) and configs[3].lr == 2
    with pytest.raises(ConfigError, match="trained the algorithm 'PPO'; pass its name"):
        tune.Tuner.restore(tmp_path / "e", lambda config: None)
    from rljax.algorithms.dqn import DQNConfig

    with pytest.raises(ConfigError, match="trained algorithm 'PPO'; got the algorithm 'DQN'"):
        tune.Tuner.restore(tmp_path / "e", DQNConfig())


def test_an_experiment_a_scheduler_stopped_restores_with_the_scheduler_given_again(tmp_path):
    """Was: Tuner.restore of an algorithm experiment stopped only by ASHA's max_t failed
    ("trains until stopped: give a stop criterion (tune.RunConfig(stop=...))", which restore
    does not take); the scheduler, an object, is passed again."""
    from rljax.algorithms.ppo import PPOConfig
    from rljax.tune.schedulers import ASHAScheduler

    base = PPOConfig().environment("CartPole-v1").training(lr=tune.grid_search([1e-3, 3e-4]))
    asha = ASHAScheduler(max_t=2)
    tuner = tune.Tuner(
        "PPO",
        param_space=base,
        tune_config=tune.TuneConfig(
            metric="env_runners/episode_return_mean", mode="max", scheduler=asha
        ),  # fmt: skip
        run_config=tune.RunConfig(name="e", storage_path=str(tmp_path)),
    )
    (tmp_path / "e").mkdir()
    tuner._new_state(tmp_path / "e")  # the state fit() writes first; nothing is built here
    with pytest.raises(ConfigError, match=r"stopped by its AsyncHyperBandScheduler, which is"):
        tune.Tuner.restore(tmp_path / "e", "PPO")
    restored = tune.Tuner.restore(tmp_path / "e", "PPO", scheduler=ASHAScheduler(max_t=2))
    assert isinstance(restored.tune_config.scheduler, ASHAScheduler)
    assert [c.lr for c in restored._algo_configs] == [1e-3, 3e-4]
    # A stop criterion given instead goes on without it.
    restored = tune.Tuner.restore(tmp_path / "e", "PPO", stop={"training_iteration": 2})
    assert restored.tune_config.scheduler is None
    # Results show whole configs as the experiment's did: a config object's, yes.
    assert restored._shown({"lr": 1e-3})["env"] == "CartPole-v1"


def test_a_restore_shows_the_configs_as_the_experiment_did(tmp_path):
    """A dict param space's results hold the dict's keys after a restore too (a restore is
    given the base config as param_space, which made them whole configs)."""
    space = {"env": "CartPole-v1", "lr": tune.grid_search([1e-3, 3e-4])}
    run = tune.RunConfig(name="d", storage_path=str(tmp_path), stop={"training_iteration": 1})
    tuner = tune.Tuner("PPO", param_space=space, run_config=run)
    (tmp_path / "d").mkdir()
    tuner._new_state(tmp_path / "d")
    restored = tune.Tuner.restore(tmp_path / "d", "PPO")
    assert restored._shown(restored._variants[0]) == {"env": "CartPole-v1", "lr": 1e-3}


def test_trials_a_time_budget_left_out_run_on_restore(tmp_path):
    import time

    def slow(config):  # 20 s at least: the budget (1 s) always ends it
        for _ in range(1000):
            time.sleep(0.02)
            tune.report({"a": config["a"]})

    # A budget far above the few milliseconds a restored fit() takes before its first batch
    # (the budget counts from fit()'s start), so a loaded machine still starts trial 2.
    tuner = tune.Tuner(
        slow,
        param_space={"a": tune.grid_search([1, 2])},
        tune_config=tune.TuneConfig(time_budget_s=1.0),
        run_config=tune.RunConfig(name="e", storage_path=str(tmp_path), verbose=0),
    )
    first = tuner.fit()
    assert len(first) == 1 and _statuses(tmp_path / "e") == ["TERMINATED", "PENDING"]
    grid = tune.Tuner.restore(tmp_path / "e", slow).fit()  # the budget counts anew
    assert [r.config["a"] for r in grid] == [1, 2] and grid.num_errors == 0
    assert grid[0].history == first[0].history and 0 < len(grid[1].history) < 1000
    assert _statuses(tmp_path / "e") == ["TERMINATED", "TERMINATED"]
