"""What ``Tuner.fit()`` returns, with Ray Tune's names: ``ResultGrid``, ``Result``, ``Checkpoint``."""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rljax.tune.stopper import flatten
from rljax.utils import safe_io
from rljax.utils.errors import ConfigError

_METADATA_FILE = ".metadata.json"  # Tune's name for a checkpoint's metadata
_METADATA_MAX_BYTES = 1 << 20

_SCOPES = ("last", "avg", "last-5-avg", "last-10-avg", "all")


def check_mode(mode: Any, where: str = "mode") -> None:
    if mode is not None and mode not in ("min", "max"):
        raise ConfigError(f"{where}={mode!r}: use 'min' or 'max'")


def _pandas() -> Any:
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise ImportError(
            "get_dataframe() and metrics_dataframe need pandas, which rljax does not depend on: "
            "pip install pandas"
        ) from None


class Checkpoint:
    """A checkpoint directory (Tune's ``Checkpoint``); ``checkpoint.path`` is its path as a
    string, as Ray's (``Path(checkpoint.path)`` for path operations), and
    ``os.fspath(checkpoint)`` the same.

    An algorithm trial's checkpoint loads with ``Algorithm.from_checkpoint(checkpoint.path)``.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path: str = os.fspath(path)

    @classmethod
    def from_directory(cls, path: str | os.PathLike[str]) -> Checkpoint:
        """The checkpoint in directory ``path`` (Tune's ``Checkpoint.from_directory``)."""
        return cls(path)

    @contextlib.contextmanager
    def as_directory(self) -> Iterator[str]:
        """``with checkpoint.as_directory() as d:`` the checkpoint's local directory (Tune's
        ``as_directory``; the directory itself, not a copy: read, do not change it)."""
        yield str(self.path)

    def to_directory(self, path: str | os.PathLike[str] | None = None) -> str:
        """Copies the checkpoint's files into ``path`` (a new temporary directory by
        default; an existing one takes them beside its own) and returns it (Tune's
        ``to_directory``)."""
        target = Path(tempfile.mkdtemp(prefix="checkpoint_")) if path is None else Path(path)
        shutil.copytree(self.path, target, dirs_exist_ok=True, symlinks=True)
        return str(target)

    def get_metadata(self) -> dict[str, Any]:
        """The metadata saved with ``set_metadata`` / ``update_metadata`` (Tune's, in
        ``.metadata.json`` of the directory); {} when there is none."""
        file = Path(self.path, _METADATA_FILE)
        if not file.exists():
            return {}
        data = safe_io.read_json(file, None, _METADATA_MAX_BYTES, ConfigError)
        if not isinstance(data, dict):
            raise ConfigError(f"{file}: the checkpoint's metadata is not a JSON object")
        return data

    def set_metadata(self, metadata: dict[str, Any]) -> None:
        """Replaces the checkpoint's metadata with ``metadata`` (JSON data), written
        atomically."""
        if not isinstance(metadata, dict):
            raise ConfigError(f"set_metadata({metadata!r}): give a dict of JSON data")
        try:
            text = json.dumps(metadata)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"set_metadata: not JSON data ({e})") from None
        safe_io.write_atomic(Path(self.path, _METADATA_FILE), text)

    def update_metadata(self, metadata: dict[str, Any]) -> None:
        """Adds ``metadata``'s keys to the checkpoint's metadata."""
        self.set_metadata({**self.get_metadata(), **metadata})

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"Checkpoint(path={self.path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Checkpoint) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)


