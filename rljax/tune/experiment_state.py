"""What ``Tuner.restore`` needs, kept at the experiment's root as ``experiment_state.json``.

The file is JSON data, never a pickle: the trainable's name and kind, the base config of an
algorithm trainable (``AlgorithmConfig.to_dict()``), the variants (one resolved config per
trial), the searched key paths, ``TuneConfig`` and ``RunConfig`` as data, and each trial's id,
directory (relative to the root, so a moved experiment restores) and status: ``PENDING``,
``RUNNING``, ``TERMINATED`` or ``ERROR``. ``Tuner.fit()`` rewrites it atomically after every
status change, so a run killed at any moment leaves a file that says which trials finished.

A restore may be pointed at a directory from someone else, so everything in it is read as
untrusted data (``rljax.utils.safe_io``'s rules): the state file and each trial's
``result.json`` and ``error.txt`` must be regular files inside their directory, within a size
cap, nested at most 64 levels; a trial directory must be a plain directory inside the
experiment (``check_trial_dir``), so that nothing is read, written or deleted through a link.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rljax.tune.result_grid import Checkpoint, Result
from rljax.tune.tune_config import CheckpointConfig, FailureConfig, RunConfig, TuneConfig
from rljax.utils import safe_io
from rljax.utils.errors import ConfigError

STATE_FILE = "experiment_state.json"
FORMAT_VERSION = 1
PENDING, RUNNING, TERMINATED, ERROR = "PENDING", "RUNNING", "TERMINATED", "ERROR"
STATUSES = (PENDING, RUNNING, TERMINATED, ERROR)
# The state file is the experiment's own, but a restore may be pointed at any directory.
MAX_STATE_BYTES = 64 << 20
# A trial's result.json (a JSON line per result) and error.txt are read back with these caps.
MAX_RESULT_BYTES = 256 << 20
MAX_ERROR_BYTES = 1 << 20
_CHECKPOINT_DIR = re.compile(r"checkpoint_(\d{6,})")


class TrialError(RuntimeError):
    """The error of a trial loaded back by ``Tuner.restore`` (from its ``error.txt``): the
    original exception object is gone, its type and message are kept in the text."""


def tune_config_data(config: TuneConfig) -> dict[str, Any]:
    """The ``TuneConfig`` settings a restore needs, as JSON data."""
    return {
        "metric": config.metric,
        "mode": config.mode,
        "num_samples": config.num_samples,
        "time_budget_s": config.time_budget_s,
        "seed": config.seed,
        "max_concurrent_trials": config.max_concurrent_trials,
        "populations": config.populations,
        # A scheduler is an object (not saved): its kind says to pass it again on restore.
        "scheduler_kind": None if config.scheduler is None else type(config.scheduler).__name__,
    }


def run_config_data(config: RunConfig) -> dict[str, Any]:
    """The ``RunConfig`` as JSON data; a ``stop`` that is a function or a ``Stopper`` is not data
    and is recorded as ``stop_kind`` only (``Tuner.restore(..., stop=...)`` takes it again)."""
    stop = config.stop
    checkpoint = config.checkpoint_config or CheckpointConfig()
    return {
        "name": config.name,
        "stop": dict(stop) if isinstance(stop, Mapping) else None,
        "stop_kind": None if stop is None or isinstance(stop, Mapping) else type(stop).__name__,
        "checkpoint_config": {
            "num_to_keep": checkpoint.num_to_keep,
            "checkpoint_frequency": checkpoint.checkpoint_frequency,
            "checkpoint_at_end": checkpoint.checkpoint_at_end,
            "checkpoint_score_attribute": checkpoint.checkpoint_score_attribute,
            "checkpoint_score_order": checkpoint.checkpoint_score_order,
        },
        "verbose": config.verbose,
        "failure_config": None
        if config.failure_config is None
        else {
            "max_failures": config.failure_config.max_failures,
            "fail_fast": config.failure_config.fail_fast,
        },
    }


@dataclass
class ExperimentState:
    """``experiment_state.json`` in memory; ``save()`` writes it atomically."""

    root: Path
    trainable: str
    kind: str  # "algorithm" or "function"
    base_config: dict[str, Any] | None
    variants: list[Any]
    variants_exact: bool
    searched: list[list[Any]]
    tune_config: dict[str, Any]
    run_config: dict[str, Any]
    trials: list[dict[str, Any]] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.root / STATE_FILE

    def to_data(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "trainable": self.trainable,
            "kind": self.kind,
            "base_config": self.base_config,
            "variants": self.variants,
            "variants_exact": self.variants_exact,
            "searched": self.searched,
            "tune_config": self.tune_config,
            "run_config": self.run_config,
            "trials": self.trials,
        }

    def save(self) -> None:
        safe_io.write_atomic(self.path, json.dumps(self.to_data(), indent=1))

    def set_status(self, index: int, status: str) -> None:
        """Records trial ``index``'s new status and writes the file."""
        if status not in STATUSES:
            raise ValueError(f"status={status!r}: use one of {list(STATUSES)}")
        self.trials[index]["status"] = status
        self.save()

    def add_trial(self, trial_id: str, directory: str, variant: Any, exact: bool) -> int:
        """Records a new PENDING trial (a search algorithm's suggestion), writes the file and
        returns its index. ``exact``: whether ``variant`` is JSON data as given."""
        self.variants.append(variant)
        self.variants_exact = self.variants_exact and exact
        self.trials.append({"trial_id": trial_id, "dir": directory, "status": PENDING})
        self.save()
        return len(self.trials) - 1

    @classmethod
    def load(cls, root: str | os.PathLike[str]) -> ExperimentState:
        """Reads ``root/experiment_state.json``.

        Raises:
          ConfigError: no such file, or one that is not a state file of this format (naming
            the field that is wrong).
        """
        root = Path(os.fspath(root)).expanduser()
        path = root / STATE_FILE
        if not path.is_file():
            raise ConfigError(
                f"{root}: no {STATE_FILE} here, so no experiment to restore; give the directory "
                "Tuner.fit() wrote (storage_path/name)"
            )
        data = safe_io.read_json(path, root, MAX_STATE_BYTES, ConfigError)
        if not isinstance(data, dict) or data.get("format_version") != FORMAT_VERSION:
            raise ConfigError(f"{path}: not an rljax experiment state (format {FORMAT_VERSION})")
        expected: dict[str, type | tuple[type, ...]] = {
            "trainable": str,
            "kind": str,
            "base_config": (dict, type(None)),
            "variants": list,
            "variants_exact": bool,
            "searched": list,
            "tune_config": dict,
            "run_config": dict,
            "trials": list,
        }
        for key, kind in expected.items():
            if not isinstance(data.get(key), kind):
                raise ConfigError(f"{path}: field {key!r} is missing or of the wrong type")
        if data["kind"] not in ("algorithm", "function"):
            raise ConfigError(f"{path}: kind={data['kind']!r}; expected 'algorithm' or 'function'")
        if len(data["trials"]) != len(data["variants"]):
            raise ConfigError(
                f"{path}: {len(data['trials'])} trials for {len(data['variants'])} variants"
            )
        for i, trial in enumerate(data["trials"]):
            if (
                not isinstance(trial, dict)
                or not isinstance(trial.get("trial_id"), str)
                or not isinstance(trial.get("dir"), str)
                or trial.get("status") not in STATUSES
                or Path(trial["dir"]).name != trial["dir"]
                or trial["dir"] in ("", ".", "..")
            ):
                raise ConfigError(
                    f"{path}: trials[{i}] needs trial_id, dir (a directory name) and status "
                    f"(one of {list(STATUSES)})"
                )
        # Counted once (a list's count() per directory is quadratic in the trials).
        counts = collections.Counter(trial["dir"] for trial in data["trials"])
        twice = sorted(d for d, n in counts.items() if n > 1)
        if twice:
            raise ConfigError(f"{path}: several trials share the directory {twice[:3]}")
        data.pop("format_version")
        state = cls(root=root, **data)
        for trial in state.trials:
            check_trial_dir(root, root / trial["dir"])
        return state


