"""``Tuner``, ``tune.report`` and ``tune.run``: Ray Tune's API, trials run one after another.

A trainable is an algorithm name (``"PPO"``), an algorithm class, a config object, or a function
``train_fn(config)`` that calls ``tune.report(metrics)``. The trials are the variants of the
``param_space`` (``generate_variants``: every grid point x ``num_samples``), or with
``TuneConfig(search_alg=...)`` ``num_samples`` configs the searcher suggests, run in this process
one after another; a ``TuneConfig(scheduler=...)`` may stop a trial after any result. Each
writes ``params.json``, ``result.json`` (a JSON line per result) and ``progress.csv`` to
``storage_path/name/<trial dir>``, as Tune does.

An algorithm trainable needs a stop criterion (``RunConfig(stop=...)``) or
``TuneConfig(time_budget_s=...)``: Ray Tune would call ``train()`` until interrupted, rljax
refuses to start instead. A function trainable ends when it returns.
"""

from __future__ import annotations

import csv
import inspect
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rljax.tune.result_grid import Checkpoint, Result, ResultGrid, check_mode
from rljax.tune.stopper import Stopper, as_stopper, flatten
from rljax.tune.tune_config import CheckpointConfig, RunConfig, TuneConfig, default_storage_path
from rljax.tune.variants import find_search_spaces, generate_variants
from rljax.utils.errors import ConfigError

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.tune.schedulers import TrialScheduler
    from rljax.tune.search.searcher import Searcher


class TuneError(RuntimeError):
    """``tune.run`` with ``raise_on_failed_trial=True``: some trials raised."""


class _StopTrial(BaseException):
    """Raised inside a function trainable's ``tune.report`` when its trial is to stop (a
    ``BaseException``, so that the trainable's own ``except Exception`` does not catch it)."""


