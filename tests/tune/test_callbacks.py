"""RunConfig(callbacks=...): Tune's hooks in order with its arguments, TensorBoard event files
read back with TensorBoard's own reader, and a failing callback named."""

from __future__ import annotations

from pathlib import Path

import pytest

from rljax import tune
from rljax.utils.errors import ConfigError
from rljax.utils.tensorboard import crc32c

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def test_crc32c_of_the_check_string():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C catalogue's check value
    assert crc32c(b"") == 0


class Recorder(tune.Callback):
    def __init__(self):
        self.calls = []

    def setup(self, stop=None, num_samples=None, **info):
        self.calls.append(("setup", num_samples, info["total_num_samples"]))

    def on_trial_start(self, iteration, trials, trial, **info):
        self.calls.append(("start", trial.trial_id[-1], iteration, len(trials)))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.calls.append(("result", trial.trial_id[-1], iteration, result["score"]))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.calls.append(("complete", trial.trial_id[-1], iteration))

    def on_trial_error(self, iteration, trials, trial, **info):
        self.calls.append(("error", trial.trial_id[-1], iteration))

    def on_experiment_end(self, trials, **info):
        self.calls.append(("end", len(trials)))


def train_fn(config):
    if config["a"] == 3:
        raise ValueError("bad a")
    for step in (1, 2):
        metrics = {"score": config["a"] * step, "inner": {"x": step / 4}, "note": "text"}
        if config["a"] == 2:
            metrics["num_env_steps_sampled_lifetime"] = 100 * step
        tune.report(metrics)


def test_hooks_in_order_and_tensorboard_files_hold_every_number(tmp_path):
    recorder = Recorder()
    grid = tune.Tuner(
        train_fn,
        param_space={"a": tune.grid_search([1, 2, 3])},
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            name="cb",
            callbacks=[recorder, tune.logger.TBXLoggerCallback()],
            verbose=0,
        ),
    ).fit()
    assert grid.num_errors == 1
    assert recorder.calls == [
        ("setup", 1, 3),
        ("start", "0", 0, 1),
        ("result", "0", 1, 1),
        ("result", "0", 2, 2),
        ("complete", "0", 2),
        ("start", "1", 2, 2),
        ("result", "1", 3, 2),
        ("result", "1", 4, 4),
        ("complete", "1", 4),
        ("start", "2", 4, 3),
        ("error", "2", 4),
        ("end", 3),
    ]
    for result, steps in zip(grid, ([1, 2], [100, 200]), strict=False):
        acc = event_accumulator.EventAccumulator(result.path)
        acc.Reload()
        tags = set(acc.Tags()["scalars"])
        assert {"score", "inner/x", "training_iteration", "time_total_s"} <= tags
        assert "note" not in tags and "done" not in tags  # text and booleans are not scalars
        for tag in ("score", "inner/x"):
            logged = [(e.step, e.value) for e in acc.Scalars(tag)]
            key = tag.split("/")
            expected = [h[key[0]] if len(key) == 1 else h[key[0]][key[1]] for h in result.history]
            assert logged == list(zip(steps, expected, strict=True))


def test_a_failing_callback_is_named_and_bad_callbacks_are_refused(tmp_path):
    class Broken(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result, **info):
            raise RuntimeError("disk full")

    with pytest.raises(
        ConfigError, match=r"Broken\.on_trial_result raised RuntimeError: disk full"
    ):
        tune.Tuner(
            train_fn,
            param_space={"a": 1},
            run_config=tune.RunConfig(storage_path=str(tmp_path), callbacks=[Broken()], verbose=0),
        ).fit()
    with pytest.raises(ConfigError, match="RunConfig.callbacks='tbx': use a list of tune.Callback"):
        tune.RunConfig(callbacks="tbx")
    with pytest.raises(ConfigError, match="use a list of tune.Callback"):
        tune.RunConfig(callbacks=[object()])


def test_wandb_logger_callback_logs_each_trial_offline(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    from log_readers import wandb_offline_run

    monkeypatch.setenv("WANDB_SILENT", "true")
    grid = tune.Tuner(
        train_fn,
        param_space={"a": tune.grid_search([1, 2])},
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            name="wb",
            callbacks=[
                tune.logger.WandbLoggerCallback(project="rljax-test", mode="offline"),
                tune.logger.CSVLoggerCallback(),
                tune.logger.JsonLoggerCallback(),
            ],
            verbose=0,
        ),
    ).fit()
    for result, steps in zip(grid, ([1, 2], [100, 200]), strict=True):
        config, history = wandb_offline_run(result.path)
        assert config == {"a": result.config["a"]}
        assert [s for s, _ in history] == steps
        assert [v["score"] for _, v in history] == [h["score"] for h in result.history]
        assert [v["inner/x"] for _, v in history] == [0.25, 0.5]
        # The CSV and JSON callbacks change nothing: one row per result, as without them.
        assert (Path(result.path) / "progress.csv").read_text().count("\n") == 3
    with pytest.raises(ConfigError, match="callbacks="):
        tune.RunConfig(callbacks=[tune.logger.WandbLoggerCallback])


def test_callbacks_see_tunes_trial_and_each_checkpoint(tmp_path):
    """Was: the trial passed to hooks had no status, last_result, checkpoint, trainable_name,
    experiment_tag or logdir, printed as an object, and on_checkpoint was never called."""
    import tempfile

    seen = []

    class Watch(tune.Callback):
        def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
            seen.append(("checkpoint", Path(checkpoint.path).name, trial.status))

        def on_trial_complete(self, iteration, trials, trial, **info):
            seen.append(
                (
                    "complete",
                    str(trial),
                    trial.status,
                    trial.last_result["score"],
                    Path(trial.checkpoint.path).name,
                    trial.trainable_name,
                    trial.experiment_tag,
                    trial.logdir == str(trial.path),
                )
            )

    class OnlyResults(tune.Callback):  # one hook; the base class's others do nothing
        def on_trial_result(self, iteration, trials, trial, result, **info):
            seen.append(("result", result["score"]))

    def train_fn(config):
        for i in range(2):
            d = tempfile.mkdtemp()
            tune.report({"score": i + config["x"]}, checkpoint=tune.Checkpoint.from_directory(d))

    tune.Tuner(
        train_fn,
        param_space={"x": tune.grid_search([10])},
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), callbacks=[Watch(), OnlyResults()], verbose=0
        ),
    ).fit()
    (name,) = {s[1] for s in seen if s[0] == "complete"}
    assert name.startswith("train_fn_")
    assert seen == [
        ("checkpoint", "checkpoint_000001", "RUNNING"),
        ("result", 10),
        ("checkpoint", "checkpoint_000002", "RUNNING"),
        ("result", 11),
        ("complete", name, "TERMINATED", 11, "checkpoint_000002", "train_fn", "0_x=10", True),
    ]
