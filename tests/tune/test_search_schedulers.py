"""Search algorithms and trial schedulers: OptunaSearch's search spaces, samplers and seeds, ASHA,
HyperBand and the median stopping rule on hand-made learning curves, and their errors. Function
trainables with known objectives only (no RL training)."""

from __future__ import annotations

import sys

import pytest

optuna = pytest.importorskip("optuna")

from rljax import tune  # noqa: E402
from rljax.tune.schedulers import (  # noqa: E402
    ASHAScheduler,
    AsyncHyperBandScheduler,
    FIFOScheduler,
    HyperBandScheduler,
    MedianStoppingRule,
    TrialScheduler,
)
from rljax.tune.search import ConcurrencyLimiter  # noqa: E402
from rljax.tune.search.optuna import OptunaSearch, to_distribution  # noqa: E402
from rljax.utils.errors import ConfigError  # noqa: E402

D = optuna.distributions


def quadratic(config):
    """score = -(x - 3)^2 at each of 3 iterations, nested under ``eval``."""
    for _ in range(3):
        tune.report({"eval": {"score": -((config["x"] - 3.0) ** 2)}})


def _fit(trainable, param_space, tmp_path, **tune_kwargs):
    return tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(**tune_kwargs),
        run_config=tune.RunConfig(name="exp", storage_path=str(tmp_path), verbose=0),
    ).fit()


def _tell(searcher, trial_id, value):
    searcher.on_trial_result(trial_id, {"training_iteration": 1, "score": value})
    searcher.on_trial_complete(trial_id, {"training_iteration": 1, "score": value})


# ---------------------------------------------------------------------- search spaces
@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        (tune.uniform(0.5, 2.0), D.FloatDistribution(0.5, 2.0)),
        (tune.loguniform(1e-4, 1e-1), D.FloatDistribution(1e-4, 1e-1, log=True)),
        (tune.quniform(0.0, 1.0, 0.25), D.FloatDistribution(0.0, 1.0, step=0.25)),
        (tune.randint(2, 7), D.IntDistribution(2, 6)),  # upper excluded, as Tune's
        (tune.lograndint(1, 100), D.IntDistribution(1, 99, log=True)),
        (tune.qrandint(3, 20, 5), D.IntDistribution(5, 20, step=5)),  # multiples of 5 only
        (tune.choice(["relu", "tanh", None]), D.CategoricalDistribution(["relu", "tanh", None])),
    ],
)
def test_each_domain_becomes_the_optuna_distribution(domain, expected):
    dist, decode = to_distribution(domain, "param_space['k']")
    assert dist == expected
    assert decode is None


def test_categories_optuna_cannot_store_are_searched_by_index():
    categories = [{"hidden": [64, 64]}, [32], (16, 16)]
    dist, decode = to_distribution(tune.choice(categories))
    assert dist == D.CategoricalDistribution([0, 1, 2])
    assert [decode(i) for i in range(3)] == categories


def test_suggestions_are_full_variants_within_each_domain():
    space = {
        "model": {"hidden": tune.choice([[64], [64, 64]]), "act": "relu"},
        "lr": tune.loguniform(1e-4, 1e-2),
        "k": tune.randint(0, 3),
        "n": tune.qrandint(10, 30, 10),
        "q": tune.quniform(0.0, 1.0, 0.5),
        "gamma": 0.99,
    }
    searcher = OptunaSearch(
        space, metric="score", mode="max", sampler=optuna.samplers.RandomSampler(seed=1)
    )
    assert searcher.param_names == ["model/hidden", "lr", "k", "n", "q"]
    seen = {"k": set(), "n": set(), "q": set(), "hidden": []}
    for i in range(60):
        config = searcher.suggest(f"t{i}")
        assert config["gamma"] == 0.99 and config["model"]["act"] == "relu"
        assert 1e-4 <= config["lr"] <= 1e-2
        seen["k"].add(config["k"])
        seen["n"].add(config["n"])
        seen["q"].add(config["q"])
        seen["hidden"].append(config["model"]["hidden"])
        _tell(searcher, f"t{i}", float(i))
    assert seen["k"] == {0, 1, 2}
    assert seen["n"] == {10, 20, 30}
    assert seen["q"] == {0.0, 0.5, 1.0}
    assert {tuple(h) for h in seen["hidden"]} == {(64,), (64, 64)}
    # Each suggestion has its own containers.
    seen["hidden"][0].append(1)
    assert all(h in ([64], [64, 64]) for h in seen["hidden"][1:])