def checkpoint_results(
    paths: Sequence[str | os.PathLike[str]], history: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The result of the iteration that saved each checkpoint directory of ``paths`` ({} where
    ``history`` has none): ``checkpoint_NNNNNN`` is numbered by its iteration, as
    ``int(training_iteration)``; a later result of an iteration wins."""
    by_iteration = {}
    for r in history:
        try:
            by_iteration[int(r["training_iteration"])] = r
        except (KeyError, TypeError, ValueError):
            continue
    return [by_iteration.get(int(Path(p).name.rsplit("_", 1)[-1]), {}) for p in paths]


@dataclass
class Result:
    """One trial's outcome.

    Attributes:
      config: The trial's config: its ``param_space`` with every search space drawn (a
        config object's as ``to_dict()`` writes it, every setting, as Tune's).
      metrics: The trial's last result, nested as reported, with ``trial_id``,
        ``training_iteration``, ``time_total_s`` ... filled in, ``config`` (the trial's config,
        as Tune adds it), and ``done`` True when the trial ended without error. ``flatten(result.metrics)`` gives Tune's ``/``-joined keys.
      path: The trial's directory (``params.json``, ``result.json``, ``progress.csv``).
      error: The exception the trial raised, or None.
      checkpoint: The trial's latest checkpoint, or None when none was saved.
      history: Every result the trial reported, in order.

    ``best_checkpoints`` lists the checkpoints still on disk with their iterations' results.
    """

    config: dict[str, Any]
    metrics: dict[str, Any]
    path: str
    error: BaseException | None = None
    checkpoint: Checkpoint | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    trial_id: str = ""
    # The trial's checkpoints still on disk, oldest first (``best_checkpoints``).
    _kept: list[Checkpoint] = field(default_factory=list, repr=False)

    @property
    def best_checkpoints(self) -> list[tuple[Checkpoint, dict[str, Any]]]:
        """The trial's checkpoints still on disk, oldest first, each with the result of the
        iteration that saved it (Tune's ``best_checkpoints``): those ``CheckpointConfig``'s
        ``num_to_keep`` and ``checkpoint_score_attribute`` kept (for the results ``fit()`` and
        ``get_results()`` give, ``checkpoint`` is the last of them). A checkpoint directory
        is numbered by its iteration as ``int(training_iteration)``, so its result is found
        the same way."""
        results = checkpoint_results([c.path for c in self._kept], self.history)
        return [(c, dict(r)) for c, r in zip(self._kept, results, strict=True)]

    def get_best_checkpoint(self, metric: str, mode: str) -> Checkpoint | None:
        """The kept checkpoint whose iteration's result has the best ``metric`` (a result
        key, ``/``-joined for a nested one; ``mode`` "max" or "min"), as Tune's
        ``Result.get_best_checkpoint``; None when the trial kept no checkpoint.

        Raises:
          ConfigError: ``mode`` is neither, or no kept checkpoint's result has ``metric``.
        """
        if mode not in ("max", "min"):
            raise ConfigError(f"get_best_checkpoint(mode={mode!r}): use 'max' or 'min'")
        kept = self.best_checkpoints
        if not kept:
            return None
        scored = []
        for checkpoint, result in kept:
            value = flatten(result).get(metric)
            if isinstance(value, (int, float)) and value == value:  # not NaN
                scored.append((float(value), checkpoint))
        if not scored:
            raise ConfigError(
                f"get_best_checkpoint({metric!r}): none of trial {self.trial_id}'s "
                f"{len(kept)} checkpoints has that metric in its result"
            )
        pick = max if mode == "max" else min
        return pick(scored, key=lambda pair: pair[0])[1]

    @property
    def last_result(self) -> dict[str, Any]:
        """The trial's last result (Tune's ``Trial.last_result``): ``metrics``."""
        return self.metrics

    @property
    def metrics_dataframe(self) -> Any:
        """Every reported result as a row of a pandas DataFrame (flattened ``/`` keys)."""
        return _pandas().DataFrame([flatten(r) for r in self.history])

    def _score(self, metric: str, scope: str, mode: str) -> float | None:
        """The trial's value of ``metric`` under ``scope`` (None: it never reported it)."""
        values = []
        for r in self.history:
            flat = flatten(r)
            if metric in flat:
                try:
                    values.append(float(flat[metric]))
                except (TypeError, ValueError):
                    raise ConfigError(
                        f"metric {metric!r}: trial {self.trial_id} reported {flat[metric]!r}, "
                        "not a number"
                    ) from None
        if not values:
            return None
        if scope == "all":  # the best value ever
            return max(values) if mode == "max" else min(values)
        chosen = {"last": values[-1:], "avg": values, "last-5-avg": values[-5:]}.get(
            scope, values[-10:]
        )
        return sum(chosen) / len(chosen)


