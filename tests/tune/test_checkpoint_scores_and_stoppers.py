"""Tune's checkpoint ranking (``checkpoint_score_attribute``), best checkpoints, the
``Checkpoint`` object's directory and metadata calls, and Tune's other stoppers."""

from __future__ import annotations

import datetime
import tempfile
from pathlib import Path

import numpy as np
import pytest

from rljax import tune
from rljax.tune.stopper import (
    CombinedStopper,
    ExperimentPlateauStopper,
    MaximumIterationStopper,
    TimeoutStopper,
    TrialPlateauStopper,
)
from rljax.utils.errors import ConfigError

SCORES = [1, 5, 2, 3]


def _scored(config):
    """Reports SCORES times x, a checkpoint (a file naming its iteration) with each."""
    for i, score in enumerate(SCORES):
        d = tempfile.mkdtemp()
        Path(d, "i").write_text(str(i + 1))
        tune.report({"score": score * config["x"]}, checkpoint=tune.Checkpoint.from_directory(d))


def _iterations(result) -> list[int]:
    return [int(Path(c.path, "i").read_text()) for c, _ in result.best_checkpoints]


def test_best_checkpoint_is_the_best_scoring_one_not_the_newest(tmp_path):
    """Was: ``tune.run(...).best_checkpoint`` returned the best trial's newest checkpoint."""
    analysis = tune.run(
        _scored,
        config={"x": tune.grid_search([1, 2])},
        metric="score",
        mode="max",
        storage_path=str(tmp_path),
        verbose=0,
    )
    best = analysis.best_trial
    assert best.config == {"x": 2} and best.last_result["score"] == 6
    assert Path(analysis.best_checkpoint.path, "i").read_text() == "2"  # score 10, not 6
    assert Path(analysis.get_last_checkpoint().path, "i").read_text() == "4"
    worst = analysis.get_best_checkpoint(best, "score", "min")
    assert Path(worst.path, "i").read_text() == "1"
    assert best.get_best_checkpoint("score", "max") == analysis.best_checkpoint
    with pytest.raises(ConfigError, match="none of trial .* 4 checkpoints has that metric"):
        best.get_best_checkpoint("scor", "max")
    assert sorted(c["x"] for c in analysis.get_all_configs().values()) == [1, 2]
    frames = analysis.trial_dataframes
    assert sorted(list(f["score"]) for f in frames.values()) == [[1, 5, 2, 3], [2, 10, 4, 6]]
    assert list(analysis.best_dataframe["score"]) == [2, 10, 4, 6]
    assert analysis.best_result_df["score"].tolist() == [6]


@pytest.mark.parametrize(
    ("keep", "order", "kept"), [(2, "max", [2, 4]), (2, "min", [1, 3, 4]), (1, "max", [2, 4])]
)
def test_num_to_keep_keeps_the_best_scores_and_the_newest(tmp_path, keep, order, kept):
    """Over scores 1, 5, 2, 3 the best ``keep`` stay, and the newest too, as Tune's (so keep + 1
    may stay): with 2 and "max" the 5 and the 3 (the newest), with "min" the 1, the 2 and the
    newest; with 1 the 5 and the newest (the best was deleted when only keep stayed)."""
    grid = tune.Tuner(
        _scored,
        param_space={"x": 1},
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            checkpoint_config=tune.CheckpointConfig(
                num_to_keep=keep, checkpoint_score_attribute="score", checkpoint_score_order=order
            ),
            verbose=0,
        ),
    ).fit()
    assert _iterations(grid[0]) == kept
    assert len(list(Path(grid[0].path).glob("checkpoint_*"))) == len(kept)
    assert Path(grid[0].checkpoint.path, "i").read_text() == "4"  # the newest
    # Without a score attribute the newest stay, as before.
    grid = tune.Tuner(
        _scored,
        param_space={"x": 1},
        run_config=tune.RunConfig(
            storage_path=str(tmp_path / "plain"),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
            verbose=0,
        ),
    ).fit()
    assert _iterations(grid[0]) == [3, 4]


def test_checkpoint_config_refuses_a_bad_score_setting():
    with pytest.raises(ConfigError, match="checkpoint_score_order='best': use 'max' or 'min'"):
        tune.CheckpointConfig(checkpoint_score_attribute="score", checkpoint_score_order="best")
    with pytest.raises(ConfigError, match="checkpoint_score_attribute=3: use a result key"):
        tune.CheckpointConfig(checkpoint_score_attribute=3)