def test_same_seed_same_suggestions_other_seed_other_ones():
    def run(seed):
        searcher = OptunaSearch(
            {"x": tune.uniform(-10, 10), "c": tune.choice(["a", "b"])},
            metric="score",
            mode="max",
            seed=seed,
        )
        out = []
        for i in range(14):  # past TPE's 10 random start-up trials
            config = searcher.suggest(str(i))
            out.append((config["x"], config["c"]))
            _tell(searcher, str(i), -((config["x"] - 3) ** 2))
        return out

    first = run(3)
    assert run(3) == first
    assert run(4) != first


def test_tpe_beats_random_on_a_quadratic_through_the_tuner(tmp_path):
    def near_optimum(sampler, seed):
        searcher = (
            OptunaSearch(seed=seed)
            if sampler == "tpe"
            else OptunaSearch(sampler=optuna.samplers.RandomSampler(seed=seed))
        )
        grid = _fit(
            quadratic,
            {"x": tune.uniform(-10.0, 10.0), "fixed": "kept"},
            tmp_path / sampler,
            num_samples=30,
            search_alg=searcher,
            metric="eval/score",
            mode="max",
        )
        assert len(grid) == 30 and grid.num_errors == 0
        assert all(r.config["fixed"] == "kept" for r in grid)
        assert all(r.metrics["training_iteration"] == 3 for r in grid)
        xs = [r.config["x"] for r in grid]
        return grid, sum(abs(x - 3) < 1 for x in xs[10:])  # after TPE's 10 random start-ups

    grid, tpe = near_optimum("tpe", 0)
    _, random = near_optimum("random", 0)
    # Uniform draws land within 1 of the optimum 1 time in 10 (about 2 of the last 20).
    assert random <= 3 and tpe >= 5
    assert abs(grid.get_best_result().config["x"] - 3) < 0.3


def test_the_study_holds_the_told_values(tmp_path):
    searcher = OptunaSearch(seed=0)
    grid = _fit(
        quadratic,
        {"x": tune.uniform(0.0, 6.0)},
        tmp_path,
        num_samples=4,
        search_alg=searcher,
        metric="eval/score",
        mode="max",
    )
    trials = searcher.study.trials
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * 4
    assert [t.params["x"] for t in trials] == [r.config["x"] for r in grid]
    assert [t.value for t in trials] == [r.metrics["eval"]["score"] for r in grid]
    assert [sorted(t.intermediate_values) for t in trials] == [[1, 2, 3]] * 4


@pytest.mark.parametrize(
    "sampler",
    [
        lambda: optuna.samplers.RandomSampler(seed=0),
        lambda: optuna.samplers.CmaEsSampler(seed=0),
    ],
    ids=["random", "cmaes"],
)
def test_other_samplers(sampler, tmp_path):
    searcher = OptunaSearch(
        {"x": tune.uniform(-10.0, 10.0), "y": tune.uniform(0.0, 1.0)},
        metric="score",
        mode="max",
        sampler=sampler(),
    )
    for i in range(15):
        config = searcher.suggest(str(i))
        assert -10 <= config["x"] <= 10 and 0 <= config["y"] <= 1
        _tell(searcher, str(i), -((config["x"] - 3) ** 2) - config["y"])
    assert len(searcher.study.trials) == 15


