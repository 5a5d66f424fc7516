"""Tuner, stop criteria, results, output files and tune.run: mostly with cheap function trainables,
one real PPO grid."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import pytest

from rljax import tune
from rljax.utils.errors import ConfigError


def climb(config):
    """Reports ``score = a * step`` for 10 steps, with a nested key."""
    for step in range(1, 11):
        tune.report({"score": config["a"] * step, "inner": {"step": step}})


def _fit(trainable=climb, param_space=None, tmp_path=None, stop=None, **tune_kwargs):
    return tune.Tuner(
        trainable,
        param_space=param_space if param_space is not None else {"a": tune.grid_search([1, 2])},
        tune_config=tune.TuneConfig(**tune_kwargs),
        run_config=tune.RunConfig(name="exp", storage_path=str(tmp_path), stop=stop, verbose=0),
    ).fit()


def test_grid_times_num_samples_trials_in_order(tmp_path):
    grid = _fit(
        param_space={"a": tune.grid_search([1, 2, 3]), "b": tune.uniform(0, 1)},
        tmp_path=tmp_path,
        num_samples=2,
        seed=0,
    )
    assert len(grid) == 6 and grid.num_terminated == 6 and grid.num_errors == 0
    assert [r.config["a"] for r in grid] == [1, 2, 3, 1, 2, 3]
    assert len({r.config["b"] for r in grid}) == 6
    assert [r.config for r in grid] == tune.generate_variants(
        {"a": tune.grid_search([1, 2, 3]), "b": tune.uniform(0, 1)}, num_samples=2, seed=0
    )
    assert all(r.metrics["training_iteration"] == 10 and r.metrics["done"] for r in grid)
    assert grid[0].metrics["inner"] == {"step": 10}  # nested, as reported
    assert len(grid[-1].history) == 10 and grid[1:3][0] is grid[1]


def test_stop_dict_on_nested_key_and_iteration(tmp_path):
    grid = _fit(tmp_path=tmp_path, stop={"inner/step": 4, "score": 6})
    # a=1 stops at step 4 (inner/step); a=2 stops at step 3 (score 6)
    assert [r.metrics["training_iteration"] for r in grid] == [4, 3]


def test_a_stop_key_whose_section_a_result_lacks_waits_and_a_misspelt_one_is_refused(caplog):
    from rljax.tune.stopper import DictStopper

    # Evaluation results come every evaluation_interval iterations: until then the key's
    # section is missing, and the criterion waits for it (Ray Tune passes over it too).
    stop = DictStopper({"evaluation/env_runners/episode_return_mean": 100})
    assert stop("t0", {"env_runners": {"episode_return_mean": 500}}) is False
    assert stop("t0", {"env_runners": {}, "training_iteration": 2}) is False
    said = [
        r.getMessage() for r in caplog.records if "no 'evaluation/env_runners'" in r.getMessage()
    ]
    assert len(said) == 1  # once
    assert stop("t0", {"evaluation": {"env_runners": {"episode_return_mean": 150}}}) is True
    # A section the result has, without the key: a misspelling that would never stop it.
    misspelt = DictStopper({"env_runners/episode_reward_mean": 100})
    with pytest.raises(ConfigError, match="'env_runners/episode_reward_mean' is not in trial t0"):
        misspelt("t0", {"env_runners": {"episode_return_mean": 500}})
    with pytest.raises(ConfigError, match="'scroe' is not in trial t0's results"):
        DictStopper({"scroe": 1})("t0", {"score": 2})


def test_stop_function_and_stopper(tmp_path):
    grid = _fit(tmp_path=tmp_path / "f", stop=lambda trial_id, result: result["score"] >= 4)
    assert [r.metrics["score"] for r in grid] == [4, 4]

    grid = _fit(tmp_path=tmp_path / "m", stop=tune.MaximumIterationStopper(2))
    assert [r.metrics["training_iteration"] for r in grid] == [2, 2]

    class StopAllAfterFive(tune.Stopper):
        def __init__(self):
            self.seen = 0

        def __call__(self, trial_id, result):
            self.seen += 1
            return False

        def stop_all(self):
            return self.seen >= 5

    grid = _fit(tmp_path=tmp_path / "s", stop=StopAllAfterFive())
    assert len(grid) == 1 and grid[0].metrics["training_iteration"] == 5  # trial 2 never ran


def test_unknown_stop_key_fails_naming_it(tmp_path):
    with pytest.raises(ConfigError, match="'scroe'.*score"):
        _fit(tmp_path=tmp_path, stop={"scroe": 3})
    with pytest.raises(ConfigError, match="stop="):
        tune.RunConfig(stop=3)

    def swallows(config):
        try:
            tune.report({"score": 1})
        except Exception as e:  # a trainable's own handler must not hide the stop key's error
            raise AssertionError("reached") from e

    with pytest.raises(ConfigError, match="'scroe'"):
        _fit(swallows, tmp_path=tmp_path / "2", stop={"scroe": 3})


def test_best_result_scopes_and_errors(tmp_path):
    def ups_and_downs(config):
        for value in config["values"]:
            tune.report({"score": value})

    grid = _fit(
        ups_and_downs,
        param_space={"values": tune.grid_search([[1, 9, 2], [3, 3, 3]])},
        tmp_path=tmp_path,
        metric="score",
        mode="max",
    )
    assert grid.get_best_result().config["values"] == [3, 3, 3]  # last: 2 < 3
    assert grid.get_best_result(scope="all").config["values"] == [1, 9, 2]
    assert grid.get_best_result(scope="avg").config["values"] == [1, 9, 2]  # 4 > 3
    assert grid.get_best_result("score", "min").config["values"] == [1, 9, 2]
    with pytest.raises(ConfigError, match="'loss'.*score"):
        grid.get_best_result("loss", "max")
    with pytest.raises(ConfigError, match="mode='best'"):
        grid.get_best_result("score", "best")
    with pytest.raises(ConfigError, match="needs a metric and a mode"):
        _fit(tmp_path=tmp_path / "2").get_best_result()
    # One trial is the best whatever the metric, as in Tune (RLlib's custom_experiment.py
    # calls get_best_result() with no metric anywhere).
    one = _fit(param_space={"a": 5}, tmp_path=tmp_path / "3")
    assert len(one) == 1 and one.get_best_result().config["a"] == 5
    # Every trial failed before a result: the error says so (not which metric is missing).

    def broken(config):
        raise RuntimeError("needs a GPU")

    failed = _fit(broken, tmp_path=tmp_path / "4", metric="score", mode="max")
    with pytest.raises(ConfigError, match="2 of 2 trials failed .*RuntimeError: needs a GPU"):
        failed.get_best_result()


def test_a_trial_that_raises_is_recorded_and_the_others_go_on(tmp_path):
    def sometimes_fails(config):
        tune.report({"score": config["a"]})
        if config["a"] == 2:
            raise RuntimeError("boom")
        tune.report({"score": config["a"] + 10})

    grid = _fit(
        sometimes_fails,
        param_space={"a": tune.grid_search([1, 2, 3])},
        tmp_path=tmp_path,
        metric="score",
        mode="max",
    )
    assert len(grid) == 3 and grid.num_errors == 1 and grid.num_terminated == 2
    assert isinstance(grid.errors[0], RuntimeError) and grid[1].error is grid.errors[0]
    assert grid[1].metrics["score"] == 2 and not grid[1].metrics["done"]
    assert (Path(grid[1].path) / "error.txt").read_text().startswith("RuntimeError: boom")
    assert grid.get_best_result().config == {"a": 3}


def test_output_files_as_tune_writes_them(tmp_path):
    import numpy as np

    def numpy_values(config):
        for i in range(3):
            tune.report(
                {"x": np.float32(i) * config["a"], "v": np.arange(2), "n": {"k": np.int64(i)}}
            )

    grid = _fit(numpy_values, tmp_path=tmp_path)
    assert Path(grid.experiment_path) == tmp_path / "exp"
    trial_dir = Path(grid[1].path)
    assert trial_dir.parent == tmp_path / "exp" and "a=2" in trial_dir.name
    assert json.loads((trial_dir / "params.json").read_text()) == {"a": 2}
    lines = [json.loads(line) for line in (trial_dir / "result.json").read_text().splitlines()]
    assert [line["x"] for line in lines] == [0.0, 2.0, 4.0]
    assert lines[2]["v"] == [0, 1] and lines[2]["n"] == {"k": 2} and lines[0]["config"] == {"a": 2}
    assert {line["trial_id"] for line in lines} == {grid[1].trial_id}
    rows = list(csv.DictReader((trial_dir / "progress.csv").open()))
    assert len(rows) == 3 and rows[2]["n/k"] == "2" and rows[2]["training_iteration"] == "3"


def test_checkpoints_reported_by_a_function_trainable(tmp_path):
    def saves(config):
        for i in range(4):
            src = tmp_path / f"src{i}"
            src.mkdir()
            (src / "state.txt").write_text(str(i))
            tune.report({"i": i}, checkpoint=tune.Checkpoint.from_directory(src))

    tuner = tune.Tuner(
        saves,
        run_config=tune.RunConfig(
            storage_path=str(tmp_path / "out"),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
            verbose=0,
        ),
    )
    with pytest.raises(RuntimeError, match=r"no fit\(\) of this Tuner has returned"):
        tuner.get_results()
    grid = tuner.fit()
    assert tuner.get_results() is grid
    result = grid[0]
    assert Path(result.checkpoint.path, "state.txt").read_text() == "3"
    kept = sorted(p.name for p in Path(result.path).glob("checkpoint_*"))
    assert kept == ["checkpoint_000003", "checkpoint_000004"]
    # Tune's best_checkpoints: the kept ones, oldest first, with their iterations' results.
    best = [
        (Path(c.path).name, m["i"], m["training_iteration"]) for c, m in result.best_checkpoints
    ]
    assert best == [("checkpoint_000003", 2, 3), ("checkpoint_000004", 3, 4)]
    assert result.best_checkpoints[-1][0] == result.checkpoint
    assert Path(grid.experiment_path).parent == tmp_path / "out"
    assert grid[0].config == {}
    # The same from the experiment's files (a restored Tuner's results).
    restored = tune.Tuner.restore(grid.experiment_path, trainable=saves).get_results()
    assert [(Path(c.path).name, m["i"]) for c, m in restored[0].best_checkpoints] == [
        ("checkpoint_000003", 2),
        ("checkpoint_000004", 3),
    ]


def test_time_budget_stops_the_running_trial_and_starts_no_more(tmp_path):
    import time

    def slow(config):  # 20 s at least: the budget always ends it
        for _ in range(1000):
            time.sleep(0.02)
            tune.report({"a": config["a"]})

    # The budget counts from fit()'s start: far above the milliseconds before the first trial
    # starts, so that it starts on a loaded machine too.
    grid = _fit(slow, tmp_path=tmp_path, time_budget_s=1.0)
    assert len(grid) == 1 and grid[0].metrics["training_iteration"] < 1000


def test_bad_input_fails_before_anything_runs(tmp_path):
    with pytest.raises(ConfigError, match="'PPOO'.*PPO"):
        tune.Tuner("PPOO", run_config=tune.RunConfig(stop={"training_iteration": 1}))
    with pytest.raises(ConfigError, match="mode='maximum'"):
        tune.TuneConfig(mode="maximum")
    with pytest.raises(ConfigError, match="learning_rat"):
        tune.Tuner(
            "PPO",
            param_space={"learning_rat": tune.grid_search([1e-3])},
            run_config=tune.RunConfig(stop={"training_iteration": 1}),
        )
    with pytest.raises(ConfigError, match="stop criterion.*time_budget_s"):
        tune.Tuner("PPO", param_space={"env": "CartPole-v1"})
    with pytest.raises(ConfigError, match="grid"):
        tune.Tuner(climb, param_space={"a": tune.grid_search([])})
    with pytest.raises(ConfigError, match="search_alg=<object.*OptunaSearch"):
        tune.TuneConfig(search_alg=object())
    with pytest.raises(ConfigError, match="scheduler='asha'.*ASHAScheduler"):
        tune.TuneConfig(scheduler="asha")
    with pytest.raises(ConfigError, match="max_concurrent_trials=0"):
        tune.TuneConfig(max_concurrent_trials=0)
    with pytest.raises(ConfigError, match="populations='yes'"):
        tune.TuneConfig(populations="yes")
    tune.TuneConfig(max_concurrent_trials=1)
    with pytest.raises(
        ConfigError, match="checkpoint_at_end are for algorithm and tune.Trainable trainables"
    ):
        tune.Tuner(
            climb,
            run_config=tune.RunConfig(
                checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=2)
            ),
        )
    with pytest.raises(RuntimeError, match="no trial is running"):
        tune.report({"x": 1})


def test_tune_run_best_config_and_result(tmp_path):
    analysis = tune.run(
        climb,
        config={"a": tune.grid_search([3, 1, 2])},
        stop={"training_iteration": 5},
        metric="score",
        mode="max",
        storage_path=str(tmp_path),
        verbose=0,
    )
    assert analysis.best_config == {"a": 3}
    assert analysis.best_result["score"] == 15
    assert len(analysis.trials) == 3 and len(analysis.results) == 3
    assert analysis.get_best_config("score", "min") == {"a": 1}

    def fails(config):
        raise ValueError("nope")

    with pytest.raises(tune.TuneError, match="nope"):
        tune.run(fails, storage_path=str(tmp_path), verbose=0)


def test_dataframes_need_pandas(tmp_path, monkeypatch):
    grid = _fit(tmp_path=tmp_path)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ImportError, match="pip install pandas"):
        grid.get_dataframe()
    with pytest.raises(ImportError, match="pip install pandas"):
        _ = grid[0].metrics_dataframe


def test_dataframes_with_pandas(tmp_path, monkeypatch):
    class FakePandas:  # records what a DataFrame would be built from
        @staticmethod
        def DataFrame(rows):
            return rows

    monkeypatch.setitem(sys.modules, "pandas", FakePandas)
    grid = _fit(tmp_path=tmp_path)
    rows = grid.get_dataframe()
    assert [row["config/a"] for row in rows] == [1, 2]
    assert rows[1]["score"] == 20 and rows[1]["inner/step"] == 10
    assert rows[0]["logdir"] == grid[0].path
    best_rows = grid.get_dataframe(filter_metric="score", filter_mode="min")
    assert [row["score"] for row in best_rows] == [1, 2]
    assert len(grid[1].metrics_dataframe) == 10


def test_ppo_grid_on_cartpole(tmp_path):
    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=16)
        .training(
            train_batch_size_per_learner=64,
            minibatch_size=32,
            num_epochs=1,
            lr=tune.grid_search([1e-3, 3e-4]),
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    grid = tune.Tuner(
        "PPO",
        param_space=config,
        tune_config=tune.TuneConfig(metric="env_runners/episode_return_mean", mode="max"),
        run_config=tune.RunConfig(
            name="ppo",
            storage_path=str(tmp_path),
            stop={"training_iteration": 2},
            verbose=0,  # checkpoint_at_end: None, Ray Tune's default, saves algorithm trials
        ),
    ).fit()
    assert grid.num_errors == 0, grid.errors
    # The whole config, as Tune's param_space.to_dict() (was: the searched values only).
    assert [r.config["lr"] for r in grid] == [1e-3, 3e-4]
    assert all(r.config["env"] == "CartPole-v1" and r.config["minibatch_size"] == 32 for r in grid)
    assert grid[0].metrics["config"] == grid[0].config
    for r in grid:
        assert r.metrics["training_iteration"] == 2
        assert math.isfinite(r.metrics["learners"]["default_policy"]["total_loss"])
        assert r.metrics["num_env_steps_sampled_lifetime"] > 0
        lines = (Path(r.path) / "result.json").read_text().splitlines()
        assert len(lines) == 2 and json.loads(lines[1])["config"] == r.config
        assert (Path(r.path) / "progress.csv").is_file()
        assert r.checkpoint is not None and Path(r.checkpoint.path).name == "checkpoint_000002"
    assert grid.get_best_result() in list(grid)
    # A function trainable saves through tune.report only.
    assert not list(Path(_fit(tmp_path=tmp_path / "f")[0].path).glob("checkpoint_*"))


def test_algorithm_trainables_resolve_to_trial_configs():
    from rljax.algorithms.ppo import PPO, PPOConfig

    stop = tune.RunConfig(stop={"training_iteration": 1})
    space = {"env": "CartPole-v1", "lr": tune.grid_search([1e-3, 1e-4]), "gamma": 0.9}
    for trainable in ("PPO", PPO, PPOConfig().training(entropy_coeff=0.01)):
        tuner = tune.Tuner(trainable, param_space=space, run_config=stop)
        configs = tuner._algo_configs
        assert [c.lr for c in configs] == [1e-3, 1e-4] and all(c.gamma == 0.9 for c in configs)
        assert all(c.algo_class is PPO and not c.search_space() for c in configs)
    assert configs[0].entropy_coeff == 0.01  # the config trainable's own settings stay
    with pytest.raises(ConfigError, match="DQNConfig"):
        from rljax.algorithms.dqn import DQNConfig

        tune.Tuner("PPO", param_space=DQNConfig(), run_config=stop)


@pytest.mark.slow
def test_the_readme_tuner_example_runs(tmp_path, capsys):
    import re

    readme = (Path(__file__).parents[2] / "docs" / "tuning.md").read_text()  # the Tuning guide
    section = readme[readme.index("**Tuner.**") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    code = code.replace('"/tmp/rljax_results"', repr(str(tmp_path)))
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    grid = namespace["grid"]
    assert len(grid) == 2 and grid.num_errors == 0
    assert namespace["best"].config["lr"] in (1e-3, 3e-4)
    assert Path(namespace["best"].path).parent.parent == tmp_path


def test_a_config_trainable_with_searched_values_shows_whole_configs():
    """rljax tune's files give a config as the trainable and the searched values apart: each
    trial's Result.config, params.json and result.json hold the whole config (were: the
    searched values only)."""
    from rljax.algorithms.ppo import PPOConfig

    base = PPOConfig().environment("CartPole-v1").training(minibatch_size=32)
    tuner = tune.Tuner(
        base,
        param_space={"lr": tune.grid_search([1e-3, 3e-4])},
        run_config=tune.RunConfig(stop={"training_iteration": 1}, verbose=0),
    )
    shown = tuner._shown(tuner._variants[1])
    assert shown["lr"] == 3e-4 and shown["env"] == "CartPole-v1" and shown["minibatch_size"] == 32
    # A dict param space over an algorithm's name stays what was given, as Tune's.
    by_name = tune.Tuner(
        "PPO",
        param_space={"env": "CartPole-v1", "lr": tune.grid_search([1e-3])},
        run_config=tune.RunConfig(stop={"training_iteration": 1}, verbose=0),
    )
    assert by_name._shown(by_name._variants[0]) == {"env": "CartPole-v1", "lr": 1e-3}