@dataclass
class ResumeFlags:
    """``Tuner.restore``'s choices for each trial status (Ray Tune's defaults)."""

    resume_unfinished: bool = True
    resume_errored: bool = False
    restart_errored: bool = False

    def action(self, status: str) -> str:
        """What a restored ``fit()`` does with a trial of ``status``: ``"keep"`` (load its
        results, do not run it), ``"resume"`` (continue from its latest checkpoint, or start
        over without one) or ``"restart"`` (start over, its files removed)."""
        if status == TERMINATED:
            return "keep"
        if status == ERROR:
            if self.restart_errored:
                return "restart"
            return "resume" if self.resume_errored else "keep"
        return "resume" if self.resume_unfinished else "keep"


def check_trial_dir(root: Path, trial_dir: Path) -> None:
    """Refuses a trial directory that ``Tuner.restore`` must not read, write or delete in: one
    that is a symbolic link (to another run, say), is not a directory, or lies outside the
    experiment ``root``; or whose ``checkpoint_NNNNNN`` entries are links. A missing one is
    fine (a trial not started yet).

    Raises:
      ConfigError: naming the path and the rule.
    """
    rule = (
        "the experiment's trial directories must be plain directories inside it; nothing is "
        "read, written or deleted through a link"
    )
    if not os.path.lexists(trial_dir):
        return
    if os.path.islink(trial_dir):
        raise ConfigError(f"{trial_dir}: is a symbolic link; {rule}")
    if not trial_dir.is_dir():
        raise ConfigError(f"{trial_dir}: is not a directory; {rule}")
    real_root = Path(os.path.realpath(root))
    if real_root not in Path(os.path.realpath(trial_dir)).parents:
        raise ConfigError(f"{trial_dir}: lies outside the experiment {root}; {rule}")
    with os.scandir(trial_dir) as entries:  # closed when a link stops the loop, too
        for entry in entries:
            if _CHECKPOINT_DIR.fullmatch(entry.name) and entry.is_symlink():
                raise ConfigError(f"{trial_dir / entry.name}: is a symbolic link; {rule}")


