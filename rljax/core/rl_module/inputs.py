"""Observations given to a policy's inference (``compute_actions``, ``RLModule``), checked
against its observation space before anything is traced: shapes, dtypes, and for ``Dict`` /
``Tuple`` spaces the keys and lengths; a mismatch raises ``ValueError`` naming it."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def _checked_leaf(space: gym.Space, obs: Any, batched: bool, where: str = "observation") -> Any:
    """One array observation (or a batch) checked against ``space``'s shape and dtype."""
    shape = space.shape
    if shape is None:
        raise ValueError(f"{where}: the space {space} has no fixed shape")
    arr = np.asarray(obs)
    expected = shape if not batched else (None,) + shape
    shape_ok = (
        arr.shape == shape
        if not batched
        else (arr.ndim == len(shape) + 1 and arr.shape[1:] == shape)
    )
    if not shape_ok:
        raise ValueError(
            f"{where} of shape {arr.shape} does not fit the observation space {space} "
            f"(expected shape {expected})"
        )
    if isinstance(space, gym.spaces.Box):
        if not (
            np.can_cast(arr.dtype, np.dtype(space.dtype), "same_kind") or arr.dtype.kind in "iub"
        ):
            raise ValueError(
                f"{where} dtype {arr.dtype} does not fit the observation space dtype {space.dtype}"
            )
        arr = arr.astype(space.dtype, copy=False)
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"{where} dtype {arr.dtype} does not fit {space} (integers)")
    return arr


def _checked_structure(space: gym.Space, obs: Any, batched: bool, where: str) -> Any:
    """A Dict / Tuple observation checked leaf by leaf: a dict with the space's keys (sorted,
    as JAX orders them) or a tuple of its length."""
    if isinstance(space, gym.spaces.Dict):
        keys = set(space.spaces)
        if not isinstance(obs, dict) or set(obs) != keys:
            got = sorted(map(str, obs)) if isinstance(obs, dict) else type(obs).__name__
            raise ValueError(f"{where} must be a dict with keys {sorted(keys)}; got {got}")
        return {
            k: _checked_structure(space.spaces[k], obs[k], batched, f"{where}[{k!r}]")
            for k in sorted(keys)
        }
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(obs, tuple | list) or len(obs) != len(space.spaces):
            raise ValueError(f"{where} must be a tuple of {len(space.spaces)} observations")
        return tuple(
            _checked_structure(s, o, batched, f"{where}[{i}]")
            for i, (s, o) in enumerate(zip(space.spaces, obs, strict=True))
        )
    return _checked_leaf(space, obs, batched, where)


def checked_observations(space: gym.Space, obs: Any, batched: bool) -> Any:
    """``obs`` (one observation, or a batch with ``batched``) checked against ``space``: an
    array, or for Dict / Tuple spaces a dict (keys sorted, as JAX orders them) / tuple of
    arrays."""
    return _checked_structure(space, obs, batched, "observation")


__all__ = ["checked_observations"]