def test_grid_sampler_tries_each_point(tmp_path):
    sampler = optuna.samplers.GridSampler({"x": [1.0, 2.0, 3.0]}, seed=0)
    grid = _fit(
        quadratic,
        {"x": tune.uniform(0.0, 5.0)},
        tmp_path,
        num_samples=5,
        search_alg=OptunaSearch(sampler=sampler),
        metric="eval/score",
        mode="max",
    )
    # Every grid point tried once; then the sampler stops the study and no more trials start.
    assert sorted(r.config["x"] for r in grid) == [1.0, 2.0, 3.0]
    assert grid.get_best_result().config["x"] == 3.0


def test_points_to_evaluate_come_first():
    searcher = OptunaSearch(
        {"x": tune.uniform(0.0, 5.0), "m": {"h": tune.choice([[8], [16, 16]])}},
        metric="score",
        mode="min",
        points_to_evaluate=[{"x": 1.5, "m": {"h": [16, 16]}}, {"m/h": [8]}],
        seed=0,
    )
    first, second = searcher.suggest("a"), searcher.suggest("b")
    assert first == {"x": 1.5, "m": {"h": [16, 16]}}
    assert second["m"] == {"h": [8]} and 0 <= second["x"] <= 5
    with pytest.raises(
        ConfigError, match=r"point 0: 'y' is not searched; the searched keys are \['x'\]"
    ):
        OptunaSearch({"x": tune.uniform(0, 1)}, "s", "max", points_to_evaluate=[{"y": 1}]).suggest(
            "a"
        )
    with pytest.raises(ConfigError, match="point 0: x=7 is outside"):
        OptunaSearch({"x": tune.uniform(0, 1)}, "s", "max", points_to_evaluate=[{"x": 7}]).suggest(
            "a"
        )


def test_suggest_many_and_the_concurrency_limiter():
    searcher = OptunaSearch({"x": tune.uniform(0.0, 1.0)}, metric="score", mode="max", seed=0)
    configs = searcher.suggest_many(["a", "b", "c", "d"])
    assert len({c["x"] for c in configs}) == 4
    assert [t.state for t in searcher.study.trials] == [optuna.trial.TrialState.RUNNING] * 4
    for trial_id, config in zip("abcd", configs, strict=True):
        _tell(searcher, trial_id, config["x"])
    limited = ConcurrencyLimiter(OptunaSearch({"x": tune.uniform(0.0, 1.0)}, "score", "max"), 2)
    assert len(limited.suggest_many(["a", "b", "c"])) == 2
    assert limited.suggest("c") is None
    _tell(limited, "a", 0.5)
    assert limited.suggest("c") is not None
    batched = ConcurrencyLimiter(
        OptunaSearch({"x": tune.uniform(0.0, 1.0)}, "score", "max"), 2, batch=True
    )
    assert len(batched.suggest_many(["a", "b"])) == 2
    _tell(batched, "a", 0.5)
    assert batched.suggest("c") is None  # waits for the whole batch
    _tell(batched, "b", 0.5)
    assert batched.suggest("c") is not None


def test_trial_directories_name_the_values_of_the_searchers_own_space(tmp_path):
    grid = _fit(
        quadratic,
        {},
        tmp_path,
        num_samples=2,
        search_alg=OptunaSearch({"x": tune.quniform(0.0, 4.0, 0.5)}, seed=0),
        metric="eval/score",
        mode="max",
    )
    for result in grid:
        assert f"x={result.config['x']:.4g}" in result.path


def test_a_scheduler_with_max_t_is_an_algorithm_trainables_stop_criterion():
    tuner = tune.Tuner(
        "PPO",
        param_space={"env": "CartPole-v1", "lr": tune.grid_search([1e-3, 1e-4])},
        tune_config=tune.TuneConfig(
            scheduler=ASHAScheduler(max_t=2), metric="env_runners/episode_return_mean", mode="max"
        ),
    )
    assert tuner.num_trials == 2
    with pytest.raises(ConfigError, match="trains until stopped.*ASHAScheduler\\(max_t=...\\)"):
        tune.Tuner(
            "PPO",
            param_space={"env": "CartPole-v1"},
            tune_config=tune.TuneConfig(
                scheduler=ASHAScheduler(max_t=2, stop_last_trials=False),
                metric="env_runners/episode_return_mean",
                mode="max",
            ),
        )


