"""Tune's experiment callback, ``tune.Callback``, given as ``RunConfig(callbacks=[...])``; the
logger callbacks (``LoggerCallback``, ``TBXLoggerCallback``) are in ``rljax.tune.logger``.

The ``Tuner`` calls them in this process, one result at a time (also when trials train in
worker processes), with Tune's keyword arguments: ``setup(stop, num_samples,
total_num_samples)`` before the first trial, ``on_trial_start``, ``on_trial_result``,
``on_checkpoint``, ``on_trial_complete`` / ``on_trial_error`` (``iteration``: results seen so
far in this ``fit()``; ``trials``: the trials started so far; ``trial``: one of them, as Tune's
``Trial``: ``trial_id``, ``config``, ``status``, ``last_result``, ``checkpoint``,
``trainable_name``, ``experiment_tag``, ``path`` / ``local_path`` / ``logdir``, and its name as
``str(trial)``), and ``on_experiment_end(trials)``. An exception in a callback ends ``fit()``
with a ``ConfigError`` naming the callback and the hook.
"""

from __future__ import annotations

from typing import Any


class Callback:
    """Tune's experiment callback (``ray.tune.Callback``): override the hooks needed."""

    def setup(self, stop: Any = None, num_samples: int | None = None, **info: Any) -> None:
        """Once, before the first trial starts."""

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """A trial starts (or resumes)."""

    def on_trial_result(
        self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any], **info: Any
    ) -> None:
        """A trial reported ``result`` (nested, as recorded in its ``result.json``)."""

    def on_checkpoint(
        self, iteration: int, trials: list[Any], trial: Any, checkpoint: Any, **info: Any
    ) -> None:
        """A trial saved ``checkpoint`` (a ``tune.Checkpoint``)."""

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """A trial finished (its stop criterion, a scheduler, or its own end)."""

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        """A trial raised."""

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        """``fit()`` is done (also when it ends by an error or Ctrl-C)."""
