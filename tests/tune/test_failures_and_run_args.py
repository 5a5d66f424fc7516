"""FailureConfig (retries, fail-fast), trial_dirname_creator, trial_name_creator, and tune.run's other arguments
(Tune's full signature): cheap function trainables only."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from rljax import tune
from rljax.utils import once
from rljax.utils.errors import ConfigError


@pytest.fixture(autouse=True)
def _warnings_anew(monkeypatch):
    """Each test sees the once-per-process warnings of settings without effect."""
    monkeypatch.setitem(once.SAID, "tune", set())


def failing_once_at(step_to_fail: int, calls: list, tmp_path, times: int = 1):
    """A function trainable counting steps 1..4 from its checkpoint, raising at
    ``step_to_fail`` its first ``times`` runs (per trial)."""
    failed: dict[int, int] = {}

    def trainable(config):
        checkpoint = tune.get_checkpoint()
        start = int(Path(checkpoint.path, "step").read_text()) if checkpoint else 0
        for step in range(start + 1, 5):
            calls.append((config["a"], step))
            if step == step_to_fail and failed.get(config["a"], 0) < times:
                failed[config["a"]] = failed.get(config["a"], 0) + 1
                raise RuntimeError(f"a={config['a']} at step {step}")
            src = tmp_path / "src" / uuid.uuid4().hex
            src.mkdir(parents=True)
            (src / "step").write_text(str(step))
            tune.report({"step": step, "a": config["a"]}, checkpoint=src)

    return trainable


def _run(trainable, tmp_path, failure=None, param_space=None, **tune_kwargs):
    return tune.Tuner(
        trainable,
        param_space=param_space or {"a": 1},
        tune_config=tune.TuneConfig(**tune_kwargs),
        run_config=tune.RunConfig(
            name="e", storage_path=str(tmp_path / "out"), verbose=0, failure_config=failure
        ),
    ).fit()


def test_max_failures_restarts_a_failed_trial_from_its_newest_checkpoint(tmp_path):
    calls: list = []
    grid = _run(
        failing_once_at(3, calls, tmp_path),
        tmp_path,
        tune.FailureConfig(max_failures=1),
    )
    assert grid.num_errors == 0 and grid.num_terminated == 1
    # steps 1, 2 (checkpointed), 3 raises; the retry starts after step 2's checkpoint
    assert calls == [(1, 1), (1, 2), (1, 3), (1, 3), (1, 4)]
    assert grid[0].metrics["step"] == 4
    assert not (Path(grid[0].path) / "error.txt").exists()


def test_retries_run_out_and_the_trial_fails(tmp_path):
    calls: list = []
    grid = _run(
        failing_once_at(2, calls, tmp_path, times=3), tmp_path, tune.FailureConfig(max_failures=2)
    )
    assert grid.num_errors == 1  # 1 run + 2 retries, each failing at step 2
    assert calls == [(1, 1), (1, 2), (1, 2), (1, 2)]
    assert "a=1 at step 2" in (Path(grid[0].path) / "error.txt").read_text()
    # without a FailureConfig a failed trial stays failed (Tune's default, max_failures=0)
    calls.clear()
    grid = _run(failing_once_at(2, calls, tmp_path / "b"), tmp_path / "b")
    assert grid.num_errors == 1 and calls == [(1, 1), (1, 2)]


def test_fail_fast_ends_the_experiment_at_the_first_failure(tmp_path):
    calls: list = []
    space = {"a": tune.grid_search([1, 2, 3])}
    trainable = failing_once_at(2, calls, tmp_path, times=99)
    grid = _run(trainable, tmp_path, tune.FailureConfig(fail_fast=True), param_space=space)
    assert len(grid) == 1 and grid.num_errors == 1  # trials 2 and 3 never started
    assert [a for a, _ in calls] == [1, 1]
    with pytest.raises(RuntimeError, match="a=1 at step 2"):
        _run(
            failing_once_at(2, [], tmp_path / "r", times=99),
            tmp_path / "r",
            tune.FailureConfig(fail_fast="raise"),
            param_space=space,
        )


def test_failure_config_is_checked_and_saved_for_restore(tmp_path):
    for bad, match in (
        ({"max_failures": -2}, "max_failures=-2"),
        ({"max_failures": 1.5}, "max_failures=1.5"),
        ({"fail_fast": "yes"}, "fail_fast='yes'"),
    ):
        with pytest.raises(ConfigError, match=match):
            tune.FailureConfig(**bad)
    with pytest.raises(ConfigError, match="failure_config=3"):
        tune.RunConfig(failure_config=3)
    _run(
        failing_once_at(9, [], tmp_path), tmp_path, tune.FailureConfig(max_failures=3)
    )  # never fails
    state = json.loads((tmp_path / "out" / "e" / "experiment_state.json").read_text())
    assert state["run_config"]["failure_config"] == {"max_failures": 3, "fail_fast": False}
    restored = tune.Tuner.restore(str(tmp_path / "out" / "e"), failing_once_at(9, [], tmp_path))
    assert restored.run_config.failure_config == tune.FailureConfig(max_failures=3)


def test_trial_dirname_creator_names_the_trial_directories(tmp_path):
    def named(trial):
        return f"t_{trial.config['a']}_{trial.trial_id}"

    space = {"a": tune.grid_search([1, 2])}
    grid = _run(
        failing_once_at(9, [], tmp_path), tmp_path, param_space=space, trial_dirname_creator=named
    )
    assert [Path(r.path).name for r in grid] == [f"t_{a}_{r.metrics['trial_id']}" for a, r in
                                           zip((1, 2), grid, strict=True)]  # fmt: skip
    assert all((Path(r.path) / "result.json").exists() for r in grid)
    for creator, match in (
        (lambda trial: "same", "trial .* has that directory already"),
        (lambda trial: "../escape", "a name, not a path"),
        (lambda trial: "", "non-empty str"),
        (lambda trial: 7, "non-empty str"),
    ):
        with pytest.raises(ConfigError, match=match):
            _run(lambda c: None, tmp_path / "x", param_space=space, trial_dirname_creator=creator)
    with pytest.raises(ConfigError, match="trial_dirname_creator='x'"):
        tune.TuneConfig(trial_dirname_creator="x")


def test_trial_name_creator_names_the_trials_in_the_table(tmp_path, capsys):
    def named(trial):
        return f"lr{trial.config['a']}-{trial.experiment_tag}"

    tune.Tuner(
        failing_once_at(9, [], tmp_path),
        param_space={"a": tune.grid_search([1, 2])},
        tune_config=tune.TuneConfig(trial_name_creator=named),
        run_config=tune.RunConfig(name="e", storage_path=str(tmp_path / "out"), verbose=1),
    ).fit()
    table = capsys.readouterr().out
    assert "| lr1-0_a=1 " in table and "| lr2-1_a=2 " in table, table
    assert "_00000" not in table  # the default names are replaced
    with pytest.raises(ConfigError, match="trial_name_creator gave 7 for trial"):
        tune.Tuner(
            lambda c: None,
            tune_config=tune.TuneConfig(trial_name_creator=lambda trial: 7),
            run_config=tune.RunConfig(name="e", storage_path=str(tmp_path / "x"), verbose=1),
        ).fit()


def test_tune_run_takes_tunes_arguments(tmp_path):
    calls: list = []
    with pytest.warns(UserWarning, match="reuse_actors"):
        analysis = tune.run(
            failing_once_at(3, calls, tmp_path),
            config={"a": tune.grid_search([1, 2])},
            metric="step",
            mode="max",
            name="e",
            storage_path=str(tmp_path / "out"),
            verbose=0,
            max_failures=1,
            max_concurrent_trials=0,  # Tune's "no limit"
            scheduler=tune.schedulers.FIFOScheduler(),
            trial_dirname_creator=lambda trial: f"d_{trial.trial_id}",
            reuse_actors=True,
        )
    assert [r["step"] for r in analysis.results.values()] == [4, 4]  # each retried once
    assert len(calls) == 10
    assert all(Path(t.path).name.startswith("d_") for t in analysis.trials)
    for name, value in (
        ("restore", "ckpt"),
        ("export_formats", ["model"]),
        ("checkpoint_score_attr", "step"),
    ):
        with pytest.raises(ConfigError, match=f"tune.run\\({name}="):
            tune.run(lambda c: None, storage_path=str(tmp_path), verbose=0, **{name: value})
    with pytest.raises(ConfigError, match="storage_filesystem=object"):
        tune.run(lambda c: None, storage_path=str(tmp_path), storage_filesystem=object())


def test_tune_run_resume_continues_the_named_experiment(tmp_path):
    calls: list = []
    args = {"name": "e", "storage_path": str(tmp_path / "out"), "verbose": 0}
    trainable = failing_once_at(3, calls, tmp_path)
    # AUTO with nothing there: a new run (its trial fails at step 3)
    first = tune.run(trainable, config={"a": 1}, resume="AUTO", raise_on_failed_trial=False, **args)
    assert len(first.trials) == 1 and calls == [(1, 1), (1, 2), (1, 3)]
    calls.clear()
    # AUTO+ERRORED: the failed trial continues from its newest checkpoint (step 2)
    again = tune.run(trainable, config={"a": 1}, resume="AUTO+ERRORED", **args)
    assert calls == [(1, 3), (1, 4)] and again.trials[0].metrics["step"] == 4
    with pytest.raises(ConfigError, match="no experiment to resume"):
        tune.run(trainable, config={"a": 1}, resume=True, name="none", storage_path=str(tmp_path))
    with pytest.raises(ConfigError, match="resume='SOMETIMES'"):
        tune.run(trainable, config={"a": 1}, resume="SOMETIMES", **args)
    with pytest.raises(ConfigError, match="needs the experiment's name"):
        tune.run(trainable, config={"a": 1}, resume="AUTO", storage_path=str(tmp_path))


def test_resume_config_resumes_by_status(tmp_path):
    calls: list = []
    args = {"name": "e", "storage_path": str(tmp_path / "out"), "verbose": 0}
    trainable = failing_once_at(3, calls, tmp_path)
    tune.run(trainable, config={"a": 1}, raise_on_failed_trial=False, **args)
    calls.clear()
    # errored trials skipped (the default): nothing runs again, the trial stays failed
    kept = tune.run(
        trainable,
        config={"a": 1},
        resume_config=tune.ResumeConfig(),
        raise_on_failed_trial=False,
        **args,
    )
    assert calls == [] and kept.trials[0].error is not None
    # errored="restart": the trial starts over, its files removed
    again = tune.run(
        trainable,
        config={"a": 1},
        resume_config=tune.ResumeConfig(errored=tune.ResumeConfig.ResumeType.RESTART),
        **args,
    )
    assert calls == [(1, 1), (1, 2), (1, 3), (1, 4)] and again.trials[0].metrics["step"] == 4
    with pytest.raises(ConfigError, match=r"ResumeConfig\(finished='resume'\)"):
        tune.ResumeConfig(finished="resume")
    with pytest.raises(ConfigError, match="not both"):
        tune.run(
            trainable,
            config={"a": 1},
            resume="AUTO+ERRORED",
            resume_config=tune.ResumeConfig(),
            **args,
        )


def test_jupyter_notebook_reporter_is_the_cli_reporters_table():
    reporter = tune.JupyterNotebookReporter(overwrite=False, metric_columns=["score"])
    assert isinstance(reporter, tune.CLIReporter) and reporter.overwrite is False
    assert reporter.metric_columns == {"score": "score"}
    assert tune.RunConfig(progress_reporter=reporter).progress_reporter is reporter


def test_no_effect_settings_warn_once_and_name_themselves():
    with pytest.warns(UserWarning, match="RunConfig.sync_config: rljax writes"):
        tune.RunConfig(sync_config=tune.SyncConfig(sync_period=60))
    with pytest.warns(UserWarning, match="RunConfig.log_to_file"):
        tune.RunConfig(log_to_file=True)
    with pytest.raises(ConfigError, match="storage_path or local_dir"):
        tune.RunConfig(storage_path="a", local_dir="b")
    assert tune.RunConfig(local_dir="old").storage_path == "old"