def test_a_config_objects_search_space_is_searched():
    from rljax.algorithms.ppo import PPOConfig

    config = PPOConfig().environment("CartPole-v1").training(lr=tune.loguniform(1e-5, 1e-3))
    tuner = tune.Tuner(
        config,
        tune_config=tune.TuneConfig(search_alg=OptunaSearch(metric="r", mode="max", seed=0)),
        run_config=tune.RunConfig(stop={"training_iteration": 1}),
    )
    assert tuner.num_trials == 1
    suggested = tuner.tune_config.search_alg.suggest("t")
    assert list(suggested) == ["lr"] and 1e-5 <= suggested["lr"] <= 1e-3
    with pytest.raises(ConfigError, match="learning_rat"):
        tune.Tuner(
            "PPO",
            param_space={"learning_rat": tune.uniform(0.1, 0.2)},
            tune_config=tune.TuneConfig(search_alg=OptunaSearch(metric="r", mode="max")),
            run_config=tune.RunConfig(stop={"training_iteration": 1}),
        )


# ---------------------------------------------------------------------- ASHA
# A trial's score: ``early`` before iteration 3, ``late`` from then on. With reduction_factor=3,
# grace_period=1 and max_t=9 the rungs are at iterations 1, 3 and 9.
CURVES = [(5, 5), (4, 4), (6, 2), (5.5, 5.5), (7, 7), (6.5, 6)]


def two_phase(config):
    early, late = CURVES[config["trial"]]
    for i in range(1, 21):
        tune.report({"eval": {"score": early if i < 3 else late}, "step": i})


def test_asha_stops_trials_outside_each_rungs_top_fraction(tmp_path):
    scheduler = ASHAScheduler(max_t=9, grace_period=1, reduction_factor=3)
    assert scheduler.rungs() == [1, 3, 9]
    grid = _fit(
        two_phase,
        {"trial": tune.grid_search(list(range(len(CURVES))))},
        tmp_path,
        scheduler=scheduler,
        metric="eval/score",
        mode="max",
    )
    # Rung 1 sees 5 | 5,4 (4 not the best of 2: stop) | 5,4,6 (best of 3: on) | ... 5.5 is not the
    # best of 4: stop | 7 on | 6.5 is 2nd of 6 (top 6 // 3 = 2): on.
    # Rung 3 sees 5 | 5,2 (stop) | 5,2,7 (best: on) | 5,2,7,6 (not the best of 4: stop).
    # Survivors stop at max_t.
    assert [r.metrics["training_iteration"] for r in grid] == [9, 1, 3, 1, 9, 3]
    assert grid.num_errors == 0 and all(r.metrics["done"] for r in grid)
    assert scheduler.num_stopped == 6


def test_asha_on_trials_reporting_each_iteration_together():
    """A population: every live trial reports iteration i before any reports i + 1. Each result
    is judged against those recorded before it, so the order within an iteration counts."""
    scheduler = AsyncHyperBandScheduler(
        time_attr="step", metric="score", mode="max", max_t=9, reduction_factor=3
    )
    live = [5, 4, 3, 2, 1, 0]  # report in reverse order
    stopped = {}
    for trial in live:
        scheduler.on_trial_add(str(trial))
    for i in range(1, 21):
        for trial in list(live):
            early, late = CURVES[trial]
            result = {"step": i, "score": early if i < 3 else late}
            if scheduler.on_trial_result(str(trial), result) == TrialScheduler.STOP:
                stopped[trial] = i
                live.remove(trial)
                scheduler.on_trial_complete(str(trial), result)
        if not live:
            break
    # Iteration 1: 6.5 on | 7 on (best of 2) | 5.5, 6 and 4 not the best | 5 not in the top 2 of 6.
    assert stopped == {0: 1, 1: 1, 2: 1, 3: 1, 4: 9, 5: 9}