def _read_trial_file(trial_dir: Path, name: str, max_bytes: int) -> bytes | None:
    """The bytes of the trial's file ``name`` (None when there is none): a regular file inside
    the trial directory, at most ``max_bytes`` (``safe_io.open_regular``'s rules)."""
    path = trial_dir / name
    if not os.path.lexists(path):
        return None
    return safe_io.open_regular(
        path,
        trial_dir,
        max_bytes,
        ConfigError,
        outside="is a link that leads outside its trial directory; a trial's files must lie "
        "inside it",
    )


def read_history(trial_dir: Path) -> list[dict[str, Any]]:
    """A trial's results from its ``result.json`` (one JSON line each, ``config`` dropped); a
    last line cut short by a crash is left out.

    The file is read as untrusted data: a regular file inside the trial directory, at most
    ``MAX_RESULT_BYTES``, each line nested at most ``safe_io.MAX_DEPTH`` levels.

    Raises:
      ConfigError: a file that breaks those rules, or a line (but the last) that is not a
        JSON object, naming the file and the line, never its content.
    """
    path = trial_dir / "result.json"
    data = _read_trial_file(trial_dir, "result.json", MAX_RESULT_BYTES)
    if data is None:
        return []
    # One scan of the whole file (each line is one object, so depth is back to 0 at each
    # line's end); the number of elements is bounded by the size cap already.
    safe_io.check_nesting(data, path, ConfigError, max_elements=MAX_RESULT_BYTES)
    history = []
    lines = data.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            result = json.loads(line)
        except (ValueError, RecursionError):
            if number == len(lines):  # written when the process died
                break
            raise ConfigError(f"{path}: line {number} is not JSON") from None
        if not isinstance(result, dict):
            raise ConfigError(f"{path}: line {number} is not a JSON object")
        result.pop("config", None)
        history.append(result)
    return history


def checkpoints_of(trial_dir: Path) -> list[Path]:
    """A trial's ``checkpoint_NNNNNN`` directories, oldest first."""
    if not trial_dir.is_dir():
        return []
    found = [
        (int(m.group(1)), p)
        for p in trial_dir.iterdir()
        if (m := _CHECKPOINT_DIR.fullmatch(p.name)) and p.is_dir() and not p.is_symlink()
    ]
    return [p for _, p in sorted(found)]


@dataclass
class ResumePoint:
    """Where a resumed trial continues: the results up to its latest checkpoint and its
    checkpoints (empty lists: it starts over)."""

    history: list[dict[str, Any]]
    checkpoints: list[Path]

    @property
    def checkpoint(self) -> Path | None:
        return self.checkpoints[-1] if self.checkpoints else None


def resume_point(trial_dir: Path) -> ResumePoint:
    """The results a trial keeps when it continues from its latest checkpoint: those up to the
    checkpoint's iteration (later ones are computed again). Without a checkpoint it starts
    over and keeps none."""
    checkpoints = checkpoints_of(trial_dir)
    if not checkpoints:
        return ResumePoint([], [])
    iteration = int(checkpoints[-1].name.rsplit("_", 1)[1])
    kept = [r for r in read_history(trial_dir) if int(r.get("training_iteration", 0)) <= iteration]
    return ResumePoint(kept, checkpoints)


