"""Tune's class API, ``tune.Trainable``: a trial as an object with ``setup``, ``step``,
``save_checkpoint``, ``load_checkpoint`` and ``cleanup``.

The ``Tuner`` runs a ``Trainable`` subclass as it runs an algorithm: it builds one per trial
(``setup(config)``), calls ``train()`` (``step()`` plus Tune's bookkeeping) until a stop
criterion, a scheduler or a result with ``done=True`` ends the trial, saves checkpoints as
``RunConfig(checkpoint_config=...)`` asks (``checkpoint_frequency``, ``checkpoint_at_end``),
restores the newest one when the trial continues (``Tuner.restore``, ``FailureConfig
(max_failures=...)``), and calls ``cleanup()`` at the end.

A checkpoint is a directory: ``save_checkpoint(checkpoint_dir)`` writes its files there and
returns None, or returns a dict of JSON data (numbers, strings, lists, dicts), which is written
to ``trainable_state.json`` in it and given back to ``load_checkpoint`` as that dict; nothing
is pickled.
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from typing import Any, ClassVar

from rljax.utils import safe_io
from rljax.utils.errors import ConfigError

# Where a dict returned by ``save_checkpoint`` is kept inside the checkpoint directory, and the
# largest such file read back (larger state belongs in files of the checkpoint's own).
STATE_FILE = "trainable_state.json"
MAX_STATE_BYTES = 16 << 20


class Trainable:
    """A trial as an object (Tune's ``Trainable``): subclass it and implement ``setup`` and
    ``step`` (and ``save_checkpoint`` / ``load_checkpoint`` to checkpoint it).

    Args:
      config: The trial's config (a dict); ``self.config`` is a copy.
      logger_creator, storage: Accepted as Tune's; results go to the trial's directory.

    Attributes:
      config: The trial's config.
      iteration: The ``train()`` calls so far (restored with a checkpoint).
      trial_id, trial_name, logdir: The trial's id, directory name and directory (empty
        outside a ``Tuner``).
    """

    # Set by ``tune.with_parameters``: keyword arguments passed on to ``setup``.
    _setup_kwargs: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        config: dict[str, Any] | None = None,
        logger_creator: Any = None,
        storage: Any = None,
        *,
        trial_id: str = "",
        trial_dir: str = "",
    ):
        self.config: dict[str, Any] = copy.deepcopy(dict(config or {}))
        self.iteration = 0
        self._time_total = 0.0
        self.trial_id = trial_id
        self.logdir = trial_dir
        self.trial_name = Path(trial_dir).name if trial_dir else ""
        self.setup(copy.deepcopy(self.config), **self._setup_kwargs)

    # -------------------------------------------------------------- what a subclass implements
    def setup(self, config: dict[str, Any]) -> None:
        """Builds the trial's state from its ``config`` (called once, by ``__init__``)."""

    def step(self) -> dict[str, Any]:
        """One iteration: returns its result (a dict; ``done=True`` ends the trial)."""
        raise NotImplementedError(f"{type(self).__name__}.step() is not implemented")

    def save_checkpoint(self, checkpoint_dir: str) -> dict[str, Any] | str | None:
        """Writes the trial's state into ``checkpoint_dir`` (and returns None or
        ``checkpoint_dir``), or returns it as a dict of JSON data."""
        return None

    def load_checkpoint(self, checkpoint: dict[str, Any] | str) -> None:
        """Restores what ``save_checkpoint`` saved: its dict, or the checkpoint directory."""

    def cleanup(self) -> None:
        """Releases what ``setup`` took (called once, when the trial ends)."""

    def reset_config(self, new_config: dict[str, Any]) -> bool:
        """Tune's hook for reusing an actor with another config; rljax builds a new object per
        trial, so this is never called: False."""
        return False

    # -------------------------------------------------------------- what Tune calls
    @property
    def training_iteration(self) -> int:
        return self.iteration

    def get_config(self) -> dict[str, Any]:
        return self.config

    def train(self) -> dict[str, Any]:
        """Runs ``step()`` once and returns its result with Tune's keys added
        (``training_iteration``, ``time_this_iter_s``, ``time_total_s``, ``done``).

        Raises:
          TypeError: ``step()`` returned something other than a dict.
        """
        start = time.time()
        result = self.step()
        if not isinstance(result, dict):
            raise TypeError(
                f"{type(self).__name__}.step() returned a {type(result).__name__}; return a dict"
            )
        self.iteration += 1
        took = time.time() - start
        self._time_total += took
        result = dict(result)
        result.setdefault("training_iteration", self.iteration)
        result.setdefault("time_this_iter_s", took)
        result.setdefault("time_total_s", self._time_total)
        result.setdefault("done", False)
        return result

    def save_to_path(self, path: str | os.PathLike[str]) -> str:
        """Saves a checkpoint into the directory ``path`` (made if missing): what
        ``save_checkpoint`` writes or returns, and the iteration count."""
        target = Path(os.fspath(path))
        target.mkdir(parents=True, exist_ok=True)
        state = self.save_checkpoint(str(target))
        if isinstance(state, (str, os.PathLike)) and Path(os.fspath(state)) == target:
            state = None  # Tune's older style: the directory written into, returned
        if state is not None and not isinstance(state, dict):
            raise TypeError(
                f"{type(self).__name__}.save_checkpoint() returned a {type(state).__name__}; "
                "return None (files written into checkpoint_dir), checkpoint_dir itself or a "
                "dict of JSON data"
            )
        record = {
            "iteration": self.iteration,
            "time_total_s": self._time_total,
            "state": state,
        }
        try:
            text = json.dumps(record)
        except TypeError as e:
            raise TypeError(
                f"{type(self).__name__}.save_checkpoint() returned a dict JSON cannot hold ({e}); "
                "write such state into checkpoint_dir instead"
            ) from None
        safe_io.write_atomic(target / STATE_FILE, text)
        return str(target)

    def restore_from_path(self, path: str | os.PathLike[str]) -> None:
        """Restores the checkpoint in directory ``path``: the iteration count, then
        ``load_checkpoint`` with the saved dict (or the directory).

        Raises:
          ConfigError: ``path`` holds no checkpoint of a ``Trainable``.
        """
        source = Path(os.fspath(path))
        state_file = source / STATE_FILE
        if not state_file.is_file():
            raise ConfigError(f"{source}: no {STATE_FILE}; not a checkpoint of a tune.Trainable")
        record = safe_io.read_json(state_file, source, MAX_STATE_BYTES, ConfigError)
        if not isinstance(record, dict) or not isinstance(record.get("iteration"), int):
            raise ConfigError(f"{state_file}: not a checkpoint of a tune.Trainable")
        self.iteration = record["iteration"]
        self._time_total = float(record.get("time_total_s", 0.0))
        state = record.get("state")
        self.load_checkpoint(state if isinstance(state, dict) else str(source))

    def save(self, checkpoint_dir: str | None = None) -> str:
        """Tune's ``save``: ``save_to_path`` into ``checkpoint_dir`` (default: the trial's
        directory's ``checkpoint_<iteration>``)."""
        if checkpoint_dir is None:
            if not self.logdir:
                raise ValueError("save() outside a Tuner needs a checkpoint_dir")
            checkpoint_dir = os.path.join(self.logdir, f"checkpoint_{self.iteration:06d}")
        return self.save_to_path(checkpoint_dir)

    def restore(self, checkpoint_path: str | os.PathLike[str]) -> None:
        """Tune's ``restore``: ``restore_from_path``."""
        self.restore_from_path(checkpoint_path)

    def stop(self) -> None:
        """Ends the trial: ``cleanup()``."""
        self.cleanup()


def bind_setup_kwargs(cls: type[Trainable], kwargs: dict[str, Any]) -> type[Trainable]:
    """A subclass of ``cls`` whose ``setup`` also gets ``kwargs`` (``tune.with_parameters``)."""
    bound: type[Trainable] = type(
        cls.__name__, (cls,), {"_setup_kwargs": {**cls._setup_kwargs, **kwargs}}
    )
    bound.__qualname__ = cls.__qualname__
    bound.__module__ = cls.__module__
    return bound


def run_class_trainable(cls: type[Trainable], config: Any, trial: Any) -> None:
    """Runs one trial of ``cls`` in the ``Tuner``'s ``trial`` (a ``_TrialRun``) as an algorithm
    trial runs (``_TrialRun.train``): built, restored from the trial's newest checkpoint if
    any, trained until a stop says so or a result has ``done=True``, checkpointed as the
    trial's ``CheckpointConfig`` asks, and stopped."""
    trial.train(cls(config, trial_id=trial.trial_id, trial_dir=str(trial.path)))


__all__ = ["STATE_FILE", "Trainable", "bind_setup_kwargs", "run_class_trainable"]
