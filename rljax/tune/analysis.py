"""What Tune's older ``tune.run`` returns: ``ExperimentAnalysis`` over a ``ResultGrid``, and
``TuneError`` for trials that raised. ``rljax.tune.tuner`` (where ``tune.run`` is) re-exports
both.
"""

from __future__ import annotations

from typing import Any

from rljax.tune.result_grid import Checkpoint, Result, ResultGrid, _pandas
from rljax.tune.stopper import flatten
from rljax.utils.errors import ConfigError


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

    def _metric_mode(self, metric: str | None, mode: str | None) -> tuple[str, str]:
        metric = metric if metric is not None else self.default_metric
        mode = mode if mode is not None else self.default_mode
        if metric is None or mode is None:
            raise ConfigError(
                f"metric={metric!r}, mode={mode!r}: name both, here or in tune.run(metric=..., "
                "mode=...)"
            )
        return metric, mode

    def get_best_checkpoint(
        self, trial: Result, metric: str | None = None, mode: str | None = None
    ) -> Checkpoint | None:
        """``trial``'s kept checkpoint with the best ``metric`` in the result of the
        iteration that saved it (Tune's ``get_best_checkpoint``; ``tune.run``'s metric and
        mode by default); None when the trial kept none."""
        return trial.get_best_checkpoint(*self._metric_mode(metric, mode))

    def get_last_checkpoint(
        self, trial: Result | None = None, metric: str | None = None, mode: str | None = None
    ) -> Checkpoint | None:
        """The newest checkpoint of ``trial`` (by default the best trial by ``metric`` and
        ``mode``'s last results), as Tune's ``get_last_checkpoint``."""
        if trial is None:
            trial = self.get_best_trial(metric, mode)
        return trial.checkpoint

    @property
    def best_checkpoint(self) -> Checkpoint | None:
        """The best trial's best checkpoint by ``tune.run``'s ``metric`` and ``mode`` (the
        checkpoint whose iteration scored best, not the newest), as Tune's."""
        return self.get_best_checkpoint(self.best_trial)

    def get_all_configs(self) -> dict[str, dict[str, Any]]:
        """Each trial's config, by trial directory (Tune's ``get_all_configs``)."""
        return {r.path: r.config for r in self.result_grid}

    @property
    def trial_dataframes(self) -> dict[str, Any]:
        """Each trial's results, a pandas DataFrame per trial directory (Tune's
        ``trial_dataframes``)."""
        return {r.path: r.metrics_dataframe for r in self.result_grid}

    @property
    def best_dataframe(self) -> Any:
        """The best trial's results as a pandas DataFrame (Tune's ``best_dataframe``)."""
        return self.best_trial.metrics_dataframe

    @property
    def best_result_df(self) -> Any:
        """The best trial's last result as a one-row pandas DataFrame (``/``-joined keys)."""
        return _pandas().DataFrame([flatten(self.best_result)])

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
