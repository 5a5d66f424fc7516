"""What the search algorithms and the trial schedulers share: the optional Optuna import, quiet
in-memory studies, and reading a metric (``metric``/``mode`` given to the object or by
``TuneConfig``) from a result."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from rljax.tune.result_grid import check_mode
from rljax.tune.stopper import flatten
from rljax.utils.errors import ConfigError


def import_optuna() -> Any:
    """The ``optuna`` module.

    Raises:
      ImportError: Optuna is not installed; the message says how to install it.
    """
    try:
        return importlib.import_module("optuna")
    except ImportError:
        raise ImportError(
            "rljax.tune's search algorithms and trial schedulers run on Optuna, which rljax does "
            "not depend on: pip install optuna (or pip install 'rljax[tune]')"
        ) from None


@contextlib.contextmanager
def quiet_optuna() -> Iterator[Any]:
    """Optuna with its INFO lines (a study created, a trial finished) silenced for the block;
    rljax's ``Tuner`` prints its own lines. Yields the ``optuna`` module."""
    optuna = import_optuna()
    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield optuna
    finally:
        optuna.logging.set_verbosity(before)


class MetricUser:
    """An object that reads one metric from results, to be maximized or minimized.

    ``metric``: a result key (``/`` for nested keys); ``mode``: ``"min"`` or ``"max"``. Either
    may be left None and come from ``TuneConfig`` through ``set_search_properties``.
    """

    def __init__(self, metric: str | None, mode: str | None):
        name = type(self).__name__
        if metric is not None and not isinstance(metric, str):
            raise ConfigError(f"{name}(metric={metric!r}): use a result key (a string)")
        if mode is not None and mode not in ("min", "max"):
            raise ConfigError(f"{name}(mode={mode!r}): use 'min' or 'max'")
        self._metric = metric
        self._mode = mode

    @property
    def metric(self) -> str | None:
        return self._metric

    @property
    def mode(self) -> str | None:
        return self._mode

    def _take_metric_mode(self, metric: str | None, mode: str | None) -> None:
        """Fills ``metric``/``mode`` from ``TuneConfig``'s; refuses a conflicting value."""
        name = type(self).__name__
        for what, own, given in (("metric", self._metric, metric), ("mode", self._mode, mode)):
            if own is not None and given is not None and own != given:
                raise ConfigError(
                    f"{name}({what}={own!r}) and TuneConfig({what}={given!r}) differ; give "
                    f"{what} in one place"
                )
        if metric is not None and not isinstance(metric, str):
            raise ConfigError(f"TuneConfig.metric={metric!r}: use a result key (a string)")
        check_mode(mode, "TuneConfig.mode")
        self._metric = self._metric if self._metric is not None else metric
        self._mode = self._mode if self._mode is not None else mode

    def _require_metric_mode(self) -> tuple[str, str]:
        """``(metric, mode)``; ``ConfigError`` naming what is missing when either is None."""
        missing = [w for w, v in (("metric", self._metric), ("mode", self._mode)) if v is None]
        if missing:
            name = type(self).__name__
            raise ConfigError(
                f"{name} needs a {' and a '.join(missing)} (metric: the result key to compare, "
                f"mode: 'min' or 'max'); got metric={self._metric!r}, mode={self._mode!r}: pass "
                f"them to {name}(...) or to tune.TuneConfig(...)"
            )
        assert self._metric is not None and self._mode is not None
        return self._metric, self._mode

    def _read(self, trial_id: str, result: Mapping[str, Any], key: str) -> float:
        """``result[key]`` (nested keys joined by ``/``) as a float.

        Raises:
          ConfigError: the key is missing or its value is not a number (a misspelt metric
            would otherwise never stop a trial or guide a search).
        """
        flat = flatten(result)
        if key not in flat:
            raise ConfigError(
                f"{type(self).__name__} reads {key!r}, which is not in trial {trial_id}'s "
                f"result; its keys are {sorted(flat)}"
            )
        value = flat[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"{type(self).__name__} reads {key!r}: trial {trial_id} reported {value!r}, "
                    "not a number"
                ) from None
        return float(value)


__all__ = ["MetricUser", "import_optuna", "quiet_optuna"]
