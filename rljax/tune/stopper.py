"""Stop criteria for trials, with Ray Tune's names: ``Stopper``, ``MaximumIterationStopper``,
``CombinedStopper``, ``TimeoutStopper``, ``TrialPlateauStopper``, ``ExperimentPlateauStopper``.

``RunConfig(stop=...)`` takes a ``Stopper``, a function ``(trial_id, result) -> bool`` or a dict
of result keys (nested keys joined by ``/``) to thresholds; ``as_stopper`` turns each into a
``Stopper``.
"""

from __future__ import annotations

import collections
import datetime
import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rljax.utils.errors import ConfigError
from rljax.utils.result_loggers import flatten_result

logger = logging.getLogger("rljax")

# Nested dicts as one level, keys joined by ``/`` (Tune's delimiter); other values kept.
flatten = flatten_result


class Stopper:
    """Decides when a trial, or the whole experiment, stops (subclass it, as in Tune).

    ``__call__(trial_id, result)`` is asked after each result of a trial: True stops that trial.
    ``stop_all()`` is asked after each result too: True stops the running trial and starts no
    more.
    """

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must define __call__(trial_id, result)")

    def stop_all(self) -> bool:
        return False


class MaximumIterationStopper(Stopper):
    """Stops each trial once its ``training_iteration`` reaches ``max_iter``."""

    def __init__(self, max_iter: int):
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ConfigError(f"MaximumIterationStopper(max_iter={max_iter!r}): use an int >= 1")
        self._max_iter = max_iter

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return int(result.get("training_iteration", 0)) >= self._max_iter


class FunctionStopper(Stopper):
    """A function ``(trial_id, result) -> bool`` as a ``Stopper``."""

    def __init__(self, function: Callable[[str, dict[str, Any]], bool]):
        self._function = function

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return bool(self._function(trial_id, result))


def section_absent(key: str, flat: Mapping[str, Any]) -> bool:
    """Whether the flattened result ``flat`` lacks ``key``'s whole section (``evaluation/...``
    between evaluations): such a key is passed over for that result, while a key missing from
    a section the result has is a misspelling."""
    section = key.rpartition("/")[0]
    return bool(section) and not any(k.startswith(section + "/") for k in flat)


class DictStopper(Stopper):
    """Stops a trial when any of the given result keys reaches its threshold (``>=``).

    Keys name nested results with ``/`` (``"env_runners/episode_return_mean"``). A key whose
    section is missing from a result is passed over for that result, as Ray Tune passes over a
    missing key (``evaluation/...`` comes only every ``evaluation_interval`` iterations; a
    warning says so once). A key missing from a section the result has is a misspelling, which
    would never stop the trial: ``__call__`` raises ``ConfigError`` naming the key and the
    keys the result has.
    """

    def __init__(self, criteria: Mapping[str, Any]):
        for key, value in criteria.items():
            if not isinstance(key, str):
                raise ConfigError(f"stop={dict(criteria)!r}: keys must be strings, got {key!r}")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"stop[{key!r}]={value!r}: use a number (a trial stops at >=)")
        self.criteria = dict(criteria)
        self._passed_over: set[str] = set()

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        flat = flatten(result)
        for key, threshold in self.criteria.items():
            if key not in flat:
                if section_absent(key, flat):
                    if key not in self._passed_over:
                        self._passed_over.add(key)
                        logger.warning(
                            "stop criterion %r: trial %s's result has no %r section; the "
                            "criterion is checked on the results that have it",
                            key,
                            trial_id,
                            key.rpartition("/")[0],
                        )
                    continue
                raise ConfigError(
                    f"stop criterion {key!r} is not in trial {trial_id}'s results; its keys are "
                    f"{sorted(flat)}"
                )
            value = flat[key]
            try:
                if float(value) >= threshold:
                    return True
            except (TypeError, ValueError):
                raise ConfigError(
                    f"stop criterion {key!r}: trial {trial_id} reported {value!r}, not a number"
                ) from None
        return False


def _number(owner: str, name: str, value: Any, low: float, integer: bool = False) -> Any:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not value >= low:
        kind = "an int" if integer else "a number"
        raise ConfigError(f"{owner}({name}={value!r}): use {kind} >= {low:g}")
    return value


def metric_value(owner: str, metric: str, trial_id: str, result: dict[str, Any]) -> float | None:
    """``metric``'s value in ``result``; None when the result lacks its whole section (an
    ``evaluation/...`` key between evaluations), as ``DictStopper`` passes over it."""
    flat = flatten(result)
    if metric not in flat:
        if section_absent(metric, flat):
            return None
        raise ConfigError(
            f"{owner}: metric {metric!r} is not in trial {trial_id}'s results; its keys are "
            f"{sorted(flat)}"
        )
    try:
        return float(flat[metric])
    except (TypeError, ValueError):
        raise ConfigError(
            f"{owner}: trial {trial_id} reported {metric!r} = {flat[metric]!r}, not a number"
        ) from None


class CombinedStopper(Stopper):
    """Several stoppers as one (Tune's ``CombinedStopper``): a trial stops when any of them
    says so, and the experiment when any one's ``stop_all()`` does. Each is asked every
    result."""

    def __init__(self, *stoppers: Stopper):
        for s in stoppers:
            if not isinstance(s, Stopper):
                raise ConfigError(f"CombinedStopper({s!r}): give tune.Stopper instances")
        self._stoppers = stoppers

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return any([s(trial_id, result) for s in self._stoppers])  # noqa: C419 - ask each

    def stop_all(self) -> bool:
        return any([s.stop_all() for s in self._stoppers])  # noqa: C419