def test_asha_brackets_rungs_and_minimize():
    scheduler = ASHAScheduler(
        metric="loss", mode="min", max_t=27, grace_period=1, reduction_factor=3, brackets=3
    )
    assert [scheduler.rungs(s) for s in range(3)] == [[1, 3, 9, 27], [3, 9, 27], [9, 27]]
    scheduler = ASHAScheduler(metric="loss", mode="min", max_t=9, reduction_factor=3)
    decisions = []
    for trial, loss in enumerate([1.0, 0.5, 2.0]):
        scheduler.on_trial_add(str(trial))
        decisions.append(
            scheduler.on_trial_result(str(trial), {"training_iteration": 1, "loss": loss})
        )
    assert decisions == ["CONTINUE", "CONTINUE", "STOP"]


def test_asha_brackets_judge_at_their_own_rungs():
    scheduler = ASHAScheduler(metric="score", mode="max", max_t=27, reduction_factor=3, brackets=3)
    first_rung = {0: 1, 1: 3, 2: 9}
    brackets, stops = [], []
    for trial in range(40):  # each trial worse than every earlier one
        scheduler.on_trial_add(str(trial))
        brackets.append(scheduler.bracket_of(str(trial)))
        for i in range(1, 30):
            result = {"training_iteration": i, "score": -trial}
            if scheduler.on_trial_result(str(trial), result) == TrialScheduler.STOP:
                stops.append(i)
                break
        scheduler.on_trial_complete(str(trial))
    assert set(brackets) == {0, 1, 2}
    # The first trial of a bracket runs to max_t; every later one stops at its bracket's first
    # rung.
    firsts = {b: brackets.index(b) for b in first_rung}
    expected = [27 if firsts[b] == t else first_rung[b] for t, b in enumerate(brackets)]
    assert stops == expected


def test_asha_and_optuna_search_together(tmp_path):
    searcher = OptunaSearch(seed=1)
    grid = _fit(
        quadratic,
        {"x": tune.uniform(-10.0, 10.0)},
        tmp_path,
        num_samples=8,
        search_alg=searcher,
        scheduler=ASHAScheduler(max_t=3, grace_period=1, reduction_factor=2),
        metric="eval/score",
        mode="max",
    )
    lengths = [r.metrics["training_iteration"] for r in grid]
    # Rungs at 1 and 2 (reduction_factor 2), then max_t.
    assert set(lengths) <= {1, 2, 3} and 1 in lengths and 3 in lengths and grid.num_errors == 0
    # Trials the scheduler stopped are told to Optuna with their last value.
    assert [t.value for t in searcher.study.trials] == [r.metrics["eval"]["score"] for r in grid]


def test_hyperband_stops_by_optunas_brackets_and_at_max_t():
    scheduler = HyperBandScheduler(metric="score", mode="max", max_t=9, reduction_factor=3)
    assert scheduler.stops_every_trial
    stops = []
    for trial in range(12):
        scheduler.on_trial_add(str(trial))
        for i in range(1, 30):
            if (
                scheduler.on_trial_result(str(trial), {"training_iteration": i, "score": -trial})
                == "STOP"
            ):
                stops.append(i)
                break
        scheduler.on_trial_complete(str(trial))
    assert stops[0] == 9  # the first trial of any bracket runs to max_t
    assert all(s in (1, 3, 9) for s in stops)  # stops only at rungs or max_t
    assert stops.count(9) < len(stops)  # later, worse trials are cut at a rung


# ---------------------------------------------------------------------- median stopping rule
def _median_run(scheduler, curves):
    """Trials one after another; the iteration each stopped at (or its last)."""
    out = []
    for trial, curve in enumerate(curves):
        scheduler.on_trial_add(str(trial))
        last = 0
        for i, value in enumerate(curve, start=1):
            last = i
            if (
                scheduler.on_trial_result(str(trial), {"training_iteration": i, "score": value})
                == "STOP"
            ):
                break
        scheduler.on_trial_complete(str(trial))
        out.append(last)
    return out


