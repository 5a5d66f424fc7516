"""register_trainable, with_parameters, get_context, create_scheduler and create_searcher:
Tune's helpers, with cheap function trainables."""

from __future__ import annotations

from pathlib import Path

import pytest

from rljax import tune
from rljax.tune import schedulers, search, trainables
from rljax.utils.errors import ConfigError


@pytest.fixture(autouse=True)
def _no_registered_trainables(monkeypatch):
    monkeypatch.setattr(trainables, "TRAINABLES", {})


def _fit(trainable, tmp_path, param_space=None):
    return tune.Tuner(
        trainable,
        param_space=param_space or {"a": tune.grid_search([1, 2])},
        run_config=tune.RunConfig(name="e", storage_path=str(tmp_path), verbose=0),
    ).fit()


def test_with_parameters_binds_objects_beside_the_config(tmp_path):
    data = list(range(10))  # what a script keeps out of its config: a dataset, a model

    def train_fn(config, data, scale=1):
        tune.report({"score": config["a"] * sum(data) * scale})

    grid = _fit(tune.with_parameters(train_fn, data=data, scale=2), tmp_path)
    assert [r.metrics["score"] for r in grid] == [90, 180]
    with pytest.raises(
        ConfigError,
        match=r"with_parameters\('train_fn', dataa\): missing a required argument: 'data'",
    ):
        tune.with_parameters(train_fn, dataa=data)
    with pytest.raises(ConfigError, match="an algorithm trainable takes its settings"):
        tune.with_parameters(tune.registry.get_trainable_cls("PPO"), data=data)


def test_register_trainable_names_a_function_for_the_tuner_and_tune_run(tmp_path):
    def climb(config):
        for step in range(1, 4):
            tune.report({"score": config["a"] * step})

    tune.register_trainable("climb", climb)
    assert tune.registry.get_trainable_cls("climb") is climb
    grid = _fit("climb", tmp_path / "t")
    assert [r.metrics["score"] for r in grid] == [3, 6]
    assert all(Path(r.path).name.startswith("climb_") for r in grid)
    analysis = tune.run("climb", config={"a": 5}, storage_path=str(tmp_path / "r"), verbose=0)
    assert analysis.trials[0].metrics["score"] == 15
    # an algorithm name still means the algorithm unless registered over
    assert tune.registry.get_trainable_cls("PPO").__name__ == "PPO"
    for bad_name, bad, match in (
        ("", climb, "non-empty str"),
        ("x", 42, "trainable=42"),
    ):
        with pytest.raises(ConfigError, match=match):
            tune.register_trainable(bad_name, bad)
    with pytest.raises(ConfigError, match="a name given to tune.register_trainable"):
        _fit("nothing_registered", tmp_path / "n")


def test_get_context_names_the_running_trial(tmp_path):
    seen = []

    def train_fn(config):
        ctx = tune.get_context()
        seen.append(
            (
                ctx.get_trial_id(),
                ctx.get_trial_name(),
                ctx.get_trial_dir(),
                ctx.get_experiment_name(),
                ctx.get_world_size(),
                ctx.get_world_rank(),
            )
        )
        tune.report({"x": 1})

    grid = _fit(train_fn, tmp_path)
    for result, (trial_id, name, trial_dir, experiment, size, rank) in zip(grid, seen, strict=True):
        assert trial_id == result.metrics["trial_id"]
        assert trial_dir == result.path and name == Path(result.path).name
        assert experiment == "e" and (size, rank) == (1, 0)
    with pytest.raises(RuntimeError, match="no trial is running"):
        tune.get_context()


def test_create_scheduler_and_searcher_by_tunes_names():
    asha = tune.create_scheduler("async_hyperband", metric="m", mode="max", max_t=9)
    assert isinstance(asha, schedulers.AsyncHyperBandScheduler)
    assert isinstance(tune.create_scheduler("FIFO"), schedulers.FIFOScheduler)
    assert isinstance(
        tune.create_scheduler("median_stopping_rule", metric="m", mode="min"),
        schedulers.MedianStoppingRule,
    )
    assert isinstance(tune.create_searcher("random"), search.BasicVariantGenerator)
    with pytest.raises(ConfigError, match=r"scheduler='pb2': rljax has \['asha'"):
        tune.create_scheduler("pb2")
    with pytest.raises(ConfigError, match="search_alg='hyperopt'"):
        tune.create_searcher("hyperopt")
