"""The interface every trial scheduler implements (Tune's ``TrialScheduler``) and the argument
checks the schedulers share. Kept apart from ``schedulers`` so that ``pbt`` and ``schedulers``
both build on it without importing each other."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rljax.tune._optuna import MetricUser
from rljax.utils.errors import ConfigError


def _check_int(owner: str, name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{owner}({name}={value!r}): use an int >= {minimum}")


def _check_number(owner: str, name: str, value: Any, minimum: float) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < minimum
    ):
        raise ConfigError(f"{owner}({name}={value!r}): use a number >= {minimum}")


def _check_time_attr(owner: str, time_attr: Any) -> None:
    if not isinstance(time_attr, str) or not time_attr:
        raise ConfigError(
            f"{owner}(time_attr={time_attr!r}): use a result key that grows as a trial trains "
            "('training_iteration', 'time_total_s', ...)"
        )


class TrialScheduler(MetricUser):
    """What a trial scheduler does for ``Tuner`` (Tune's ``TrialScheduler`` interface).

    ``on_trial_add(trial_id)`` when a trial starts; ``on_trial_result(trial_id, result)`` for
    each result, answering ``CONTINUE`` or ``STOP``; ``on_trial_complete(trial_id, result)``
    when a trial ends (its last result), ``on_trial_error(trial_id)`` when it raised.
    """

    CONTINUE = "CONTINUE"
    PAUSE = "PAUSE"
    STOP = "STOP"
    NOOP = "NOOP"

    #: Whether decisions read a metric (so ``metric`` and ``mode`` must be known).
    needs_metric = True

    @property
    def stops_every_trial(self) -> bool:
        """Whether every trial stops by this scheduler's rule at the latest (a ``max_t``)."""
        return False

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        """Takes ``TuneConfig``'s metric and mode where the scheduler has none. Returns True
        (Tune's signature); raises ``ConfigError`` for a conflict or, when the scheduler reads
        a metric, for a metric or mode missing from both."""
        self._take_metric_mode(metric, mode)
        if self.needs_metric:
            self._require_metric_mode()
        return True

    def on_trial_add(self, trial_id: str) -> None:
        """A trial starts."""

    def on_trial_result(self, trial_id: str, result: Mapping[str, Any]) -> str:
        """A result of a running trial: ``CONTINUE`` or ``STOP``."""
        return self.CONTINUE

    def on_trial_complete(self, trial_id: str, result: Mapping[str, Any] | None = None) -> None:
        """A trial ended (finished, or stopped by a stop criterion or this scheduler)."""

    def on_trial_error(self, trial_id: str) -> None:
        """A trial raised."""

    def on_trial_remove(self, trial_id: str) -> None:
        """A trial is dropped without completing."""
        self.on_trial_error(trial_id)
