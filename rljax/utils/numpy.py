"""RLlib's numpy helpers (``ray.rllib.utils.numpy``) that inference scripts use."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def convert_to_numpy(x: Any) -> Any:
    """``x`` (arrays of any kind, nested in dicts, lists and tuples) as numpy arrays."""
    return jax.tree.map(np.asarray, x)


def softmax(x: Any, axis: int = -1, epsilon: float | None = None) -> np.ndarray:
    """The softmax of ``x`` along ``axis`` (at least ``epsilon`` where given, as RLlib's)."""
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    out = e / e.sum(axis=axis, keepdims=True)
    return np.maximum(out, epsilon) if epsilon is not None else out


__all__ = ["convert_to_numpy", "softmax"]
