"""The learning curve of a run as a PNG (``rljax train --logdir`` writes one at the end)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any


def _curve(results: Sequence[dict[str, Any]], *path: str) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for r in results:
        value: Any = r
        for p in path:
            value = value.get(p) if isinstance(value, dict) else None
        if isinstance(value, int | float) and math.isfinite(value):
            x: Any = r.get("num_env_steps_sampled_lifetime", r.get("training_iteration"))
            xs.append(float(x if x is not None else len(xs)))
            ys.append(float(value))
    return xs, ys


def plot_learning_curve(
    results: Sequence[dict[str, Any]], path: str | os.PathLike[str], title: str = ""
) -> str:
    """Draws the mean episode return (and the evaluation's, where results have one) against
    env steps into ``path``; returns the path."""
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, safe in any thread

    fig = Figure(figsize=(6.4, 4.0), dpi=100)
    ax = fig.add_subplot()
    xs, ys = _curve(results, "env_runners", "episode_return_mean")
    ax.plot(xs, ys, label="training episodes (mean return)")
    ex, ey = _curve(results, "evaluation", "env_runners", "episode_return_mean")
    if ex:
        ax.plot(ex, ey, "o-", label="evaluation")
    ax.set_xlabel("env steps sampled")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(os.fspath(path))
    return os.fspath(path)


__all__ = ["plot_learning_curve"]
