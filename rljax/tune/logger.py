"""Tune's logger callbacks, given as ``RunConfig(callbacks=[...])``: ``TBXLoggerCallback``
(TensorBoard event files), ``WandbLoggerCallback`` (Weights & Biases), ``CSVLoggerCallback`` and
``JsonLoggerCallback``, and their base ``LoggerCallback``.

As in Tune, the CSV and JSON files (``progress.csv``, ``result.json``) are written for every
trial by default; passing their callbacks is accepted and writes them once, not twice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import yaml

from rljax.tune.callback import Callback
from rljax.utils.result_loggers import (
    TensorBoardLogger,
    WandbLogger,
    import_wandb,
    numeric_leaves,
    to_json_data,
)


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


class TBXLoggerCallback(LoggerCallback):
    """TensorBoard event files in each trial's directory: every finite number of each result,
    tagged with its ``/``-joined key (``env_runners/episode_return_mean``), at the step
    ``num_env_steps_sampled_lifetime`` where the result has it, else ``training_iteration``.
    Needs neither TensorFlow nor TensorBoard (``rljax.utils.tensorboard``); ``tensorboard
    --logdir <storage_path>/<name>`` shows every trial."""

    def __init__(self) -> None:
        self._writers: dict[str, Any] = {}

    def _open(self, trial: Any) -> Any:
        return TensorBoardLogger(trial.local_path)

    def log_trial_start(self, trial: Any) -> None:
        if trial.trial_id not in self._writers:
            self._writers[trial.trial_id] = self._open(trial)

    def log_trial_result(self, iteration: int, trial: Any, result: dict[str, Any]) -> None:
        self.log_trial_start(trial)
        self._writers[trial.trial_id].log(result)

    def log_trial_end(self, trial: Any, failed: bool = False) -> None:
        writer = self._writers.pop(trial.trial_id, None)
        if writer is not None:
            writer.close()

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


class WandbLoggerCallback(TBXLoggerCallback):
    """One Weights & Biases run per trial (Tune's ``WandbLoggerCallback``): the trial's config,
    then every finite number of each result at its env step; the run is named after the trial
    and grouped by ``group`` (default: the experiment's directory name).

    Args:
      project: The W&B project.
      group: The runs' group.
      api_key_file, api_key: Credentials, set as ``WANDB_API_KEY`` (else W&B's own login).
      excludes: Result keys (``/``-joined) not to log.
      log_config: Log the trial's config.
      mode: ``"online"``, ``"offline"`` (no account or network needed) or ``"disabled"``;
        None: W&B's own choice (``WANDB_MODE``).
      **kwargs: Accepted for Tune's other ``wandb.init`` options; not used.
    """

    def __init__(
        self,
        project: str | None = None,
        group: str | None = None,
        api_key_file: str | None = None,
        api_key: str | None = None,
        excludes: list[str] | None = None,
        log_config: bool = True,
        upload_checkpoints: bool = False,
        mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        import_wandb()  # fails here, naming the package, not at the first trial
        if api_key_file:
            with open(os.path.expanduser(api_key_file)) as f:
                api_key = f.read().strip()
        if api_key:
            os.environ["WANDB_API_KEY"] = api_key
        self.project = project or "rljax"
        self.group = group
        self.excludes = set(excludes or ())
        self.log_config = log_config
        self.mode = mode

    def _open(self, trial: Any) -> Any:
        path = os.path.normpath(trial.local_path)
        return WandbLogger(
            self.project,
            path,
            config=trial.config if self.log_config else None,
            name=trial.trial_id,
            group=self.group or os.path.basename(os.path.dirname(path)),
            mode=self.mode,
        )

    def log_trial_result(self, iteration: int, trial: Any, result: dict[str, Any]) -> None:
        if self.excludes:
            kept = {k: v for k, v in numeric_leaves(result).items() if k not in self.excludes}
            result = dict(kept)
        super().log_trial_result(iteration, trial, result)


class CSVLoggerCallback(LoggerCallback):
    """Tune's ``progress.csv`` writer: the Tuner writes it for every trial (as Tune adds this
    callback by default), so passing it changes nothing."""


class JsonLoggerCallback(LoggerCallback):
    """Tune's ``result.json`` writer: the Tuner writes it for every trial (as Tune adds this
    callback by default), so passing it changes nothing."""


def pretty_print(result: Mapping[str, Any], exclude: set[str] | None = None) -> str:
    """A result dict as indented YAML, the way Ray Tune's ``pretty_print`` shows it:
    ``config`` and ``hist_stats`` are left out, as are the top-level keys in ``exclude`` and
    keys whose value is None.

    Example:
        ```python
        from rljax.tune.logger import pretty_print

        print(pretty_print(algo.train()))
        ```
    """
    out = {
        k: v
        for k, v in result.items()
        if k not in ("config", "hist_stats") and v is not None and k not in (exclude or ())
    }
    # One JSON round trip as Ray's does: numpy and JAX values as numbers and lists.
    return yaml.safe_dump(to_json_data(out), default_flow_style=False)


__all__ = [
    "CSVLoggerCallback",
    "JsonLoggerCallback",
    "LoggerCallback",
    "TBXLoggerCallback",
    "WandbLoggerCallback",
    "numeric_leaves",
    "pretty_print",
]