class TimeoutStopper(Stopper):
    """Stops the experiment ``timeout`` seconds (a number or a ``datetime.timedelta``)
    after it was made (Tune's ``TimeoutStopper``): the running trials stop after their
    current result, and no more start."""

    def __init__(self, timeout: float | datetime.timedelta):
        if isinstance(timeout, datetime.timedelta):
            timeout = timeout.total_seconds()
        self._timeout_s = float(_number("TimeoutStopper", "timeout", timeout, 0))
        self._start = time.monotonic()

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return False

    def stop_all(self) -> bool:
        return time.monotonic() - self._start >= self._timeout_s


class TrialPlateauStopper(Stopper):
    """Stops a trial whose ``metric`` has plateaued (Tune's ``TrialPlateauStopper``): after
    at least ``grace_period`` results, once the standard deviation of its last
    ``num_results`` values is below ``std``; with ``metric_threshold``, only while the value
    is at least that good (``mode`` "max": >=, "min": <=).

    Raises:
      ConfigError: a bad setting (``metric_threshold`` needs ``mode``), or a result without
        ``metric`` (a misspelling would never stop the trial).
    """

    def __init__(
        self,
        metric: str,
        std: float = 0.01,
        num_results: int = 4,
        grace_period: int = 4,
        metric_threshold: float | None = None,
        mode: str | None = None,
    ):
        if not isinstance(metric, str) or not metric:
            raise ConfigError(f"TrialPlateauStopper(metric={metric!r}): use a result key")
        self._metric = metric
        self._std = float(_number("TrialPlateauStopper", "std", std, 0))
        self._num_results = _number("TrialPlateauStopper", "num_results", num_results, 1, True)
        self._grace_period = _number("TrialPlateauStopper", "grace_period", grace_period, 0, True)
        if mode not in (None, "max", "min"):
            raise ConfigError(f"TrialPlateauStopper(mode={mode!r}): use 'max', 'min' or None")
        if metric_threshold is not None:
            if mode is None:
                raise ConfigError(
                    "TrialPlateauStopper(metric_threshold=...) needs mode='max' or 'min'"
                )
            _number("TrialPlateauStopper", "metric_threshold", metric_threshold, -math.inf)
        self._threshold, self._mode = metric_threshold, mode
        self._values: dict[str, collections.deque[float]] = collections.defaultdict(
            lambda: collections.deque(maxlen=self._num_results)
        )
        self._results: dict[str, int] = collections.defaultdict(int)

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        value = metric_value("TrialPlateauStopper", self._metric, trial_id, result)
        if value is None:
            return False
        values = self._values[trial_id]
        values.append(value)
        self._results[trial_id] += 1
        if self._results[trial_id] < self._grace_period or len(values) < self._num_results:
            return False
        if self._threshold is not None and (
            value < self._threshold if self._mode == "max" else value > self._threshold
        ):
            return False
        return float(np.std(values)) < self._std


class ExperimentPlateauStopper(Stopper):
    """Stops the experiment once the best ``top`` values of ``metric`` over all trials'
    results (``mode`` "max" or "min") have had a standard deviation of at most ``std`` for
    ``patience`` results in a row (Tune's ``ExperimentPlateauStopper``)."""

    def __init__(self, metric: str, std: float = 0.001, top: int = 10, mode: str = "min",
                 patience: int = 0):  # fmt: skip
        if not isinstance(metric, str) or not metric:
            raise ConfigError(f"ExperimentPlateauStopper(metric={metric!r}): use a result key")
        if mode not in ("max", "min"):
            raise ConfigError(f"ExperimentPlateauStopper(mode={mode!r}): use 'max' or 'min'")
        self._metric, self._mode = metric, mode
        self._std = float(_number("ExperimentPlateauStopper", "std", std, 0))
        self._top = _number("ExperimentPlateauStopper", "top", top, 1, True)
        self._patience = _number("ExperimentPlateauStopper", "patience", patience, 0, True)
        self._best: list[float] = []
        self._plateau_results = 0

    def _has_plateaued(self) -> bool:
        return len(self._best) == self._top and float(np.std(self._best)) <= self._std

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        value = metric_value("ExperimentPlateauStopper", self._metric, trial_id, result)
        if value is None:
            return self.stop_all()
        ranked = sorted([*self._best, value])
        self._best = ranked[: self._top] if self._mode == "min" else ranked[-self._top :]
        self._plateau_results = self._plateau_results + 1 if self._has_plateaued() else 0
        return self.stop_all()

    def stop_all(self) -> bool:
        return self._has_plateaued() and self._plateau_results >= self._patience


def as_stopper(stop: Any) -> Stopper | None:
    """``RunConfig.stop`` as a ``Stopper`` (None stays None).

    Raises:
      ConfigError: ``stop`` is none of a dict, a function or a ``Stopper``.
    """
    if stop is None:
        return None
    if isinstance(stop, Stopper):
        return stop
    if isinstance(stop, Mapping):
        return DictStopper(stop) if stop else None
    if callable(stop):
        return FunctionStopper(stop)
    raise ConfigError(
        f"stop={stop!r}: use a dict of result keys to thresholds, a function "
        "(trial_id, result) -> bool, or a tune.Stopper"
    )


__all__ = [
    "CombinedStopper",
    "DictStopper",
    "ExperimentPlateauStopper",
    "FunctionStopper",
    "MaximumIterationStopper",
    "Stopper",
    "TimeoutStopper",
    "TrialPlateauStopper",
    "as_stopper",
    "metric_value",
    "flatten",
]
