"""One trial's run: its results, files, checkpoints and stop decisions (``_TrialRun``),
``tune.report`` / ``tune.get_checkpoint`` for the trial a function trainable runs in, and what
one ``Tuner.fit()`` keeps while its trials run (``_Fit``).

``rljax.tune.tuner`` re-exports these names.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rljax.tune import experiment_state as es
from rljax.tune.progress import ProgressReporter
from rljax.tune.result_grid import Checkpoint, Result, checkpoint_results
from rljax.tune.stopper import Stopper, flatten, metric_value
from rljax.tune.tune_config import CheckpointConfig
from rljax.utils import safe_io
from rljax.utils.errors import ConfigError
from rljax.utils.result_loggers import to_json_data, without_config

if TYPE_CHECKING:
    from rljax.tune.schedulers import TrialScheduler
    from rljax.tune.search.searcher import Searcher


class _StopTrial(BaseException):
    """Raised inside a function trainable's ``tune.report`` when its trial is to stop (a
    ``BaseException``, so that the trainable's own ``except Exception`` does not catch it)."""


class _StopperFailed(BaseException):
    """A stop criterion that cannot be read (a key missing from the results): ends ``fit()``
    (a ``BaseException``, so that a function trainable's ``except Exception`` does not hide it)."""


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


@contextlib.contextmanager
def trial_session(trial: _TrialRun) -> Iterator[None]:
    """Makes ``trial`` the one ``tune.report`` and ``tune.get_checkpoint`` speak of while a
    function trainable runs in it."""
    global _SESSION
    _SESSION = trial
    try:
        yield
    finally:
        _SESSION = None


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
        describe: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ):
        self.trial_id, self.path, self.config = trial_id, path, config
        # The config its results show (Result.config, params.json, result.json): with a config
        # object as param_space, the whole config (describe), as Tune's; else the variant.
        self._describe = describe
        self._shown: tuple[str, dict[str, Any]] | None = None
        # Trials trained at once (in worker processes) record their results one at a time.
        self.lock = lock if lock is not None else threading.RLock()
        self.halt = halt  # True: the Tuner is ending every trial (a fatal error elsewhere)
        # RunConfig.callbacks' on_trial_result, called with each recorded result, and their
        # on_checkpoint, with each checkpoint saved.
        self.notify: Callable[[_TrialRun, dict[str, Any]], None] | None = None
        self.notify_checkpoint: Callable[[_TrialRun, Checkpoint], None] | None = None
        # What Tune's Trial shows callbacks (the Tuner sets the names).
        self.status = es.RUNNING
        self.metric: str | None = None  # TuneConfig.metric, checked until a result has it
        self._metric_seen = False
        self.trainable_name = ""
        self.experiment_tag = ""
        self.name = trial_id
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
        safe_io.write_atomic(
            path / "params.json", json.dumps(to_json_data(self.shown_config), indent=2)
        )
        (path / "error.txt").unlink(missing_ok=True)  # a resumed trial's old error
        self._rewrite_results()

    def __str__(self) -> str:
        """The trial's name, as Tune's ``str(trial)``."""
        return self.name

    def __repr__(self) -> str:
        return self.name

    @property
    def last_result(self) -> dict[str, Any]:
        """The trial's last result (Tune's ``Trial.last_result``), or {} before its first."""
        return self.history[-1] if self.history else {}

    @property
    def checkpoint(self) -> Checkpoint | None:
        """The trial's newest checkpoint kept (Tune's ``Trial.checkpoint``), or None."""
        return Checkpoint(self.checkpoints[-1]) if self.checkpoints else None

    @property
    def logdir(self) -> str:
        """The trial's directory (Tune's older name)."""
        return str(self.path)

    @property
    def shown_config(self) -> dict[str, Any]:
        """The trial's config as its results show it (``describe(config)``, made again only
        when the config changed: population-based training's exploit)."""
        if self._describe is None:
            return self.config
        key = json.dumps(to_json_data(self.config), sort_keys=True, default=repr)
        if self._shown is None or self._shown[0] != key:
            self._shown = (key, self._describe(self.config))
        return self._shown[1]

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
            json.dumps({**r, "config": to_json_data(self.shown_config)}) + "\n"
            for r in self.history
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
        if self.notify_checkpoint is not None:
            self.notify_checkpoint(self, Checkpoint(target))
        keep = self.checkpoint_config.num_to_keep
        if keep is None or len(self.checkpoints) <= keep:
            return
        # The best ``keep`` stay (the newest, without a score attribute) and, as in Tune, the
        # newest too: with a score attribute, keep + 1 may stay.
        results = checkpoint_results(self.checkpoints, self.history)
        ranked = sorted(
            range(len(self.checkpoints)), key=lambda i: self._checkpoint_rank(results[i], i)
        )
        best = {self.checkpoints[i] for i in ranked[-keep:]}
        for path in list(self.checkpoints[:-1]):
            if path not in best:
                self.checkpoints.remove(path)
                shutil.rmtree(path, ignore_errors=True)

    def _checkpoint_rank(self, result: dict[str, Any], age: int) -> tuple[int, float, int]:
        """A checkpoint's place when the worst are dropped (smallest first): with
        ``checkpoint_score_attribute``, by the value in ``result`` (that of the iteration that
        saved it; those without one first), then by ``age`` (its place in save order)."""
        attribute = self.checkpoint_config.checkpoint_score_attribute
        if attribute is None:
            return (0, 0.0, age)
        try:
            score = float(flatten(result).get(attribute))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return (0, 0.0, age)
        if math.isnan(score):
            return (0, 0.0, age)
        sign = 1.0 if self.checkpoint_config.checkpoint_score_order == "max" else -1.0
        return (1, sign * score, age)

    def record(self, metrics: dict[str, Any], checkpoint: Any = None, algo: Any = None) -> bool:
        """Stores one result; True when the trial is to stop."""
        with self.lock:
            return self._record(metrics, checkpoint, algo)

    def _record(self, metrics: dict[str, Any], checkpoint: Any, algo: Any) -> bool:
        now = time.time()
        # An algorithm's results carry its config (Ray's Trainable keys); a trial's result
        # files and metrics hold the trial's own config instead, once (below).
        result = to_json_data(without_config(metrics))
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
            f.write(json.dumps({**result, "config": to_json_data(self.shown_config)}) + "\n")
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
        if self.metric is not None and not self._metric_seen:
            # Tune's strict metric check, on each result until one has the metric's section
            # (evaluation/... comes every evaluation_interval iterations): a misspelled metric
            # would otherwise fail only when the best trial is asked for, after every trial ran.
            try:
                found = metric_value("TuneConfig.metric", self.metric, self.trial_id, result)
            except ConfigError as e:
                raise _StopperFailed(str(e)) from e
            self._metric_seen = found is not None
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

    def train(self, trainable: Any, restore: bool = True) -> None:
        """Trains ``trainable`` in this trial and stops it: an algorithm, or a
        ``tune.Trainable`` (``train``, ``save_to_path``, ``restore_from_path``, ``stop``).
        It is restored from the trial's newest checkpoint first when ``restore`` and there is
        one (its iteration count goes on), trained until a stop criterion, the scheduler or a
        result with ``done=True`` ends the trial, and checkpointed as ``CheckpointConfig``
        asks (``checkpoint_at_end`` included)."""
        try:
            latest = self.latest_checkpoint
            if restore and latest is not None:
                trainable.restore_from_path(latest)
            while True:
                result = trainable.train()
                if self.record(result, algo=trainable) or bool(result.get("done")):
                    break
            self.finish_algorithm(trainable)
        finally:
            trainable.stop()

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
        metrics.setdefault("config", self.shown_config)  # as Tune's result.metrics has it
        return Result(
            config=self.shown_config,
            metrics=metrics,
            path=str(self.path),
            error=error,
            checkpoint=Checkpoint(self.checkpoints[-1]) if self.checkpoints else None,
            history=self.history,
            trial_id=self.trial_id,
            _kept=[Checkpoint(p) for p in self.checkpoints],
        )


def _short(flat: Mapping[str, Any], limit: int = 6) -> str:
    shown = [
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in flat.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    return ", ".join(shown[:limit])


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

    def trial_checkpoint(self, trial: _TrialRun, checkpoint: Checkpoint) -> None:
        self.callback(
            "on_checkpoint",
            iteration=self.iteration,
            trials=list(self.trials),
            trial=trial,
            checkpoint=checkpoint,
        )

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


__all__ = [
    "get_checkpoint",
    "report",
    "to_json_data",
    "trial_session",
]
