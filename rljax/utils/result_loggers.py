"""Where results go: TensorBoard event files, Tune's ``progress.csv`` and ``result.json``, and
Weights & Biases, one ``log(result)`` per iteration.

``rljax train --logdir DIR`` writes all three files (and W&B with ``--wandb-project``); Tune's
logger callbacks (``rljax.tune.logger``) write them per trial. Every numeric leaf of a result is
logged under its ``/``-joined key (``env_runners/episode_return_mean``), against env steps
(``num_env_steps_sampled_lifetime``; ``training_iteration`` where a result has none).
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rljax.utils.errors import ConfigError
from rljax.utils.tensorboard import EventFileWriter


def flatten_result(result: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level, keys joined by ``/`` (Tune's delimiter); other values kept."""
    out: dict[str, Any] = {}
    for key, value in result.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten_result(value, name + "/"))
        else:
            out[name] = value
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "__array__"):
        return np.asarray(value).tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return repr(value)


def to_json_data(value: Any) -> Any:
    """``value`` with numpy and JAX numbers and arrays as Python numbers and lists, and anything
    else JSON cannot hold as its ``repr``."""
    return json.loads(json.dumps(value, default=_jsonable))


def without_config(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """``result`` without its ``config`` (the algorithm's settings, which Ray Tune's CSV,
    TensorBoard and W&B loggers leave out of each result's figures too)."""
    if "config" not in result:
        return result
    return {k: v for k, v in result.items() if k != "config"}


def numeric_leaves(result: Mapping[str, Any]) -> dict[str, float]:
    """Every finite number of a (nested) result but its ``config``, by its ``/``-joined key;
    booleans, strings, NaN and infinities are left out."""
    out = {}
    for key, value in flatten_result(without_config(result)).items():
        if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            value = value.item()  # numpy and JAX scalars
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(value):
            out[key] = float(value)
    return out


def result_step(scalars: Mapping[str, float]) -> int:
    """The x-axis of a result: env steps sampled, else the iteration."""
    return int(scalars.get("num_env_steps_sampled_lifetime", scalars.get("training_iteration", 0)))


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return repr(value)


class TensorBoardLogger:
    """Scalars of every result in ``logdir``'s event file (``tensorboard --logdir``)."""

    def __init__(self, logdir: str | os.PathLike[str]):
        self.writer = EventFileWriter(logdir)

    def log(self, result: Mapping[str, Any]) -> None:
        scalars = numeric_leaves(result)
        self.writer.add_scalars(result_step(scalars), scalars)

    def close(self) -> None:
        self.writer.close()


class JsonLogger:
    """``result.json``: one JSON line per result (Tune's layout)."""

    def __init__(self, logdir: str | os.PathLike[str]):
        self.path = Path(logdir) / "result.json"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("")

    def log(self, result: Mapping[str, Any]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(result, default=_json_default) + "\n")

    def close(self) -> None:
        pass


class CSVLogger:
    """``progress.csv``: one row per result, the columns of the first result (Tune's layout:
    keys that appear later are left out, missing ones left empty)."""

    def __init__(self, logdir: str | os.PathLike[str]):
        self.path = Path(logdir) / "progress.csv"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("")
        self.fields: list[str] | None = None

    def log(self, result: Mapping[str, Any]) -> None:
        flat = flatten_result(without_config(result))
        new = self.fields is None
        if self.fields is None:
            self.fields = list(flat)
        with open(self.path, "a", newline="") as f:
            writer = csv.DictWriter(f, self.fields, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(flat)

    def close(self) -> None:
        pass


def import_wandb() -> Any:
    try:
        import wandb
    except ImportError:
        raise ConfigError(
            "logging to Weights & Biases needs the wandb package: pip install wandb (set "
            "WANDB_MODE=offline to log without an account or a network)"
        ) from None
    return wandb


class WandbLogger:
    """One Weights & Biases run: the config once, then every result's numbers at its env step.

    Args:
      project: The W&B project.
      logdir: Where W&B keeps its files (``<logdir>/wandb``).
      config: The run's settings, shown in W&B.
      name, group: The run's name and group (optional).
      mode: ``"online"``, ``"offline"`` or ``"disabled"``; None: W&B's own choice
        (``WANDB_MODE``).
    """

    def __init__(
        self,
        project: str,
        logdir: str | os.PathLike[str],
        config: Mapping[str, Any] | None = None,
        name: str | None = None,
        group: str | None = None,
        mode: str | None = None,
    ):
        wandb = import_wandb()
        Path(logdir).mkdir(parents=True, exist_ok=True)
        # Read here, per run: W&B reads the variable once per process, at its first run.
        mode = mode or os.environ.get("WANDB_MODE") or None
        self.run = wandb.init(
            project=project,
            dir=str(logdir),
            config=json.loads(json.dumps(dict(config or {}), default=_json_default)),
            name=name,
            group=group,
            mode=mode,
            reinit="create_new",
        )

    def log(self, result: Mapping[str, Any]) -> None:
        scalars = numeric_leaves(result)
        self.run.log(scalars, step=result_step(scalars))

    def close(self) -> None:
        self.run.finish()


def make_loggers(
    logdir: str | os.PathLike[str],
    wandb_project: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> list[Any]:
    """The sinks ``rljax train --logdir`` writes: TensorBoard, CSV, JSON (and W&B)."""
    loggers: list[Any] = [TensorBoardLogger(logdir), CSVLogger(logdir), JsonLogger(logdir)]
    if wandb_project:
        loggers.append(WandbLogger(wandb_project, logdir, config))
    return loggers


__all__ = [
    "CSVLogger",
    "JsonLogger",
    "TensorBoardLogger",
    "WandbLogger",
    "flatten_result",
    "make_loggers",
    "numeric_leaves",
    "to_json_data",
    "without_config",
]