def test_checkpoint_as_directory_to_directory_and_metadata(tmp_path):
    source = tmp_path / "c"
    source.mkdir()
    (source / "weights").write_text("w")
    checkpoint = tune.Checkpoint.from_directory(source)
    with checkpoint.as_directory() as d:
        assert Path(d, "weights").read_text() == "w"
    assert checkpoint.get_metadata() == {}
    checkpoint.set_metadata({"iteration": 3})
    checkpoint.update_metadata({"score": 1.5})
    assert checkpoint.get_metadata() == {"iteration": 3, "score": 1.5}
    copy = tune.Checkpoint(checkpoint.to_directory(tmp_path / "copy"))
    assert Path(copy.path, "weights").read_text() == "w"
    assert copy.get_metadata() == {"iteration": 3, "score": 1.5}
    assert Path(checkpoint.to_directory()).is_dir()  # a new temporary directory
    with pytest.raises(ConfigError, match="not JSON data"):
        checkpoint.set_metadata({"f": object()})
    (source / ".metadata.json").write_text("[1]")
    with pytest.raises(ConfigError, match="not a JSON object"):
        checkpoint.get_metadata()


def test_trial_plateau_stopper_by_hand():
    stopper = TrialPlateauStopper("m", std=0.1, num_results=3, grace_period=4)
    # std of the last 3 values: [1, 1, 1] after 3 results, but the grace period is 4.
    assert [stopper("a", {"m": v}) for v in (5.0, 1.0, 1.0, 1.0)] == [False] * 3 + [True]
    assert stopper("b", {"m": 1.0}) is False  # trials are counted apart
    # np.std([1.0, 1.1, 1.3]) = 0.1247 > 0.1 keeps going; [1.1, 1.3, 1.3]: 0.0943 stops.
    assert np.std([1.0, 1.1, 1.3]) > 0.1 > np.std([1.1, 1.3, 1.3])
    s = TrialPlateauStopper("m", std=0.1, num_results=3, grace_period=0)
    assert [s("a", {"m": v}) for v in (1.0, 1.1, 1.3, 1.3)] == [False, False, False, True]
    # metric_threshold: a plateau below it (mode max) goes on.
    s = TrialPlateauStopper("m", num_results=2, grace_period=0, metric_threshold=10, mode="max")
    assert [s("a", {"m": v}) for v in (3.0, 3.0, 12.0, 12.0)] == [False, False, False, True]
    # A nested metric by its "/" key; a result without its section is passed over.
    s = TrialPlateauStopper("env_runners/r", num_results=2, grace_period=0)
    assert s("a", {"evaluation": {}}) is False
    assert [s("a", {"env_runners": {"r": 2.0}}) for _ in range(2)] == [False, True]
    with pytest.raises(ConfigError, match="'env_runners/rr' is not in trial a's results"):
        TrialPlateauStopper("env_runners/rr")("a", {"env_runners": {"r": 1.0}})
    with pytest.raises(ConfigError, match="metric_threshold=...\\) needs mode"):
        TrialPlateauStopper("m", metric_threshold=1.0)
    with pytest.raises(ConfigError, match="num_results=0\\): use an int >= 1"):
        TrialPlateauStopper("m", num_results=0)


def test_experiment_plateau_combined_and_timeout_stoppers():
    s = ExperimentPlateauStopper("m", std=0.5, top=2, mode="max", patience=2)
    # best two: [1], [1, 5] (std 2), [5, 5] (std 0: 1 plateaued result), [5, 5] (2: stop)
    assert [s("t", {"m": v}) for v in (1.0, 5.0, 5.0, 4.0)] == [False, False, False, True]
    assert s.stop_all() is True
    combined = CombinedStopper(MaximumIterationStopper(2), TimeoutStopper(3600))
    assert combined("t", {"training_iteration": 1}) is False
    assert combined("t", {"training_iteration": 2}) is True
    assert combined.stop_all() is False
    assert TimeoutStopper(datetime.timedelta(seconds=0)).stop_all() is True
    with pytest.raises(ConfigError, match="TimeoutStopper\\(timeout=-1\\)"):
        TimeoutStopper(-1)
    with pytest.raises(ConfigError, match="give tune.Stopper instances"):
        CombinedStopper(lambda trial_id, result: True)


def test_a_tuner_stops_plateaued_trials(tmp_path):
    def flat(config):
        for i in range(20):
            tune.report({"m": 1.0 if i >= 2 else float(i + 5)})

    grid = tune.Tuner(
        flat,
        param_space={},
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            stop=TrialPlateauStopper("m", num_results=3, grace_period=3),
            verbose=0,
        ),
    ).fit()
    assert [h["m"] for h in grid[0].history] == [5.0, 6.0, 1.0, 1.0, 1.0]


def test_a_trainables_save_checkpoint_may_return_its_directory(tmp_path):
    class Returns(tune.Trainable):
        def setup(self, config):
            self.n = 0

        def step(self):
            self.n += 1
            return {"n": self.n}

        def save_checkpoint(self, checkpoint_dir):
            Path(checkpoint_dir, "n").write_text(str(self.n))
            return checkpoint_dir  # Tune's older style

        def load_checkpoint(self, checkpoint):
            self.n = int(Path(checkpoint, "n").read_text())

    t = Returns({})
    t.train()
    path = t.save_to_path(tmp_path / "c")
    again = Returns({})
    again.restore(path)
    assert again.n == 1