class _StopperFailed(BaseException):
    """A stop criterion that cannot be read (a key missing from the results): ends ``fit()``
    (a ``BaseException``, so that a function trainable's ``except Exception`` does not hide it)."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "__array__"):
        return np.asarray(value).tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value)


def to_json_data(value: Any) -> Any:
    """``value`` with numpy and JAX numbers and arrays as Python numbers and lists, and anything
    else JSON cannot hold as its ``repr``."""
    return json.loads(json.dumps(value, default=_jsonable))


# ---------------------------------------------------------------------- tune.report
_SESSION: _TrialRun | None = None


def report(metrics: Mapping[str, Any], *, checkpoint: Any = None) -> None:
    """Reports a function trainable's result (Tune 2.x's ``tune.report``).

    ``metrics``: a dict (nested dicts allowed; numpy values become Python numbers).
    ``checkpoint``: a directory (a path or ``tune.Checkpoint``) saved with this result; it is
    copied into the trial's directory as ``checkpoint_NNNNNN``. When a stop criterion is met the
    trial ends here (the call does not return).

    Raises:
      RuntimeError: called outside a trial run by ``Tuner.fit()``.
    """
    if _SESSION is None:
        raise RuntimeError(
            "tune.report() is called inside a function trainable run by tune.Tuner(...).fit() "
            "or tune.run(...); no trial is running"
        )
    if not isinstance(metrics, Mapping):
        raise TypeError(f"tune.report(metrics) needs a dict; got a {type(metrics).__name__}")
    if _SESSION.record(dict(metrics), checkpoint=checkpoint):
        raise _StopTrial


# ---------------------------------------------------------------------- one trial
class _TrialRun:
    """One trial's results, files, checkpoints and stop decisions."""

    def __init__(
        self,
        trial_id: str,
        path: Path,
        config: dict[str, Any],
        stopper: Stopper | None,
        checkpoint_config: CheckpointConfig,
        deadline: float | None,
        verbose: int,
    ):
        self.trial_id, self.path, self.config = trial_id, path, config
        self.stopper, self.checkpoint_config = stopper, checkpoint_config
        self.deadline, self.verbose = deadline, verbose
        self.history: list[dict[str, Any]] = []
        self.checkpoints: list[Path] = []
        self.stop_all = False
        self.out_of_time = False
        # The search algorithm's and scheduler's view of each result: True stops the trial.
        self.on_result: Callable[[dict[str, Any], bool], bool] | None = None
        self._fields: list[str] | None = None
        self._start = self._last = time.time()
        path.mkdir(parents=True, exist_ok=True)
        (path / "params.json").write_text(json.dumps(to_json_data(config), indent=2))
        (path / "result.json").write_text("")

    def _save_checkpoint(self, iteration: int, save: Callable[[Path], Any]) -> None:
        target = self.path / f"checkpoint_{iteration:06d}"
        if target.exists():
            shutil.rmtree(target)
        save(target)
        if target in self.checkpoints:
            self.checkpoints.remove(target)
        self.checkpoints.append(target)
        keep = self.checkpoint_config.num_to_keep
        while keep is not None and len(self.checkpoints) > keep:
            shutil.rmtree(self.checkpoints.pop(0), ignore_errors=True)

    def record(self, metrics: dict[str, Any], checkpoint: Any = None, algo: Any = None) -> bool:
        """Stores one result; True when the trial is to stop."""
        now = time.time()
        result = to_json_data(metrics)
        result.setdefault("training_iteration", len(self.history) + 1)
        result.setdefault("time_this_iter_s", now - self._last)
        result.setdefault("time_total_s", now - self._start)
        result.setdefault("timestamp", int(now))
        result["done"] = False
        result["trial_id"] = self.trial_id
        self._last = now
        self.history.append(result)
        with open(self.path / "result.json", "a") as f:
            f.write(json.dumps({**result, "config": to_json_data(self.config)}) + "\n")
        flat = flatten(result)
        new_file = self._fields is None
        if self._fields is None:  # Tune's CSV keeps the first result's columns
            self._fields = list(flat)
        with open(self.path / "progress.csv", "a", newline="") as f:
            writer = csv.DictWriter(f, self._fields, extrasaction="ignore")
            if new_file:
                writer.writeheader()
            writer.writerow(flat)
        iteration = int(result["training_iteration"])
        if checkpoint is not None:
            source = Path(os.fspath(checkpoint))
            if not source.is_dir():
                raise ConfigError(
                    f"tune.report(checkpoint={checkpoint!r}): not a directory; pass a directory "
                    "or tune.Checkpoint.from_directory(path)"
                )
            self._save_checkpoint(iteration, lambda t: shutil.copytree(source, t))
        frequency = self.checkpoint_config.checkpoint_frequency
        if algo is not None and frequency and iteration % frequency == 0:
            self._save_checkpoint(iteration, algo.save_to_path)
        if self.verbose >= 2:
            print(f"Trial {self.trial_id} iteration {iteration}: {_short(flat)}")
        stop = False
        if self.stopper is not None:
            try:
                stop = bool(self.stopper(self.trial_id, result))
                self.stop_all = bool(self.stopper.stop_all())
            except Exception as e:
                raise _StopperFailed(str(e)) from e
        if self.on_result is not None:
            try:
                stop = self.on_result(flat, stop) or stop
            except Exception as e:
                raise _StopperFailed(str(e)) from e
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.out_of_time = True
        return stop or self.stop_all or self.out_of_time

    def finish_algorithm(self, algo: Any) -> None:
        """``checkpoint_at_end``: a last checkpoint, unless this iteration's was just saved."""
        if not self.checkpoint_config.checkpoint_at_end or not self.history:
            return
        iteration = int(self.history[-1]["training_iteration"])
        if not self.checkpoints or self.checkpoints[-1].name != f"checkpoint_{iteration:06d}":
            self._save_checkpoint(iteration, algo.save_to_path)

    def result(self, error: BaseException | None) -> Result:
        metrics: dict[str, Any] = (
            dict(self.history[-1]) if self.history else {"trial_id": self.trial_id}
        )
        if error is None:
            metrics["done"] = True
        else:
            (self.path / "error.txt").write_text(f"{type(error).__name__}: {error}\n")
        return Result(
            config=self.config,
            metrics=metrics,
            path=str(self.path),
            error=error,
            checkpoint=Checkpoint(self.checkpoints[-1]) if self.checkpoints else None,
            history=self.history,
            trial_id=self.trial_id,
        )