def start_over(trial_dir: Path) -> None:
    """Removes a trial's files (``restart_errored``); a link is refused, never followed.

    Raises:
      ConfigError: ``trial_dir`` is a symbolic link.
    """
    if os.path.islink(trial_dir):
        raise ConfigError(
            f"{trial_dir}: is a symbolic link; the experiment's trial directories must be plain "
            "directories inside it; nothing is deleted through a link"
        )
    shutil.rmtree(trial_dir, ignore_errors=True)


def load_result(trial_dir: Path, trial: Mapping[str, Any], config: dict[str, Any]) -> Result:
    """A trial that is not run again, as ``fit()`` would have returned it: its results from
    ``result.json``, its newest checkpoint, and for an ``ERROR`` trial a ``TrialError`` with
    the text of its ``error.txt``."""
    history = read_history(trial_dir)
    metrics: dict[str, Any] = dict(history[-1]) if history else {"trial_id": trial["trial_id"]}
    error: BaseException | None = None
    if trial["status"] == ERROR:
        raw = _read_trial_file(trial_dir, "error.txt", MAX_ERROR_BYTES)
        text = "" if raw is None else raw.decode("utf-8", errors="replace").strip()
        error = TrialError(text or f"trial {trial['trial_id']} failed")
    elif trial["status"] == TERMINATED:
        metrics["done"] = True
    metrics.setdefault("config", config)  # as Tune's result.metrics has it
    checkpoints = checkpoints_of(trial_dir)
    return Result(
        config=config,
        metrics=metrics,
        path=str(trial_dir),
        error=error,
        checkpoint=Checkpoint(checkpoints[-1]) if checkpoints else None,
        history=history,
        trial_id=str(trial["trial_id"]),
        _kept=[Checkpoint(p) for p in checkpoints],
    )


def check_trial_files(state: ExperimentState) -> None:
    """Reads every trial's ``result.json`` and ``error.txt`` as ``Tuner.restore`` will, so that
    a file that breaks the rules (``read_history``) is refused before anything changes."""
    for trial in state.trials:
        trial_dir = state.root / trial["dir"]
        check_trial_dir(state.root, trial_dir)
        read_history(trial_dir)
        _read_trial_file(trial_dir, "error.txt", MAX_ERROR_BYTES)


def restored_configs(
    state: ExperimentState, stop: Any, scheduler: Any = None
) -> tuple[TuneConfig, RunConfig]:
    """``TuneConfig`` and ``RunConfig`` as the experiment had them, under its present
    directory.

    Raises:
      ConfigError: the experiment stopped trials with a function or ``Stopper`` and ``stop``
        does not give it again.
    """
    run = state.run_config
    if stop is None and run.get("stop_kind"):
        raise ConfigError(
            f"{state.path}: the experiment stopped trials with a {run['stop_kind']}, which is "
            "not saved; pass it again: Tuner.restore(path, trainable, stop=...)"
        )
    saved = dict(state.tune_config)
    kind = saved.pop("scheduler_kind", None)
    saved.pop("whole_config", None)  # restore_tuner's
    stopped = stop is not None or run.get("stop") or saved.get("time_budget_s")
    # An algorithm trains until stopped (a function trainable ends by itself).
    if scheduler is None and kind is not None and not stopped and state.kind == "algorithm":
        raise ConfigError(
            f"{state.path}: the experiment's trials were stopped by its {kind}, which is not "
            "saved; pass it again: Tuner.restore(path, trainable, scheduler=...) (or a stop "
            "criterion: stop=...)"
        )
    try:
        tune_config = TuneConfig(**saved, scheduler=scheduler)
        checkpoint = run.get("checkpoint_config")
        run_config = RunConfig(
            name=state.root.name,
            storage_path=str(state.root.parent),
            stop=stop if stop is not None else run.get("stop"),
            checkpoint_config=CheckpointConfig(**checkpoint) if checkpoint else None,
            verbose=run.get("verbose", 1),
            failure_config=FailureConfig(**failure)
            if (failure := run.get("failure_config"))
            else None,
        )
    except TypeError as e:
        raise ConfigError(f"{state.path}: tune_config or run_config holds {e}") from None
    return tune_config, run_config


__all__ = [
    "ERROR",
    "PENDING",
    "RUNNING",
    "STATE_FILE",
    "TERMINATED",
    "ExperimentState",
    "ResumeFlags",
    "ResumePoint",
    "TrialError",
    "check_trial_dir",
    "check_trial_files",
    "checkpoints_of",
    "load_result",
    "read_history",
    "restored_configs",
    "resume_point",
    "run_config_data",
    "start_over",
    "tune_config_data",
]