def test_median_stopping_rule_stops_a_trial_below_the_median_after_the_grace_period():
    scheduler = MedianStoppingRule(
        time_attr="training_iteration",
        metric="score",
        mode="max",
        grace_period=2,
        min_samples_required=2,
    )
    curves = [
        [10] * 6,  # no others: runs on
        [8] * 6,  # one other (fewer than 2): runs on
        [12] * 6,  # median of 10 and 8 is 9: runs on
        [5] * 6,  # 5 < median(10, 8, 12) at iteration 2: stops there, not at 1 (grace)
        [1, 11, 1, 1, 1, 1],  # its best (11) stays above the median (10): runs on
    ]
    assert _median_run(scheduler, curves) == [6, 6, 6, 2, 6]
    assert scheduler.num_stopped == 1


def test_median_stopping_rule_compares_running_means_not_values_at_the_same_step():
    scheduler = MedianStoppingRule(
        time_attr="training_iteration",
        metric="score",
        mode="max",
        grace_period=1,
        min_samples_required=3,
    )
    late_bloomers = [[0, 0, 0, 0, 20]] * 3
    # At iteration 5 the others score 20, but their running mean is 4: a steady 10 goes on.
    assert _median_run(scheduler, [*late_bloomers, [10] * 5]) == [5, 5, 5, 5]
    scheduler = MedianStoppingRule(
        time_attr="training_iteration",
        metric="score",
        mode="min",
        grace_period=1,
        min_samples_required=3,
    )
    # Minimizing: 10 is worse than the others' running mean 0 at iteration 1; 0 ties and goes on.
    assert _median_run(scheduler, [*late_bloomers, [10] * 5, [0] * 5]) == [5, 5, 5, 1, 5]


def test_median_stopping_rule_on_trials_reporting_each_iteration_together():
    scheduler = MedianStoppingRule(
        time_attr="training_iteration",
        metric="score",
        mode="max",
        grace_period=2,
        min_samples_required=3,
    )
    levels = {"a": 10, "b": 8, "c": 12, "d": 5}
    live, stopped = list(levels), {}
    for i in range(1, 7):
        for trial in list(live):
            result = {"training_iteration": i, "score": levels[trial]}
            if scheduler.on_trial_result(trial, result) == TrialScheduler.STOP:
                stopped[trial] = i
                live.remove(trial)
    # At iteration 2, d reports last: a, b and c reached 2 (running means 10, 8, 12; median
    # 10 > 5). Each later round, a trial sees only those that reported before it in the round
    # (b and c see fewer than 3), so no one else is compared.
    assert stopped == {"d": 2}


def test_median_stopping_rule_through_the_tuner(tmp_path):
    def steady(config):
        for _ in range(5):
            tune.report({"score": config["level"]})

    grid = _fit(
        steady,
        {"level": tune.grid_search([3, 4, 5, 1])},
        tmp_path,
        scheduler=MedianStoppingRule(time_attr="training_iteration", grace_period=3),
        metric="score",
        mode="max",
    )
    assert [r.metrics["training_iteration"] for r in grid] == [5, 5, 5, 3]
    assert grid[3].error is None and grid[3].metrics["done"]


def test_fifo_runs_everything(tmp_path):
    grid = _fit(quadratic, {"x": tune.grid_search([0.0, 3.0])}, tmp_path, scheduler=FIFOScheduler())
    assert [r.metrics["training_iteration"] for r in grid] == [3, 3]


