"""Stop criteria for trials, with Ray Tune's names: ``Stopper``, ``MaximumIterationStopper``.

``RunConfig(stop=...)`` takes a ``Stopper``, a function ``(trial_id, result) -> bool`` or a dict
of result keys (nested keys joined by ``/``) to thresholds; ``as_stopper`` turns each into a
``Stopper``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

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
                section = key.rpartition("/")[0]
                if section and not any(k.startswith(section + "/") for k in flat):
                    if key not in self._passed_over:
                        self._passed_over.add(key)
                        logger.warning(
                            "stop criterion %r: trial %s's result has no %r section; the "
                            "criterion is checked on the results that have it",
                            key,
                            trial_id,
                            section,
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
    "DictStopper",
    "FunctionStopper",
    "MaximumIterationStopper",
    "Stopper",
    "as_stopper",
    "flatten",
]
