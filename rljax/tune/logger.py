"""Tune's logger callbacks: ``LoggerCallback`` and ``TBXLoggerCallback`` (TensorBoard event
files), given as ``RunConfig(callbacks=[tune.logger.TBXLoggerCallback()])``.

The CSV and JSON files of Tune's ``CSVLoggerCallback`` and ``JsonLoggerCallback``
(``progress.csv``, ``result.json``) are written for every trial without a callback.
"""

from __future__ import annotations

import math
from typing import Any

from rljax.tune.callback import Callback
from rljax.tune.stopper import flatten
from rljax.utils.tensorboard import EventFileWriter


class LoggerCallback(Callback):
    """Tune's base of the logger callbacks: ``log_trial_start(trial)``,
    ``log_trial_result(iteration, trial, result)`` and ``log_trial_end(trial, failed)``."""

    def log_trial_start(self, trial: Any) -> None:
        """A trial starts."""

    def log_trial_result(self, iteration: int, trial: Any, result: dict[str, Any]) -> None:
        """A trial reported ``result``."""

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        """A trial ended."""

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.log_trial_start(trial)

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        self.log_trial_result(iteration, trial, result)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.log_trial_end(trial, failed=False)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.log_trial_end(trial, failed=True)


def numeric_leaves(result: dict[str, Any]) -> dict[str, float]:
    """Every finite number of a (nested) result, by its ``/``-joined key; booleans, strings,
    NaN and infinities are left out."""
    out = {}
    for key, value in flatten(result).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value):
            out[key] = float(value)
    return out


class TBXLoggerCallback(LoggerCallback):
    """TensorBoard event files in each trial's directory: every finite number of each result,
    tagged with its ``/``-joined key (``env_runners/episode_return_mean``), at the step
    ``num_env_steps_sampled_lifetime`` where the result has it, else ``training_iteration``.
    Needs neither TensorFlow nor TensorBoard (``rljax.utils.tensorboard``); ``tensorboard
    --logdir <storage_path>/<name>`` shows every trial."""

    def __init__(self) -> None:
        self._writers: dict[str, EventFileWriter] = {}

    def log_trial_start(self, trial: Any) -> None:
        if trial.trial_id not in self._writers:
            self._writers[trial.trial_id] = EventFileWriter(trial.local_path)

    def log_trial_result(self, iteration: int, trial: Any, result: dict[str, Any]) -> None:
        self.log_trial_start(trial)
        scalars = numeric_leaves(result)
        step = scalars.get("num_env_steps_sampled_lifetime", scalars.get("training_iteration", 0))
        self._writers[trial.trial_id].add_scalars(int(step), scalars)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        writer = self._writers.pop(trial.trial_id, None)
        if writer is not None:
            writer.close()

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


__all__ = ["LoggerCallback", "TBXLoggerCallback", "numeric_leaves"]
