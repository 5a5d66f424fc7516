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
        # Tune's trial name (was: the directory's name).
        assert trial_dir == result.path and name == f"train_fn_{trial_id}"
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


# ---------------------------------------------------------------------- tune.Trainable
class Counter(tune.Trainable):
    """Adds ``config["a"]`` per step; saves its total as a dict; ``done`` at ``config["end"]``."""

    events: list = []

    def setup(self, config, offset=0):
        self.total = offset
        self.events.append(("setup", config["a"]))

    def step(self):
        self.total += self.config["a"]
        return {"total": self.total, "done": self.total >= self.config.get("end", 10**9)}

    def save_checkpoint(self, checkpoint_dir):
        return {"total": self.total}

    def load_checkpoint(self, checkpoint):
        self.total = checkpoint["total"]
        self.events.append(("load", self.total))

    def cleanup(self):
        self.events.append(("cleanup", self.total))


def test_trainable_class_runs_as_trials_with_checkpoints(tmp_path):
    Counter.events = []
    grid = tune.Tuner(
        Counter,
        param_space={"a": tune.grid_search([1, 3])},
        run_config=tune.RunConfig(
            name="e",
            storage_path=str(tmp_path),
            stop={"training_iteration": 4},
            checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=2, checkpoint_at_end=True),
            verbose=0,
        ),
    ).fit()
    assert [r.metrics["total"] for r in grid] == [4, 12]
    assert [r.metrics["training_iteration"] for r in grid] == [4, 4]
    assert Counter.events == [("setup", 1), ("cleanup", 4), ("setup", 3), ("cleanup", 12)]
    ckpt = Path(grid[1].checkpoint.path)
    assert ckpt.name == "checkpoint_000004"
    saved = sorted(p.name for p in Path(grid[1].path).glob("checkpoint_*"))
    assert saved == ["checkpoint_000002", "checkpoint_000004"]
    # tune.run(checkpoint_freq=2) without checkpoint_at_end: Tune's default saves at the end.
    analysis = tune.run(
        Counter,
        config={"a": 1},
        stop={"training_iteration": 3},
        checkpoint_freq=2,
        storage_path=str(tmp_path / "run"),
        verbose=0,
    )
    (trial,) = analysis.trials
    saved = sorted(p.name for p in Path(trial.path).glob("checkpoint_*"))
    assert saved == ["checkpoint_000002", "checkpoint_000003"]
    # the checkpoint restores outside the Tuner: total and iteration count
    again = Counter({"a": 3})
    again.restore(ckpt)
    assert (again.total, again.iteration) == (12, 4)
    assert again.train()["training_iteration"] == 5 and again.total == 15


def test_trainable_done_ends_the_trial_and_a_failure_resumes_from_its_checkpoint(tmp_path):
    class Flaky(Counter):
        failed = False

        def step(self):
            if self.total == 2 and not Flaky.failed:
                Flaky.failed = True
                raise RuntimeError("flaky at 2")
            return super().step()

    Counter.events = []
    grid = tune.Tuner(
        tune.with_parameters(Flaky, offset=0),
        param_space={"a": 1, "end": 5},
        run_config=tune.RunConfig(
            name="e",
            storage_path=str(tmp_path),
            checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1),
            failure_config=tune.FailureConfig(max_failures=1),
            verbose=0,
        ),
    ).fit()
    assert grid.num_errors == 0
    assert grid[0].metrics["total"] == 5 and grid[0].metrics["done"] is True
    # run 1: 1, 2, then raises; run 2 restores total 2 (iteration 2) and ends at done (5)
    assert ("load", 2) in Counter.events
    assert [h["training_iteration"] for h in grid[0].history] == [1, 2, 3, 4, 5]
    # with_parameters hands setup its keywords
    bound = tune.with_parameters(Counter, offset=100)
    assert bound({"a": 1}).total == 100 and issubclass(bound, Counter)
    with pytest.raises(ConfigError, match="unexpected keyword argument 'offst'"):
        tune.with_parameters(Counter, offst=1)


