"""What Tune's older ``tune.run`` returns: ``ExperimentAnalysis`` over a ``ResultGrid``, and
``TuneError`` for trials that raised. ``rljax.tune.tuner`` (where ``tune.run`` is) re-exports
both.
"""

from __future__ import annotations

from typing import Any

from rljax.tune.result_grid import Checkpoint, Result, ResultGrid


class TuneError(RuntimeError):
    """``tune.run`` with ``raise_on_failed_trial=True``: some trials raised."""


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


__all__ = ["ExperimentAnalysis", "TuneError"]