# ---------------------------------------------------------------------- errors
def test_grid_search_and_sample_from_with_optuna_search_name_the_key(tmp_path):
    with pytest.raises(
        ConfigError, match=r"param_space\['opt'\]\['lr'\]: grid_search\(\[0.1, 0.2\]\).*tune.choice"
    ):
        _fit(
            quadratic,
            {"x": tune.uniform(0, 1), "opt": {"lr": tune.grid_search([0.1, 0.2])}},
            tmp_path,
            search_alg=OptunaSearch(),
            metric="eval/score",
            mode="max",
        )
    with pytest.raises(ConfigError, match=r"OptunaSearch\(space\)\['b'\]: sample_from"):
        OptunaSearch({"b": tune.sample_from(lambda spec: 1)})
    with pytest.raises(ConfigError, match=r"\['n'\]: randn\(0.0, 1.0\).*bounded"):
        OptunaSearch({"n": tune.randn()})
    with pytest.raises(ConfigError, match=r"\['lr'\]: loguniform\(0, 1\) needs positive bounds"):
        OptunaSearch({"lr": tune.loguniform(0, 1)})
    with pytest.raises(ConfigError, match="given a space and param_space searches too"):
        _fit(
            quadratic,
            {"x": tune.uniform(0, 1)},
            tmp_path,
            search_alg=OptunaSearch({"y": tune.uniform(0, 1)}),
            metric="s",
            mode="max",
        )


def test_metric_and_mode_missing_conflicting_or_unknown(tmp_path):
    with pytest.raises(
        ConfigError, match=r"OptunaSearch needs a metric and a mode.*got metric=None, mode=None"
    ):
        _fit(quadratic, {"x": tune.uniform(0, 1)}, tmp_path, search_alg=OptunaSearch())
    with pytest.raises(
        ConfigError, match=r"AsyncHyperBandScheduler needs a mode.*metric='eval/score', mode=None"
    ):
        _fit(
            quadratic,
            {"x": tune.uniform(0, 1)},
            tmp_path,
            scheduler=ASHAScheduler(),
            metric="eval/score",
        )
    with pytest.raises(
        ConfigError, match=r"MedianStoppingRule\(metric='a'\) and TuneConfig\(metric='b'\) differ"
    ):
        _fit(
            quadratic,
            {},
            tmp_path,
            scheduler=MedianStoppingRule(metric="a"),
            metric="b",
            mode="max",
        )
    with pytest.raises(ConfigError, match=r"mode='maximize'\): use 'min' or 'max'"):
        ASHAScheduler(mode="maximize")
    with pytest.raises(ConfigError, match=r"mode='best'\): use 'min' or 'max'"):
        OptunaSearch(mode="best")
    with pytest.raises(ConfigError, match=r"grace_period=0\): use an int >= 1"):
        ASHAScheduler(grace_period=0)
    with pytest.raises(ConfigError, match=r"grace_period=20, max_t=10"):
        ASHAScheduler(grace_period=20, max_t=10)
    with pytest.raises(NotImplementedError, match="hard_stop=False.*pausing"):
        MedianStoppingRule(hard_stop=False)
    with pytest.raises(ConfigError, match=r"sampler='tpe'.*optuna.samplers"):
        OptunaSearch(sampler="tpe")
    with pytest.raises(ConfigError, match="seed the sampler you pass"):
        OptunaSearch(sampler=optuna.samplers.RandomSampler(), seed=1)


def test_a_metric_missing_from_the_results_ends_fit_naming_it(tmp_path):
    # TuneConfig.metric is checked on the first result (Tune's strict metric check).
    with pytest.raises(ConfigError, match=r"metric 'eval/scor' is not in trial .*'eval/score'"):
        _fit(
            quadratic,
            {"x": tune.uniform(0, 1)},
            tmp_path,
            search_alg=OptunaSearch(),
            metric="eval/scor",
            mode="max",
        )
    with pytest.raises(ConfigError, match=r"TuneConfig.metric: metric 'scor' is not in trial"):
        _fit(quadratic, {"x": 1.0}, tmp_path, scheduler=ASHAScheduler(), metric="scor", mode="max")
    # A scheduler given its own metric, which the results lack, names itself.
    with pytest.raises(ConfigError, match=r"AsyncHyperBandScheduler reads 'scor'"):
        _fit(quadratic, {"x": 1.0}, tmp_path, scheduler=ASHAScheduler(metric="scor", mode="max"))


def test_without_optuna_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(ImportError, match="pip install optuna"):
        OptunaSearch()
    with pytest.raises(ImportError, match="pip install optuna"):
        ASHAScheduler(metric="s", mode="max").on_trial_add("a")