def test_trainable_refuses_what_it_cannot_save_or_load(tmp_path):
    class NotDict(tune.Trainable):
        def step(self):
            return [1]

        def save_checkpoint(self, checkpoint_dir):
            return object()

    t = NotDict({})
    with pytest.raises(TypeError, match=r"NotDict.step\(\) returned a list; return a dict"):
        t.train()
    with pytest.raises(TypeError, match="returned a object; return None"):
        t.save_to_path(tmp_path / "c")
    with pytest.raises(ConfigError, match="not a checkpoint of a tune.Trainable"):
        t.restore(tmp_path / "nothing")
    with pytest.raises(NotImplementedError, match="step"):
        tune.Trainable({}).train()


# ---------------------------------------------------------------------- run_experiments
def test_run_experiments_runs_each_spec_through_tune_run(tmp_path):
    seen = []

    def train_fn(config):
        seen.append((config["env"], config["a"]))
        tune.report({"score": config["a"]})

    trials = tune.run_experiments(
        {
            "first": {
                "run": train_fn,
                "env": "CartPole-v1",  # RLlib's shorthand: moved into the config
                "config": {"a": tune.grid_search([1, 2])},
                "stop": {"training_iteration": 1},
                "storage_path": str(tmp_path),
            },
        },
        verbose=0,
    )
    second = tune.Experiment(
        "second", train_fn, config={"env": "x", "a": 3}, local_dir=str(tmp_path), num_samples=2
    )
    trials += tune.run_experiments([second], verbose=0)
    assert seen == [("CartPole-v1", 1), ("CartPole-v1", 2), ("x", 3), ("x", 3)]
    assert [t.metrics["score"] for t in trials] == [1, 2, 3, 3]
    assert {Path(t.path).parent.name for t in trials} == {"first", "second"}
    for bad, match in (
        ({"e": {"config": {}}}, "no trainable given"),
        ({"e": {"run": train_fn, "stopp": {}}}, r"unknown keywords \['stopp'\]"),
        ("PPO", "give an Experiment"),
    ):
        with pytest.raises(ConfigError, match=match):
            tune.run_experiments(bad, verbose=0)


def test_a_misspelled_metric_fails_on_the_first_result(tmp_path):
    """As Tune's strict metric check (was: every trial ran, then best_config failed)."""
    ran = []

    def fn(config):
        for i in range(3):
            ran.append(i)
            tune.report({"episode_reward_mean": float(i), "nested": {"a": 1}})

    with pytest.raises(ConfigError, match=r"'episode_reward_mena' is not in trial .*'episode_"):
        tune.run(fn, config={"x": tune.grid_search([1, 2])}, metric="episode_reward_mena",
                 mode="max", storage_path=str(tmp_path), verbose=0)  # fmt: skip
    assert ran == [0]  # the first result of the first trial
    # A metric whose section a result lacks (evaluation/... between evaluations) waits.
    analysis = tune.run(fn, config={}, metric="evaluation/x", mode="max",
                        storage_path=str(tmp_path / "b"), verbose=0)  # fmt: skip
    assert len(analysis.trials) == 1

    # ... and is checked on the first result that has the section.
    def evaluates_later(config):
        tune.report({"a": 1.0})
        tune.report({"a": 2.0, "evaluation": {"x": 1.0}})
        ran.append("after")

    with pytest.raises(ConfigError, match=r"'evaluation/y' is not in trial .*'evaluation/x'"):
        tune.run(evaluates_later, config={}, metric="evaluation/y", mode="max",
                 storage_path=str(tmp_path / "c"), verbose=0)  # fmt: skip
    assert "after" not in ran


def test_a_bad_value_in_a_grid_fails_before_any_trial_trains(tmp_path):
    """Was: trial 0 trained to its end, then trial 1 failed on minibatch_size=-1."""
    with pytest.raises(ConfigError, match=r"^trial 1 \(.*\): minibatch_size=-1 \(int\); use an"):
        tune.run(
            "PPO",
            config={"env": "CartPole-v1", "sgd_minibatch_size": tune.grid_search([64, -1])},
            stop={"training_iteration": 1},
            storage_path=str(tmp_path),
            verbose=0,
        )
    assert not list(tmp_path.rglob("result.json"))  # nothing ran