def _short(flat: Mapping[str, Any], limit: int = 6) -> str:
    shown = [
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in flat.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    return ", ".join(shown[:limit])


def _dir_part(value: Any) -> str:
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return "".join(c if c.isalnum() or c in "-.=_" else "_" for c in text)[:20]


def _searcher_and_scheduler(
    trial_id: str, searcher: Searcher | None, scheduler: TrialScheduler | None
) -> Callable[[dict[str, Any], bool], bool]:
    """What ``_TrialRun.record`` calls with each (flat) result and whether a stop criterion
    already stops the trial: the searcher sees every result, the scheduler those the stop
    criteria let through (as Tune); True when the scheduler says STOP."""

    def on_result(result: dict[str, Any], stopping: bool) -> bool:
        if searcher is not None:
            searcher.on_trial_result(trial_id, result)
        if scheduler is None or stopping:
            return False
        return scheduler.on_trial_result(trial_id, result) == scheduler.STOP

    return on_result


# ---------------------------------------------------------------------- Tuner
class Tuner:
    """Runs the trials of a ``param_space`` one after another (Ray Tune's ``Tuner``).

    Args:
      trainable: An algorithm name (``"PPO"``, any of ``rljax.algorithms.registry``), an
        algorithm class, a config object, or a function ``train_fn(config)`` that reports with
        ``tune.report(metrics)``.
      param_space: A dict of values and search spaces, or a config object holding search
        spaces (``PPOConfig().training(lr=tune.grid_search([...]))``). With an algorithm
        trainable a dict's keys are the config's settings (RLlib's names), applied with
        ``update_from_dict``; a function trainable gets each resolved dict (or config) as its
        ``config``.
      tune_config: ``tune.TuneConfig``.
      run_config: ``tune.RunConfig``.

    Everything that can be checked is checked here, before any trial builds or compiles: an
    unknown trainable name, an unknown setting, a bad search space, a bad mode, settings that
    are not built yet, and an algorithm trainable without a stop criterion or time budget; a
    search algorithm's or scheduler's metric and mode (theirs or ``TuneConfig``'s) and the search
    space it can search (``OptunaSearch`` refuses ``grid_search``, naming the key).
    """

    def __init__(
        self,
        trainable: Any,
        param_space: Mapping[str, Any] | AlgorithmConfig | None = None,
        tune_config: TuneConfig | None = None,
        run_config: RunConfig | None = None,
    ):
        from rljax.algorithms import registry
        from rljax.algorithms.algorithm import Algorithm
        from rljax.algorithms.algorithm_config import AlgorithmConfig

        self.tune_config = tune_config if tune_config is not None else TuneConfig()
        self.run_config = run_config if run_config is not None else RunConfig()
        if not isinstance(self.tune_config, TuneConfig):
            raise ConfigError(f"tune_config={tune_config!r}: use a tune.TuneConfig")
        if not isinstance(self.run_config, RunConfig):
            raise ConfigError(f"run_config={run_config!r}: use a tune.RunConfig")
        base: AlgorithmConfig | None = None
        self._function: Callable[[Any], Any] | None = None
        if isinstance(trainable, str):
            try:
                base = registry.config_class(trainable)()
            except KeyError:
                raise ConfigError(
                    f"trainable {trainable!r} is not an rljax algorithm; use one of "
                    f"{registry.algorithm_names()}, an algorithm class, a config or a function"
                ) from None
            self.trainable_name = trainable
        elif inspect.isclass(trainable) and issubclass(trainable, Algorithm):
            base = trainable.config_class()
            if base.algo_class is None:
                raise ConfigError(f"trainable {trainable.__name__} is no algorithm to train")
            base.algo_class = trainable
            self.trainable_name = trainable.__name__
        elif isinstance(trainable, AlgorithmConfig):
            base = trainable.copy()
            self.trainable_name = base.algo_name
        elif callable(trainable) and not inspect.isclass(trainable):
            self._function = trainable
            self.trainable_name = getattr(trainable, "__name__", type(trainable).__name__)
        else:
            raise ConfigError(
                f"trainable={trainable!r}: use an algorithm name ({registry.algorithm_names()}), "
                "an algorithm class, a config object, or a function train_fn(config)"
            )

        # The search space, and how a variant becomes a trial's config.
        space: dict[str, Any]
        self._config_base: AlgorithmConfig | None = None
        if isinstance(param_space, AlgorithmConfig):
            if base is not None and type(param_space) is not type(base):
                raise ConfigError(
                    f"param_space is a {type(param_space).__name__}, but the trainable "
                    f"{self.trainable_name!r} takes a {type(base).__name__}"
                )
            if base is not None and base.algo_class is not None:
                algo_class = base.algo_class
                base = param_space.copy()
                base.algo_class = algo_class
            else:
                base = param_space.copy()
            if self._function is not None:
                self._config_base = base
            space = dict(base.search_space())
        elif param_space is None or isinstance(param_space, Mapping):
            space = dict(param_space or {})
            if base is not None:
                space = {**base.search_space(), **space}
        else:
            raise ConfigError(
                f"param_space={param_space!r}: use a dict of values and search spaces, or a "
                "config object"
            )
        root = "param_space" if base is None else type(base).__name__
        self._searched = [p for p, _ in find_search_spaces(space)]
        searcher, scheduler = self.tune_config.search_alg, self.tune_config.scheduler
        metric, mode = self.tune_config.metric, self.tune_config.mode
        if scheduler is not None:
            scheduler.set_search_properties(metric, mode)
        if searcher is not None:  # trials are suggested in fit(); one draw checks the keys
            searcher.set_search_properties(metric, mode, space, root=root)
            self._searched = searcher.searched_paths or self._searched
        self._variants = generate_variants(
            space, 1 if searcher else self.tune_config.num_samples, self.tune_config.seed, root=root
        )
        self._algo_base = base
        self._algo_configs: list[AlgorithmConfig] | None = None
        if self._function is None:
            assert base is not None
            self._algo_configs = [base.copy().update_from_dict(v) for v in self._variants]
            if (
                self.run_config.stop is None
                and self.tune_config.time_budget_s is None
                and not (scheduler is not None and scheduler.stops_every_trial)
            ):
                raise ConfigError(
                    f"trainable {self.trainable_name!r} trains until stopped: give a stop "
                    "criterion (tune.RunConfig(stop={'training_iteration': 20}) or a "
                    "tune.Stopper), tune.TuneConfig(time_budget_s=...) or a scheduler with max_t "
                    "(tune.schedulers.ASHAScheduler(max_t=...)); Ray Tune would train "
                    "forever"
                )
        elif self.run_config.checkpoint_config and self.run_config.checkpoint_config.wanted:
            raise ConfigError(
                f"{self.run_config.checkpoint_config!r}: checkpoint_frequency and "
                "checkpoint_at_end are for algorithm trainables; a function trainable saves with "
                "tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(dir))"
            )
        if searcher is not None:
            self._variants = []

    @property
    def num_trials(self) -> int:
        if self.tune_config.search_alg is not None:
            return self.tune_config.num_samples
        return len(self._variants)

    def _trial_dir_name(self, trial_id: str, index: int, variant: dict[str, Any]) -> str:
        parts = []
        for path in self._searched:
            value: Any = variant
            try:
                for key in path:
                    value = value[key]
            except (KeyError, IndexError, TypeError):
                continue
            parts.append(f"{_dir_part(path[-1])}={_dir_part(value)}")
        tail = ",".join(parts)[:80]
        return f"{self.trainable_name}_{trial_id}_{index}" + (f"_{tail}" if tail else "")

    def fit(self) -> ResultGrid:
        """Runs every trial, one after another, and returns their results.

        A trial that raises is recorded (``Result.error``, ``ResultGrid.errors``, ``error.txt``)
        and the next one starts. A stop key missing from a trial's results ends ``fit()`` with
        ``ConfigError`` naming it (as Tune's ``TuneError``), as does a search algorithm's or
        scheduler's metric missing. Each result goes to the searcher, then to the scheduler
        unless a stop criterion stopped the trial; a scheduler's STOP ends the trial after that
        result, with a normal ``Result``. Once ``time_budget_s`` has passed, or a ``Stopper``'s
        ``stop_all()`` says so, the running trial stops after its current result and the trials
        not started are left out of the ``ResultGrid``.
        """
        global _SESSION
        run = self.run_config
        name = run.name or f"{self.trainable_name}_{time.strftime('%Y-%m-%d_%H-%M-%S')}"
        storage = Path(os.fspath(run.storage_path or default_storage_path())).expanduser()
        experiment = storage / name
        experiment.mkdir(parents=True, exist_ok=True)
        stopper = as_stopper(run.stop)
        checkpoint_config = run.checkpoint_config or CheckpointConfig()
        budget = self.tune_config.time_budget_s
        deadline = None if budget is None else time.monotonic() + budget
        tag = uuid.uuid4().hex[:5]
        results: list[Result] = []
        searcher, scheduler = self.tune_config.search_alg, self.tune_config.scheduler
        for index in range(self.num_trials):
            if deadline is not None and time.monotonic() >= deadline:
                break
            trial_id = f"{tag}_{index:05d}"
            variant = searcher.suggest(trial_id) if searcher else self._variants[index]
            if variant is None:  # the searcher has no more trials
                break
            trial = _TrialRun(
                trial_id,
                experiment / self._trial_dir_name(trial_id, index, variant),
                variant,
                stopper,
                checkpoint_config,
                deadline,
                run.verbose,
            )
            if searcher is not None or scheduler is not None:
                trial.on_result = _searcher_and_scheduler(trial_id, searcher, scheduler)
            if scheduler is not None:
                scheduler.on_trial_add(trial_id)
            error: BaseException | None = None
            try:
                if self._function is not None:
                    given: Any = variant
                    if self._config_base is not None:
                        given = self._config_base.copy().update_from_dict(variant)
                    _SESSION = trial
                    try:
                        returned = self._function(given)
                        if isinstance(returned, Mapping):  # Tune 1.x: a returned dict is a result
                            trial.record(dict(returned))
                    except _StopTrial:
                        pass
                    finally:
                        _SESSION = None
                elif searcher is not None:
                    assert self._algo_base is not None
                    self._run_algorithm(self._algo_base.copy().update_from_dict(variant), trial)
                else:
                    assert self._algo_configs is not None
                    self._run_algorithm(self._algo_configs[index], trial)
            except _StopperFailed as e:
                raise ConfigError(str(e)) from e.__cause__
            except Exception as e:
                error = e
            result = trial.result(error)
            results.append(result)
            last = flatten(trial.history[-1]) if trial.history else None
            if searcher is not None:
                searcher.on_trial_complete(trial_id, last, error=error is not None)
            if scheduler is not None and error is not None:
                scheduler.on_trial_error(trial_id)
            elif scheduler is not None:
                scheduler.on_trial_complete(trial_id, last)
            if run.verbose >= 1:
                status = "ERROR" if error is not None else "TERMINATED"
                shown = (
                    f"{type(error).__name__}: {error}" if error else _short(flatten(result.metrics))
                )
                print(f"Trial {trial_id} {status} ({len(trial.history)} results): {shown}")
            if trial.stop_all or trial.out_of_time:
                break
        return ResultGrid(
            results, str(experiment), metric=self.tune_config.metric, mode=self.tune_config.mode
        )

    @staticmethod
    def _run_algorithm(config: AlgorithmConfig, trial: _TrialRun) -> None:
        algo = config.build_algo()
        try:
            while not trial.record(algo.train(), algo=algo):
                pass
            trial.finish_algorithm(algo)
        finally:
            algo.stop()


# ---------------------------------------------------------------------- tune.run
class ExperimentAnalysis:
    """What ``tune.run`` returns (Tune's older ``ExperimentAnalysis``), over a ``ResultGrid``."""

    def __init__(self, grid: ResultGrid, metric: str | None = None, mode: str | None = None):
        self.result_grid = grid
        self.default_metric, self.default_mode = metric, mode

    @property
    def trials(self) -> list[Result]:
        return list(self.result_grid)

    @property
    def results(self) -> dict[str, dict[str, Any]]:
        """The last result of each trial, by trial id."""
        return {r.trial_id: r.metrics for r in self.result_grid}

    @property
    def experiment_path(self) -> str:
        return self.result_grid.experiment_path

    def get_best_trial(
        self, metric: str | None = None, mode: str | None = None, scope: str = "last"
    ) -> Result:
        return self.result_grid.get_best_result(
            metric if metric is not None else self.default_metric,
            mode if mode is not None else self.default_mode,
            scope,
        )

    def get_best_config(
        self, metric: str | None = None, mode: str | None = None, scope: str = "last"
    ) -> dict[str, Any]:
        return self.get_best_trial(metric, mode, scope).config

    @property
    def best_trial(self) -> Result:
        return self.get_best_trial()

    @property
    def best_config(self) -> dict[str, Any]:
        """The best trial's config, by ``tune.run``'s ``metric`` and ``mode``."""
        return self.get_best_trial().config

    @property
    def best_result(self) -> dict[str, Any]:
        """The best trial's last result (nested, as reported)."""
        return self.get_best_trial().metrics

    @property
    def best_checkpoint(self) -> Checkpoint | None:
        return self.get_best_trial().checkpoint

    @property
    def best_logdir(self) -> str:
        return self.get_best_trial().path

    def dataframe(self, metric: str | None = None, mode: str | None = None) -> Any:
        return self.result_grid.get_dataframe(metric, mode)


def run(
    run_or_experiment: Any,
    config: Mapping[str, Any] | AlgorithmConfig | None = None,
    stop: Any = None,
    num_samples: int = 1,
    metric: str | None = None,
    mode: str | None = None,
    name: str | None = None,
    storage_path: str | os.PathLike[str] | None = None,
    verbose: int = 1,
    time_budget_s: float | None = None,
    checkpoint_config: CheckpointConfig | None = None,
    seed: int | None = None,
    raise_on_failed_trial: bool = True,
) -> ExperimentAnalysis:
    """Tune's older entry point, run through ``Tuner``: ``tune.run(trainable, config=...,
    stop=..., num_samples=..., metric=..., mode=...)`` returns an ``ExperimentAnalysis`` with
    ``best_config``, ``best_result``, ``results`` and ``trials``.

    Raises:
      TuneError: ``raise_on_failed_trial`` (the default, as Tune's) and a trial raised.
    """
    check_mode(mode)
    grid = Tuner(
        run_or_experiment,
        param_space=config,
        tune_config=TuneConfig(
            metric=metric,
            mode=mode,
            num_samples=num_samples,
            time_budget_s=time_budget_s,
            seed=seed,
        ),
        run_config=RunConfig(
            name=name,
            storage_path=storage_path,
            stop=stop,
            checkpoint_config=checkpoint_config,
            verbose=verbose,
        ),
    ).fit()
    if raise_on_failed_trial and grid.num_errors:
        failed = [f"{r.trial_id} ({type(r.error).__name__}: {r.error})" for r in grid if r.error]
        raise TuneError(f"trials did not complete: {', '.join(failed)}")
    return ExperimentAnalysis(grid, metric, mode)


__all__ = ["ExperimentAnalysis", "TuneError", "Tuner", "report", "run", "to_json_data"]
