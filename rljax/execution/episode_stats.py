"""Episode figures: training's per-iteration episode metrics (``EpisodeStats``) and the
evaluation figures of finished episodes (``episode_summary``)."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import numpy as np


class EpisodeStats:
    """RLlib's episode metrics: means over the episodes finished in the latest iteration.

    As RLlib's new API stack reports them: each ``train()`` reduces the episodes its runners
    finished since the previous one (the last ``window`` of them, ``window`` being
    ``metrics_num_episodes_for_smoothing``), so the figures follow the current policy instead
    of lagging over earlier iterations; an iteration that finishes no episode reports NaN.
    """

    def __init__(self, window: int):
        self.returns: collections.deque[float] = collections.deque(maxlen=window)
        self.lengths: collections.deque[int] = collections.deque(maxlen=window)
        self.num_episodes_lifetime = 0

    def add(self, returns: np.ndarray, lengths: np.ndarray) -> None:
        """The episodes of a new iteration (those of the previous one are dropped)."""
        self.returns.clear()
        self.lengths.clear()
        self.returns.extend(float(r) for r in returns)
        self.lengths.extend(int(n) for n in lengths)
        self.num_episodes_lifetime += len(returns)

    def summary(self) -> dict[str, float]:
        if not self.returns:
            nan = float("nan")
            return {
                k: nan
                for k in (
                    "episode_return_mean",
                    "episode_return_max",
                    "episode_return_min",
                    "episode_len_mean",
                    "episode_len_max",
                    "episode_len_min",
                )
            }
        r = np.asarray(self.returns)
        n = np.asarray(self.lengths)
        return {
            "episode_return_mean": float(r.mean()),
            "episode_return_max": float(r.max()),
            "episode_return_min": float(r.min()),
            "episode_len_mean": float(n.mean()),
            "episode_len_max": int(n.max()),
            "episode_len_min": int(n.min()),
        }


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def episode_summary(returns: Sequence[float], lengths: Sequence[int], steps: int) -> dict[str, Any]:
    """RLlib's evaluation figures of finished episodes (NaN where there is none)."""
    return {
        "episode_return_mean": _mean(returns),
        "episode_return_max": float(np.max(returns)) if len(returns) else float("nan"),
        "episode_return_min": float(np.min(returns)) if len(returns) else float("nan"),
        "episode_len_mean": _mean(lengths),
        "num_episodes": len(returns),
        "num_env_steps_sampled": steps,
    }


__all__ = ["EpisodeStats", "episode_summary"]
