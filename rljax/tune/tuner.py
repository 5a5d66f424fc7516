"""``Tuner``, ``tune.report`` and ``tune.run``: Ray Tune's API on one host.

A trainable is an algorithm name (``"PPO"``), an algorithm class, a config object, or a function
``train_fn(config)`` that calls ``tune.report(metrics)``. The trials are the variants of the
``param_space`` (``generate_variants``: every grid point x ``num_samples``), run in batches: the
trials of an algorithm that can share one program train as one population
(``rljax.execution.population``), the others one by one; batches run one after another in this
process or, when ``max_concurrent_trials`` leaves room, several at once in worker processes
(``rljax.tune.worker``). Each trial writes ``params.json``, ``result.json`` (a JSON line per result)
and ``progress.csv`` to ``storage_path/name/<trial dir>``, as Tune does; ``experiment_state.json``
at ``storage_path/name`` records each trial's status for ``Tuner.restore``. With
``RunConfig(verbose=1)`` (the default) a table of the trials is shown as they run
(``rljax.tune.progress``).

An algorithm trainable needs a stop criterion (``RunConfig(stop=...)``) or
``TuneConfig(time_budget_s=...)``: Ray Tune would call ``train()`` until interrupted, rljax
refuses to start instead. A function trainable ends when it returns.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import inspect
import io
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rljax.tune import experiment_state as es
from rljax.tune.progress import ProgressReporter, TrialTable
from rljax.tune.result_grid import Checkpoint, Result, ResultGrid, check_mode
from rljax.tune.stopper import Stopper, as_stopper, flatten
from rljax.tune.tune_config import CheckpointConfig, RunConfig, TuneConfig, default_storage_path
from rljax.tune.variants import (
    MAX_VARIANTS,
    check_variant_count,
    find_search_spaces,
    generate_variants,
)
from rljax.tune.worker import MainModuleRerun
from rljax.utils import safe_io
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


def get_checkpoint() -> Checkpoint | None:
    """The running trial's latest checkpoint (Tune 2.x's ``tune.get_checkpoint``): after
    ``Tuner.restore`` the one an unfinished trial continues from, else the newest it reported,
    else None. A function trainable reads it at its start to continue where it left off.

    Raises:
      RuntimeError: called outside a trial run by ``Tuner.fit()``.
    """
    if _SESSION is None:
        raise RuntimeError(
            "tune.get_checkpoint() is called inside a function trainable run by "
            "tune.Tuner(...).fit(); no trial is running"
        )
    latest = _SESSION.latest_checkpoint
    return None if latest is None else Checkpoint(latest)


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
        resume: es.ResumePoint | None = None,
        progress: ProgressReporter | None = None,
        lock: threading.RLock | None = None,
        halt: Callable[[], bool] | None = None,
    ):
        self.trial_id, self.path, self.config = trial_id, path, config
        # Trials trained at once (in worker processes) record their results one at a time.
        self.lock = lock if lock is not None else threading.RLock()
        self.halt = halt  # True: the Tuner is ending every trial (a fatal error elsewhere)
        # RunConfig.callbacks' on_trial_result, called with each recorded result.
        self.notify: Callable[[_TrialRun, dict[str, Any]], None] | None = None
        self.stopper, self.checkpoint_config = stopper, checkpoint_config
        self.deadline, self.verbose = deadline, verbose
        self.progress = progress
        self.history: list[dict[str, Any]] = list(resume.history) if resume else []
        self.checkpoints: list[Path] = list(resume.checkpoints) if resume else []
        self.stop_all = False
        self.out_of_time = False
        # The search algorithm's and scheduler's view of each result: True stops the trial.
        self.on_result: Callable[[dict[str, Any], bool], bool] | None = None
        self._fields: list[str] | None = None
        self._start = self._last = time.time()
        if self.history:  # resumed: times go on from the kept results'
            self._start -= float(self.history[-1].get("time_total_s", 0.0))
        path.mkdir(parents=True, exist_ok=True)
        safe_io.write_atomic(path / "params.json", json.dumps(to_json_data(config), indent=2))
        (path / "error.txt").unlink(missing_ok=True)  # a resumed trial's old error
        self._rewrite_results()

    @property
    def latest_checkpoint(self) -> Path | None:
        """The newest checkpoint kept (a resumed trial continues from it), or None."""
        return self.checkpoints[-1] if self.checkpoints else None

    @property
    def local_path(self) -> str:
        """The trial's directory (Tune's ``Trial.local_path``)."""
        return str(self.path)

    def _rewrite_results(self) -> None:
        """``result.json`` and ``progress.csv`` holding ``history`` (none for a new trial; a
        resumed one's results up to its checkpoint), written atomically."""
        lines = [
            json.dumps({**r, "config": to_json_data(self.config)}) + "\n" for r in self.history
        ]
        safe_io.write_atomic(self.path / "result.json", "".join(lines))
        csv_path = self.path / "progress.csv"
        if not self.history:
            csv_path.unlink(missing_ok=True)
            return
        flat = [flatten(r) for r in self.history]
        self._fields = list(flat[0])
        out = io.StringIO()
        writer = csv.DictWriter(out, self._fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(flat)
        safe_io.write_atomic(csv_path, out.getvalue())

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
        with self.lock:
            return self._record(metrics, checkpoint, algo)

    def _record(self, metrics: dict[str, Any], checkpoint: Any, algo: Any) -> bool:
        now = time.time()
        result = to_json_data(metrics)
        result.setdefault("training_iteration", len(self.history) + 1)
        result.setdefault("time_this_iter_s", now - self._last)
        result.setdefault("time_total_s", now - self._start)
        result.setdefault("timestamp", int(now))
        result.setdefault("pid", os.getpid())  # the trial's process (a worker's, see fit())
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
        if self.progress is not None:
            self.progress.result(self.trial_id, result)
        if self.notify is not None:
            self.notify(self, result)
        if self.verbose >= 2:
            line = f"Trial {self.trial_id} iteration {iteration}: {_short(flat)}"
            if self.progress is not None:
                self.progress.log(line)
            else:
                print(line)
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
        halted = self.halt is not None and self.halt()
        return stop or self.stop_all or self.out_of_time or halted

    def finish_algorithm(self, algo: Any) -> None:
        """``checkpoint_at_end``: a last checkpoint, unless this iteration's was just saved."""
        with self.lock:
            self._finish_algorithm(algo)

    def _finish_algorithm(self, algo: Any) -> None:
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
            text = f"{type(error).__name__}: {error}"[: es.MAX_ERROR_BYTES // 8]
            safe_io.write_atomic(self.path / "error.txt", text + "\n")
        metrics.setdefault("config", self.config)  # as Tune's result.metrics has it
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


def _base_config_data(base: AlgorithmConfig | None) -> dict[str, Any] | None:
    """A base config's settings as JSON data for the experiment state (searched settings left
    out: each trial's variant sets them); None when they are not plain data."""
    if base is None:
        return None
    from rljax.tune.sample import Domain

    data = {k: v for k, v in base.to_dict().items() if not isinstance(v, Domain)}
    try:
        return dict(json.loads(json.dumps(data)))
    except (TypeError, ValueError):
        return None


def _base_config_from_data(trainable: Any, state: es.ExperimentState) -> AlgorithmConfig:
    """The experiment's base config again, from its saved settings, for an algorithm name or
    class (``from_dict``: nothing is imported unless registered in this process)."""
    from rljax.algorithms import registry
    from rljax.algorithms.algorithm import Algorithm

    if isinstance(trainable, str):
        try:
            cls = registry.config_class(trainable)
        except KeyError:
            raise ConfigError(
                f"trainable {trainable!r} is not an rljax algorithm; use one of "
                f"{registry.algorithm_names()}"
            ) from None
    elif inspect.isclass(trainable) and issubclass(trainable, Algorithm):
        cls = type(trainable.config_class())
    else:
        raise ConfigError(
            f"{state.path}: the experiment trained the algorithm {state.trainable!r}; pass its "
            "name, its class or a config object as trainable"
        )
    assert state.base_config is not None
    try:
        config = cls.from_dict(state.base_config)
    except ConfigError as e:
        raise ConfigError(
            f"{state.path}: its saved base config does not load ({e}); pass the config object "
            "as trainable: Tuner.restore(path, trainable=config)"
        ) from None
    if inspect.isclass(trainable):
        config.algo_class = trainable
    return config


def _variants_over(param_space: Mapping[str, Any], state: es.ExperimentState) -> list[Any]:
    """Each trial's variant as ``param_space`` with its searched values replaced by the saved
    ones (for values JSON could not keep)."""
    from rljax.tune.variants import _copy_tree, _replace

    variants = []
    for saved in state.variants:
        variant = _copy_tree(dict(param_space))
        for path in state.searched:
            value: Any = saved
            try:
                for key in path:
                    value = value[key]
                variant = _replace(variant, tuple(path), _copy_tree(value))
            except (KeyError, IndexError, TypeError):
                raise ConfigError(
                    f"param_space has no key path {path!r} that the experiment searched; pass "
                    "the original param_space"
                ) from None
        variants.append(variant)
    return variants


@dataclasses.dataclass
class _Fit:
    """What one ``Tuner.fit()`` call keeps while it runs its trials."""

    state: es.ExperimentState
    stopper: Stopper | None
    checkpoint_config: CheckpointConfig
    deadline: float | None
    progress: ProgressReporter | None
    results: dict[int, Result] = dataclasses.field(default_factory=dict)
    stopped: bool = False  # by time_budget_s or a Stopper's stop_all(): no more trials start
    # With batches in worker processes: records, status changes and the table one at a time;
    # ``aborted`` ends every running trial after its current result (a fatal error elsewhere);
    # ``interrupted`` (Ctrl-C) leaves the running trials RUNNING for Tuner.restore.
    lock: threading.RLock = dataclasses.field(default_factory=threading.RLock)
    aborted: bool = False
    interrupted: bool = False
    callbacks: list[Any] = dataclasses.field(default_factory=list)  # RunConfig.callbacks
    trials: list[_TrialRun] = dataclasses.field(default_factory=list)  # started in this fit()
    iteration: int = 0  # results recorded in this fit()

    def callback(self, hook: str, **kwargs: Any) -> None:
        """Calls ``hook`` of every ``RunConfig`` callback; one that raises ends ``fit()``."""
        for cb in self.callbacks:
            try:
                getattr(cb, hook)(**kwargs)
            except Exception as e:
                raise _StopperFailed(
                    f"RunConfig.callbacks: {type(cb).__name__}.{hook} raised "
                    f"{type(e).__name__}: {e}"
                ) from e

    def trial_result(self, trial: _TrialRun, result: dict[str, Any]) -> None:
        self.iteration += 1
        self.callback(
            "on_trial_result",
            iteration=self.iteration,
            trials=list(self.trials),
            trial=trial,
            result=result,
        )

    def past_deadline(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.stopped = True
        return self.stopped


def _run_population(
    configs: list[AlgorithmConfig],
    trials: list[_TrialRun],
    scheduler: Any,
    payload: bytes | None = None,
) -> list[BaseException | None]:
    """Trains ``trials`` as one population until each stops (its stop criterion, a
    scheduler's STOP, the time budget); returns each one's exception, if it raised. A
    ``PopulationBasedTraining`` scheduler perturbs the population after every iteration, and
    each trial's config takes the values it explored. With ``payload`` (``worker``'s) the
    population trains in a worker process."""
    from rljax.execution.population import Population
    from rljax.tune.pbt import PopulationBasedTraining
    from rljax.tune.worker import RemotePopulation

    errors: list[BaseException | None] = [None] * len(trials)
    population: Any = None
    try:
        if payload is not None:  # built from the trials' checkpoints in the worker
            population = RemotePopulation(payload, len(trials))
        else:
            population = Population(configs, checkpoints=[t.latest_checkpoint for t in trials])
        pbt = scheduler if isinstance(scheduler, PopulationBasedTraining) else None
        while any(population.active):
            results = population.train()
            for i, error in enumerate(population.errors):
                if error is not None and errors[i] is None:
                    errors[i] = error
            ending = any(t.stop_all or t.out_of_time for t in trials)
            for i, result in enumerate(results):
                if result is None:
                    continue
                member, trial = population.members[i], trials[i]
                if trial.record(result, algo=member) or ending or trial.stop_all:
                    trial.finish_algorithm(member)
                    population.stop_trial(i)
            if pbt is not None and any(population.active):
                live = [r if population.active[i] else None for i, r in enumerate(results)]
                for dst in pbt.perturb(population, live):
                    mutated = {k: population.values[dst][k] for k in pbt.hyperparam_mutations}
                    trials[dst].config = {**trials[dst].config, **mutated}
            if any(t.stop_all or t.out_of_time for t in trials):
                for i in range(len(trials)):
                    if population.active[i]:
                        trials[i].finish_algorithm(population.members[i])
                        population.stop_trial(i)
    except (_StopperFailed, MainModuleRerun):
        raise
    except Exception as e:  # the population itself failed: every trial still in it did
        for i in range(len(trials)):
            if errors[i] is None and (population is None or population.active[i]):
                errors[i] = e
    finally:
        if population is not None:
            population.stop()
    return errors


# ---------------------------------------------------------------------- Tuner
class Tuner:
    """Runs the trials of a ``param_space`` (Ray Tune's ``Tuner``); see ``fit``.

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

    Everything that can be checked is checked here, before any trial builds or compiles: the
    number of trials (grid sizes x ``num_samples``, counted before any variant is made; at
    most ``rljax.tune.variants.MAX_VARIANTS``), an unknown trainable name, an unknown setting, a bad search space, a bad mode, settings that
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
        from rljax.tune.worker import refuse_in_worker

        refuse_in_worker()  # a worker importing a script without the __main__ guard again
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
        self._base = base
        self._restored: tuple[es.ExperimentState, es.ResumeFlags] | None = None
        self._searched = [p for p, _ in find_search_spaces(space)]
        searcher, scheduler = self.tune_config.search_alg, self.tune_config.scheduler
        # Counted before anything is drawn, made or asked of a searcher (10^9 variants hang).
        if searcher is not None and self.tune_config.num_samples > MAX_VARIANTS:
            raise ConfigError(
                f"TuneConfig.num_samples={self.tune_config.num_samples:,}: a search algorithm "
                f"suggests at most {MAX_VARIANTS:,} trials in one experiment"
            )
        check_variant_count(space, 1 if searcher else self.tune_config.num_samples, root)
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
        # RLlib 1.x's trainers (rljax.agents) read each variant as an old dict config; their
        # trials train one by one, through train(), whose results carry the old keys.
        self._old_api = trainable if _is_old_api_trainer(trainable) else None
        if self._old_api is not None and self.tune_config.populations:
            self.tune_config = dataclasses.replace(self.tune_config, populations=False)
        if self._function is None:
            assert base is not None
            _check_stop_keys(self.run_config.stop, old_api=self._old_api is not None)
            self._algo_configs = [self._variant_config(v) for v in self._variants]
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
        self._check_pbt()

    def _variant_config(self, variant: dict[str, Any]) -> AlgorithmConfig:
        """A trial's config: the base updated by the variant (an old-API trainer's: the
        variant read as its dict config)."""
        if self._old_api is not None:
            config: AlgorithmConfig = self._old_api.to_config(variant)
            return config
        assert self._algo_base is not None
        return self._algo_base.copy().update_from_dict(variant)

    def _check_pbt(self) -> None:
        """PBT runs inside populations: refused, saying why, for trials that cannot form one."""
        from rljax.tune.pbt import PopulationBasedTraining

        scheduler = self.tune_config.scheduler
        if not isinstance(scheduler, PopulationBasedTraining):
            return
        if self._algo_configs is None:
            raise ConfigError(
                "PopulationBasedTraining trains rljax algorithms as one population; a function "
                "trainable cannot exchange its state"
            )
        if self.tune_config.search_alg is not None:
            raise ConfigError(
                "PopulationBasedTraining explores the settings itself; give no search_alg"
            )
        if not self.tune_config.populations:
            raise ConfigError("PopulationBasedTraining needs TuneConfig(populations=True)")
        from rljax.execution.population import population_refusal

        algo = self._algo_configs[0].algo_class
        scheduler.check_settings(getattr(algo, "population_settings", ()), self.trainable_name)
        why = population_refusal(self._algo_configs)
        if why is None and len(self._algo_configs) < 2:
            why = "PBT needs at least 2 trials (num_samples or a grid)"
        limit = self.tune_config.max_concurrent_trials
        if why is None and limit is not None and limit < len(self._algo_configs):
            why = f"max_concurrent_trials={limit} splits the {len(self._algo_configs)} trials"
        if why is not None:
            raise ConfigError(f"PopulationBasedTraining needs every trial in one population: {why}")

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
        """Runs every trial and returns their results (in the order of the trials).

        Trials of an algorithm trainable that differ only in values the update reads (the
        algorithm's population settings, e.g. PPO's ``lr``, ``entropy_coeff``, ``gamma``, and
        the seed) train together as one population, one vmapped program
        (``rljax.execution.population``), at most ``max_concurrent_trials`` at a time when that
        is set; ``TuneConfig(populations=False)`` runs every trial alone. The batches (a
        population or one trial) run one after another in this process, or, when
        ``max_concurrent_trials`` leaves room for more than one (an algorithm trainable, no
        ``PopulationBasedTraining``), several at once, each in a worker process started for it
        (``rljax.tune.worker``; a batch whose configs cannot be pickled runs here), while this
        process records every result and makes every decision. With a search algorithm,
        ``max_concurrent_trials`` configs are asked at once (one by default) and trained
        together where they can be.

        A trial that raises is recorded (``Result.error``, ``ResultGrid.errors``, ``error.txt``)
        and the next one starts. A stop key missing from a trial's results ends ``fit()`` with
        ``ConfigError`` naming it (as Tune's ``TuneError``), as does a search algorithm's or
        scheduler's metric missing. Each result goes to the searcher, then to the scheduler
        unless a stop criterion stopped the trial; a scheduler's STOP ends the trial after that
        result, with a normal ``Result``. Once ``time_budget_s`` has passed, or a ``Stopper``'s
        ``stop_all()`` says so, the running trials stop after their current result and the
        trials not started are left out of the ``ResultGrid``.

        ``experiment_state.json`` at the experiment's root records every trial's status as it
        changes, so that ``Tuner.restore`` can continue an interrupted run. After a restore,
        the trials that finished are loaded from their files rather than run again.
        """
        run = self.run_config
        experiment = self._experiment_path()
        experiment.mkdir(parents=True, exist_ok=True)
        budget = self.tune_config.time_budget_s
        state, flags = self._restored or (self._new_state(experiment), None)
        fit = _Fit(
            state=state,
            stopper=as_stopper(run.stop),
            checkpoint_config=run.checkpoint_config or CheckpointConfig(),
            deadline=None if budget is None else time.monotonic() + budget,
            progress=self._progress(state) if run.verbose >= 1 else None,
            callbacks=list(run.callbacks or []),
        )
        try:
            try:
                fit.callback(
                    "setup",
                    stop=run.stop,
                    num_samples=self.tune_config.num_samples,
                    total_num_samples=len(self._variants),
                )
            except _StopperFailed as e:
                raise ConfigError(str(e)) from e.__cause__
            todo: list[tuple[int, str]] = []
            for index, variant in enumerate(self._variants):
                entry = state.trials[index]
                action = flags.action(entry["status"]) if flags is not None else "start"
                if action == "keep":  # finished (or left as it is) before the restore
                    fit.results[index] = es.load_result(experiment / entry["dir"], entry, variant)
                else:
                    todo.append((index, action))
            self._run_batches(fit, self._batches(todo))
            searcher = self.tune_config.search_alg
            if searcher is not None and self._restored is None:
                while not (fit.stopped or fit.past_deadline()):
                    indices = self._suggest(fit, searcher)
                    if not indices:
                        break
                    self._run_batches(fit, self._batches([(i, "start") for i in indices]))
        finally:
            if fit.progress is not None:
                fit.progress.close()
            with contextlib.suppress(_StopperFailed):  # the error that ended fit() counts
                fit.callback("on_experiment_end", trials=list(fit.trials))
        return ResultGrid(
            [fit.results[i] for i in sorted(fit.results)],
            str(experiment),
            metric=self.tune_config.metric,
            mode=self.tune_config.mode,
        )

    # ------------------------------------------------------------------ fit's parts
    def _suggest(self, fit: _Fit, searcher: Searcher) -> list[int]:
        """Asks the searcher for the next ``max_concurrent_trials`` (default 1) trials, at most
        ``num_samples`` in all; records them as PENDING and returns their indices."""
        room = self.tune_config.num_samples - len(self._variants)
        k = min(room, self.tune_config.max_concurrent_trials or 1)
        if k <= 0:
            return []
        tag = self._tag
        first = len(self._variants)
        ids = [f"{tag}_{first + j:05d}" for j in range(k)]
        variants = searcher.suggest_many(ids)
        indices = []
        for trial_id, variant in zip(ids, variants, strict=False):
            index = len(self._variants)
            data = to_json_data(variant)
            fit.state.add_trial(
                trial_id, self._trial_dir_name(trial_id, index, variant), data, data == variant
            )
            self._variants.append(variant)
            if self._algo_configs is not None:
                assert self._algo_base is not None
                self._algo_configs.append(self._variant_config(variant))
            if fit.progress is not None:
                fit.progress.table.add(trial_id, f"{self.trainable_name}_{trial_id}", variant)
            indices.append(index)
        return indices

    def _batches(self, todo: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
        """The trials to run, as batches run one after another: a population (trials of an
        algorithm that can share one program, at most ``max_concurrent_trials``) or one trial.
        A batch runs when its first trial's turn comes."""
        if self._algo_configs is None or not self.tune_config.populations:
            return [[item] for item in todo]
        from rljax.execution.population import population_key, population_refusal

        groups: dict[str, list[tuple[int, str]]] = {}
        for item in todo:
            groups.setdefault(population_key(self._algo_configs[item[0]]), []).append(item)
        limit = self.tune_config.max_concurrent_trials or len(todo)
        batches: list[list[tuple[int, str]]] = []
        for group in groups.values():
            chunks = [group[i : i + limit] for i in range(0, len(group), limit)]
            for chunk in chunks:
                configs = [self._algo_configs[i] for i, _ in chunk]
                if len(chunk) > 1 and population_refusal(configs) is None:
                    batches.append(chunk)
                else:
                    batches += [[item] for item in chunk]
        return sorted(batches, key=lambda b: b[0][0])

    def _open_trial(self, fit: _Fit, index: int, action: str) -> _TrialRun:
        """Marks trial ``index`` RUNNING and returns its run (resumed from its files when
        ``action`` is ``"resume"``, its files removed for ``"restart"``)."""
        entry = fit.state.trials[index]
        trial_id, trial_path = entry["trial_id"], fit.state.root / entry["dir"]
        es.check_trial_dir(fit.state.root, trial_path)  # never written through a link
        resume = es.resume_point(trial_path) if action == "resume" else None
        if action == "restart":
            es.start_over(trial_path)
        fit.state.set_status(index, es.RUNNING)
        if fit.progress is not None:
            fit.progress.status(trial_id, es.RUNNING)
        trial = _TrialRun(
            trial_id,
            trial_path,
            self._variants[index],
            fit.stopper,
            fit.checkpoint_config,
            fit.deadline,
            self.run_config.verbose,
            resume=resume,
            progress=fit.progress,
            lock=fit.lock,
            halt=lambda: fit.aborted,
        )
        searcher, scheduler = self.tune_config.search_alg, self.tune_config.scheduler
        if searcher is not None or scheduler is not None:
            trial.on_result = _searcher_and_scheduler(trial_id, searcher, scheduler)
        if scheduler is not None:
            scheduler.on_trial_add(trial_id)
        fit.trials.append(trial)
        if fit.callbacks:
            trial.notify = fit.trial_result
            fit.callback(
                "on_trial_start", iteration=fit.iteration, trials=list(fit.trials), trial=trial
            )
        return trial

    def _close_trial(
        self, fit: _Fit, index: int, trial: _TrialRun, error: BaseException | None
    ) -> None:
        fit.results[index] = trial.result(error)
        status = es.ERROR if error is not None else es.TERMINATED
        fit.state.set_status(index, status)
        last = flatten(trial.history[-1]) if trial.history else None
        searcher, scheduler = self.tune_config.search_alg, self.tune_config.scheduler
        if searcher is not None:
            searcher.on_trial_complete(trial.trial_id, last, error=error is not None)
        if scheduler is not None and error is not None:
            scheduler.on_trial_error(trial.trial_id)
        elif scheduler is not None:
            scheduler.on_trial_complete(trial.trial_id, last)
        hook = "on_trial_error" if error is not None else "on_trial_complete"
        fit.callback(hook, iteration=fit.iteration, trials=list(fit.trials), trial=trial)
        if fit.progress is not None:
            fit.progress.status(trial.trial_id, status)
            if error is not None:
                fit.progress.log(f"Trial {trial.trial_id} ERROR: {type(error).__name__}: {error}")
        fit.stopped = fit.stopped or trial.stop_all or trial.out_of_time

    def _parallel(self, batches: list[list[tuple[int, str]]]) -> bool:
        """Whether ``batches`` run at once, each in a worker process: when
        ``max_concurrent_trials`` leaves room for more than one of them, the trainable is an
        algorithm, and no ``PopulationBasedTraining`` needs every trial in this process."""
        from rljax.tune.pbt import PopulationBasedTraining

        cap = self.tune_config.max_concurrent_trials
        return (
            cap is not None
            and len(batches) > 1
            and self._algo_configs is not None
            and not isinstance(self.tune_config.scheduler, PopulationBasedTraining)
            and len(batches[0]) + len(batches[1]) <= cap
        )

    def _run_batches(self, fit: _Fit, batches: list[list[tuple[int, str]]]) -> None:
        """Runs ``batches`` in order: one after another in this process, or (``_parallel``)
        as many at once as ``max_concurrent_trials`` trials allow, each in a worker process
        driven by a thread of this one. No batch starts once ``time_budget_s`` has passed or a
        ``Stopper`` said ``stop_all``; an error that ends ``fit()`` (a failing stop criterion)
        ends the running trials after their current result, and Ctrl-C ends the workers at once
        (their trials stay RUNNING, for ``Tuner.restore``)."""
        if not self._parallel(batches):
            for batch in batches:
                if fit.stopped or fit.past_deadline():
                    break
                self._run_batch(fit, batch)
            return
        from rljax.tune.worker import Worker

        cap = self.tune_config.max_concurrent_trials
        assert cap is not None
        pending = list(batches)
        running: dict[Future[None], int] = {}
        failure: BaseException | None = None
        pool = ThreadPoolExecutor(max_workers=min(cap, len(batches)), thread_name_prefix="trial")
        try:
            while pending or running:
                while pending and failure is None and not (fit.stopped or fit.past_deadline()):
                    if running and sum(running.values()) + len(pending[0]) > cap:
                        break
                    batch = pending.pop(0)
                    running[pool.submit(self._run_batch, fit, batch, True)] = len(batch)
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    del running[future]
                    error = future.exception()
                    if error is not None and failure is None:
                        failure, fit.aborted = error, True
        except BaseException:
            fit.interrupted = fit.aborted = True
            Worker.kill_all()
            raise
        finally:
            pool.shutdown(wait=not fit.interrupted, cancel_futures=True)
        if failure is not None:
            raise failure

    def _run_batch(self, fit: _Fit, batch: list[tuple[int, str]], remote: bool = False) -> None:
        """Runs one batch to its end: a population, or one trial; in a worker process when
        ``remote`` and its configs can be sent there (else here). A failing stop criterion or
        callback ends ``fit()`` with ``ConfigError``."""
        try:
            self._run_batch_inner(fit, batch, remote)
        except _StopperFailed as e:
            raise ConfigError(str(e)) from e.__cause__

    def _run_batch_inner(self, fit: _Fit, batch: list[tuple[int, str]], remote: bool) -> None:
        with fit.lock:
            trials = {index: self._open_trial(fit, index, action) for index, action in batch}
        errors: dict[int, BaseException | None] = dict.fromkeys(trials)
        payload = None
        if remote:
            from rljax.tune.worker import picklable_payload

            assert self._algo_configs is not None
            payload = picklable_payload(
                [self._algo_configs[i] for i in trials],
                [t.latest_checkpoint for t in trials.values()],
            )
        if len(batch) > 1:
            assert self._algo_configs is not None
            failures = _run_population(
                [self._algo_configs[i] for i in trials],
                list(trials.values()),
                self.tune_config.scheduler,
                payload,
            )
            errors = dict(zip(trials, failures, strict=True))
        else:
            ((index, trial),) = trials.items()
            errors[index] = self._run_trial(index, trial, payload)
        if fit.interrupted:  # Ctrl-C ended the workers: the trials stay RUNNING
            return
        with fit.lock:
            for index, trial in trials.items():
                self._close_trial(fit, index, trial, errors[index])

    def _run_trial(
        self, index: int, trial: _TrialRun, payload: bytes | None = None
    ) -> BaseException | None:
        """Runs one trial to its end (an algorithm's in a worker process with ``payload``);
        returns its exception, if it raised."""
        global _SESSION
        variant = self._variants[index]
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
            else:
                assert self._algo_configs is not None
                self._run_algorithm(self._algo_configs[index], trial, payload)
        except (_StopperFailed, MainModuleRerun):
            raise
        except Exception as e:
            return e
        return None

    def _experiment_path(self) -> Path:
        if self._restored is not None:
            return self._restored[0].root
        run = self.run_config
        name = run.name or f"{self.trainable_name}_{time.strftime('%Y-%m-%d_%H-%M-%S')}"
        storage = Path(os.fspath(run.storage_path or default_storage_path())).expanduser()
        return storage / name

    def _new_state(self, experiment: Path) -> es.ExperimentState:
        """The state of a new run: every trial PENDING, written at once."""
        tag = self._tag = uuid.uuid4().hex[:5]
        ids = [f"{tag}_{index:05d}" for index in range(len(self._variants))]
        variants = to_json_data(self._variants)
        base = self._base if self._base is not None else self._config_base
        state = es.ExperimentState(
            root=experiment,
            trainable=self.trainable_name,
            kind="function" if self._function is not None else "algorithm",
            base_config=_base_config_data(base),
            variants=variants,
            variants_exact=variants == self._variants,
            searched=[list(p) for p in self._searched],
            tune_config=es.tune_config_data(self.tune_config),
            run_config=es.run_config_data(self.run_config),
            trials=[
                {
                    "trial_id": trial_id,
                    "dir": self._trial_dir_name(trial_id, index, variant),
                    "status": es.PENDING,
                }
                for index, (trial_id, variant) in enumerate(zip(ids, self._variants, strict=True))
            ],
        )
        state.save()
        return state

    def _progress(self, state: es.ExperimentState) -> ProgressReporter:
        chosen = self.run_config.progress_reporter
        if chosen is not None:
            table = chosen.table(self._searched, self.tune_config.metric, self.tune_config.mode)
        else:
            table = TrialTable(self._searched, self.tune_config.metric, self.tune_config.mode)
        for entry, variant in zip(state.trials, self._variants, strict=True):
            table.add(entry["trial_id"], f"{self.trainable_name}_{entry['trial_id']}", variant)
            if self._restored is not None and entry["status"] != es.PENDING:
                table.set_status(entry["trial_id"], entry["status"])
                history = es.read_history(state.root / entry["dir"])
                if history:
                    table.report(entry["trial_id"], history[-1])
        return ProgressReporter(table) if chosen is None else chosen.reporter(table)

    @classmethod
    def can_restore(cls, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is an experiment directory ``Tuner.restore`` can continue (it holds
        an ``experiment_state.json``)."""
        return (Path(os.fspath(path)).expanduser() / es.STATE_FILE).is_file()

    @classmethod
    def restore(
        cls,
        path: str | os.PathLike[str],
        trainable: Any,
        param_space: Mapping[str, Any] | AlgorithmConfig | None = None,
        resume_unfinished: bool = True,
        resume_errored: bool = False,
        restart_errored: bool = False,
        *,
        stop: Any = None,
        callbacks: list[Any] | None = None,
    ) -> Tuner:
        """A ``Tuner`` that continues the experiment at ``path`` (Ray Tune's
        ``Tuner.restore``); call ``fit()`` on it.

        Its ``fit()`` loads the trials that finished from their files (not run again) and
        returns a ``ResultGrid`` of all trials. A trial that was running or not started yet
        (``resume_unfinished``), or that raised (``resume_errored``), continues from its latest
        checkpoint (``checkpoint_NNNNNN``: an algorithm trial is rebuilt and
        ``restore_from_path``-ed, a function trial finds it with ``tune.get_checkpoint()``),
        its results up to that checkpoint kept and the next ones appended; without a
        checkpoint it starts over. ``restart_errored`` starts the trials that raised over, their
        files removed. Trials not resumed are returned as they were.

        Args:
          path: The experiment directory (``storage_path/name``) ``fit()`` wrote; it may have
            been moved.
          trainable: The trainable again: functions are not saved. An algorithm name or class
            rebuilds the base config from the saved settings; a config object replaces them.
          param_space: Needed only when the variants held values JSON cannot (objects,
            tuples): then the same ``param_space`` as the original, whose searched values are
            replaced by each trial's saved ones. A config object gives the base settings.
          resume_unfinished, resume_errored, restart_errored: Tune's flags, as above.
          stop: ``RunConfig.stop`` again when it was a function or a ``Stopper`` (not saved).
          callbacks: ``RunConfig.callbacks`` again (objects, not saved).

        The directory is read as untrusted data before anything in it changes: every trial
        directory must be a plain directory inside it (not a link, to another run say; nor
        its ``checkpoint_NNNNNN`` directories), and every file read back (``experiment_state
        .json``, each trial's ``result.json`` and ``error.txt``) a regular file inside its
        directory, within a size cap (64 MiB, 256 MiB, 1 MiB) and nested at most 64 levels.
        Nothing is read, written or deleted through a link.

        Raises:
          ConfigError: no experiment state at ``path``, a trial directory or file that breaks
            the rules above (naming it and the rule, never its content), a trainable of
            another kind or algorithm than the experiment's, or something above that must be
            given again.
        """
        from rljax.algorithms.algorithm_config import AlgorithmConfig, check_loaded_env_settings

        state = es.ExperimentState.load(path)
        es.check_trial_files(state)  # every file read back is checked before anything changes
        for index, saved in enumerate(state.variants):  # settings read from a file
            if isinstance(saved, Mapping):
                try:
                    check_loaded_env_settings(saved)
                except ConfigError as e:
                    raise ConfigError(f"{state.path}: trial {index}: {e}") from None
        tune_config, run_config = es.restored_configs(state, stop)
        if callbacks is not None:
            run_config = dataclasses.replace(run_config, callbacks=callbacks)
        # The base settings: a config given again, else (an algorithm) the saved ones.
        base_space = param_space if isinstance(param_space, AlgorithmConfig) else None
        if state.kind == "algorithm" and not isinstance(trainable, AlgorithmConfig):
            if base_space is None and state.base_config is None:
                raise ConfigError(
                    f"{state.path}: the base config of {state.trainable!r} held objects that "
                    "could not be saved; pass the config again: Tuner.restore(path, "
                    "trainable=config)"
                )
            if base_space is None:
                base_space = _base_config_from_data(trainable, state)
        if state.kind == "function" and state.base_config is not None and base_space is None:
            raise ConfigError(
                f"{state.path}: the function trainable {state.trainable!r} took a config object; "
                "pass it again: Tuner.restore(path, trainable, param_space=config)"
            )
        tuner = cls(
            trainable,
            param_space=base_space,
            tune_config=TuneConfig(**{**es.tune_config_data(tune_config), "num_samples": 1}),
            run_config=run_config,
        )
        kind = "function" if tuner._function is not None else "algorithm"
        if kind != state.kind or (kind == "algorithm" and tuner.trainable_name != state.trainable):
            raise ConfigError(
                f"{state.path}: the experiment trained {state.kind} {state.trainable!r}; "
                f"got the {kind} {tuner.trainable_name!r}"
            )
        tuner.tune_config = tune_config
        tuner._searched = [tuple(p) for p in state.searched]
        if isinstance(param_space, Mapping):
            tuner._variants = _variants_over(param_space, state)
        elif state.variants_exact:
            tuner._variants = state.variants
        else:
            raise ConfigError(
                f"{state.path}: the variants held values JSON cannot keep (objects, tuples); "
                "pass the original param_space again: Tuner.restore(path, trainable, "
                "param_space=...)"
            )
        if tuner._function is None:
            assert tuner._base is not None
            tuner._algo_configs = [tuner._base.copy().update_from_dict(v) for v in tuner._variants]
        tuner._restored = (
            state,
            es.ResumeFlags(bool(resume_unfinished), bool(resume_errored), bool(restart_errored)),
        )
        return tuner

    @staticmethod
    def _run_algorithm(
        config: AlgorithmConfig, trial: _TrialRun, payload: bytes | None = None
    ) -> None:
        from rljax.tune.worker import RemoteAlgorithm

        if payload is not None:  # built, and restored from the checkpoint, in the worker
            algo: Any = RemoteAlgorithm(payload)
        else:
            algo = config.build_algo()
        try:
            resumed_from = trial.latest_checkpoint
            if resumed_from is not None and payload is None:  # its iteration count goes on
                algo.restore_from_path(resumed_from)
            while not trial.record(algo.train(), algo=algo):
                pass
            trial.finish_algorithm(algo)
        finally:
            algo.stop()


def _is_old_api_trainer(trainable: Any) -> bool:
    from rljax.agents import is_trainer

    return is_trainer(trainable)


def _old_api_trainable(trainable: Any, config: Any) -> Any:
    """``tune.run``'s trainable: RLlib 1.x's trainer for an algorithm name whose dict config
    uses an old key (one that is no setting of the algorithm's config), else as given."""
    from rljax.algorithms import registry

    if not (isinstance(trainable, str) and isinstance(config, Mapping)):
        return trainable
    if trainable not in registry.algorithm_names():
        return trainable  # Tuner names what is wrong
    from rljax.agents import trainer_class
    from rljax.agents.config_table import OLD_KEYS

    settings = registry.config_class(trainable).SETTINGS
    if any(isinstance(k, str) and k not in settings and k in OLD_KEYS for k in config):
        return trainer_class(trainable)
    return trainable


def _check_stop_keys(stop: Any, old_api: bool) -> None:
    """Before any trial: a stop key of RLlib 1.x's results (``episode_reward_mean``) on a
    new-API algorithm, which never reports it, is refused with its new name."""
    if old_api or not isinstance(stop, Mapping):
        return
    from rljax.agents.trainer import OLD_RESULT_KEYS

    old = {k: OLD_RESULT_KEYS[k] for k in stop if k in OLD_RESULT_KEYS}
    if old:
        shown = ", ".join(f"{k!r} -> {v!r}" for k, v in old.items())
        raise ConfigError(
            f"stop={dict(stop)!r}: {', '.join(map(repr, old))} is RLlib 1.x's result key, "
            f"which the new API stack does not report; use {shown} (or train RLlib 1.x's "
            "trainer, rljax.agents.ppo.PPOTrainer, whose results have the old keys)"
        )


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

    @property
    def results_df(self) -> Any:
        """Each trial's last result and config, one row per trial (a pandas DataFrame)."""
        return self.result_grid.get_dataframe()


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
    *,
    local_dir: str | os.PathLike[str] | None = None,
    checkpoint_freq: int = 0,
    checkpoint_at_end: bool = False,
    keep_checkpoints_num: int | None = None,
    resources_per_trial: Any = None,
) -> ExperimentAnalysis:
    """Tune's older entry point, run through ``Tuner``: ``tune.run(trainable, config=...,
    stop=..., num_samples=..., metric=..., mode=...)`` returns an ``ExperimentAnalysis`` with
    ``best_config``, ``best_result``, ``results``, ``results_df`` and ``trials``.

    Ray 1.x's arguments are taken too: ``local_dir`` (``storage_path``), ``checkpoint_freq``,
    ``checkpoint_at_end`` and ``keep_checkpoints_num`` (a ``CheckpointConfig``), and
    ``resources_per_trial`` (no effect: trials share the host). An algorithm name with a dict
    ``config`` that uses RLlib 1.x's keys (``tune.run("PPO", config={"num_workers": 2,
    "sgd_minibatch_size": 64, ...})``) trains RLlib 1.x's trainer (``rljax.agents``), whose
    results have the old keys (``episode_reward_mean``).

    Raises:
      TuneError: ``raise_on_failed_trial`` (the default, as Tune's) and a trial raised.
    """
    check_mode(mode)
    if local_dir is not None:
        if storage_path is not None:
            raise ConfigError("tune.run(): give storage_path or local_dir (its old name), not both")
        storage_path = local_dir
    if checkpoint_freq or checkpoint_at_end or keep_checkpoints_num is not None:
        if checkpoint_config is not None:
            raise ConfigError(
                "tune.run(): give checkpoint_config or checkpoint_freq / checkpoint_at_end / "
                "keep_checkpoints_num, not both"
            )
        checkpoint_config = CheckpointConfig(
            num_to_keep=keep_checkpoints_num,
            checkpoint_frequency=checkpoint_freq,
            checkpoint_at_end=checkpoint_at_end,
        )
    if resources_per_trial is not None:
        from rljax.agents.config_table import note

        note(
            "resources_per_trial",
            "tune.run(resources_per_trial=...) has no effect: trials share the host",
        )
    run_or_experiment = _old_api_trainable(run_or_experiment, config)
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


__all__ = [
    "ExperimentAnalysis",
    "TuneError",
    "Tuner",
    "get_checkpoint",
    "report",
    "run",
    "to_json_data",
]