class ResultGrid(Sequence[Result]):
    """The trials' results, in the order the trials ran (Tune's ``ResultGrid``)."""

    def __init__(
        self,
        results: list[Result],
        experiment_path: str,
        metric: str | None = None,
        mode: str | None = None,
    ):
        self._results = list(results)
        self.experiment_path = experiment_path
        self._metric, self._mode = metric, mode

    def __len__(self) -> int:
        return len(self._results)

    def __iter__(self) -> Iterator[Result]:
        return iter(self._results)

    def __getitem__(self, i: Any) -> Any:
        return self._results[i]

    def __repr__(self) -> str:
        return (
            f"ResultGrid({len(self)} trials, {self.num_terminated} terminated, "
            f"{self.num_errors} errors, experiment_path={self.experiment_path!r})"
        )

    @property
    def errors(self) -> list[BaseException]:
        """The exceptions of the trials that raised."""
        return [r.error for r in self._results if r.error is not None]

    @property
    def num_errors(self) -> int:
        return len(self.errors)

    @property
    def num_terminated(self) -> int:
        """Trials that ended without error (stopped by a criterion or returned)."""
        return sum(r.error is None for r in self._results)

    def get_best_result(
        self,
        metric: str | None = None,
        mode: str | None = None,
        scope: str = "last",
        filter_nan_and_inf: bool = True,
    ) -> Result:
        """The trial with the best ``metric`` (a ``/``-joined result key).

        With one trial, that trial (as Tune does, with no metric needed).
        ``metric``/``mode`` default to ``TuneConfig``'s. ``scope``, as Tune's: ``"last"`` (each
        trial's last value), ``"avg"`` (its mean), ``"last-5-avg"``, ``"last-10-avg"``, ``"all"``
        (its best value ever). Trials whose value is NaN or infinite are skipped unless
        ``filter_nan_and_inf`` is False.

        Raises:
          ConfigError: (with two trials or more) no metric or mode given here or in
            ``TuneConfig``, ``mode`` not ``"min"``/``"max"``, an unknown scope, or no trial
            reported ``metric`` (the message lists the keys they reported).
        """
        if len(self._results) == 1:  # Tune's rule: the only trial, whatever the metric
            return self._results[0]
        metric = metric if metric is not None else self._metric
        mode = mode if mode is not None else self._mode
        if metric is None or mode is None:
            raise ConfigError(
                "get_best_result() needs a metric and a mode: pass them "
                "(get_best_result(metric='env_runners/episode_return_mean', mode='max')) or set "
                "them in tune.TuneConfig(metric=..., mode=...)"
            )
        check_mode(mode)
        if scope not in _SCOPES:
            raise ConfigError(f"scope={scope!r}: use one of {list(_SCOPES)}")
        best: Result | None = None
        best_value = 0.0
        seen: set[str] = set()
        for r in self._results:
            for h in r.history:
                seen.update(flatten(h))
            value = r._score(metric, scope, mode)
            if value is None:
                continue
            if filter_nan_and_inf and not math.isfinite(value):
                continue
            if best is None or (value > best_value if mode == "max" else value < best_value):
                best, best_value = r, value
        if best is None:
            if not any(metric in flatten(h) for r in self._results for h in r.history):
                errors = [r.error for r in self._results if r.error is not None]
                if errors and not seen:  # nothing reported: say why rather than what is missing
                    first = errors[0]
                    raise ConfigError(
                        f"no best trial for {metric!r}: {len(errors)} of {len(self._results)} "
                        f"trials failed before reporting a result; the first: "
                        f"{type(first).__name__}: {first}"
                    )
                raise ConfigError(
                    f"metric {metric!r} is in no trial's results; they reported {sorted(seen)}"
                )
            raise ConfigError(f"metric {metric!r}: every trial's value is NaN or infinite")
        return best

    def get_dataframe(
        self, filter_metric: str | None = None, filter_mode: str | None = None
    ) -> Any:
        """One row per trial (pandas DataFrame): its last result, flattened with ``/``, its
        config as ``config/...`` columns, and ``logdir``. With ``filter_metric`` and
        ``filter_mode``, each trial's row is its best result for that metric instead.

        Raises:
          ImportError: pandas is not installed (rljax does not depend on it).
        """
        pandas = _pandas()
        check_mode(filter_mode, "filter_mode")
        if (filter_metric is None) != (filter_mode is None):
            raise ConfigError(
                "get_dataframe(): pass both filter_metric and filter_mode, or neither"
            )
        rows = []
        for r in self._results:
            row_source = r.metrics
            if filter_metric is not None:
                scored = [
                    (float(flatten(h)[filter_metric]), h)
                    for h in r.history
                    if filter_metric in flatten(h)
                ]
                if scored:
                    pick = max if filter_mode == "max" else min
                    row_source = pick(scored, key=lambda s: s[0])[1]
            row = flatten(row_source)
            row.update(flatten(r.config, "config/"))
            row["logdir"] = r.path
            rows.append(row)
        return pandas.DataFrame(rows)


__all__ = ["Checkpoint", "Result", "ResultGrid", "check_mode"]
