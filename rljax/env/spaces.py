"""gymnasium spaces as plain data (JSON), and back: checkpoints and exported policies describe
their spaces this way, so that a policy loads without building its env."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.utils.errors import CheckpointError


def _bound(x: np.ndarray) -> Any:
    """A bound array as one number when it is uniform (image spaces), else nested lists."""
    flat = np.asarray(x).reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return _number(flat[0])
    return [_number(v) for v in flat]


def _number(v: Any) -> Any:
    v = np.asarray(v).item()
    if isinstance(v, float) and not np.isfinite(v):
        return "inf" if v > 0 else "-inf"
    return v


def space_to_data(space: gym.Space) -> dict[str, Any]:
    """``Box``, ``Discrete``, ``MultiDiscrete``, ``MultiBinary``, ``Tuple`` and ``Dict`` as a
    JSON-able dict; other spaces raise ``TypeError``."""
    if isinstance(space, gym.spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": np.dtype(space.dtype).name,
            "low": _bound(space.low),
            "high": _bound(space.high),
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": np.asarray(space.nvec).tolist()}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, gym.spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_to_data(s) for s in space.spaces]}
    if isinstance(space, gym.spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_to_data(s) for k, s in space.spaces.items()}}
    raise TypeError(f"cannot describe the space {space!r} as data")


def _bound_array(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    def num(v: Any) -> float:
        return float(v) if isinstance(v, str) else v

    if isinstance(value, list):
        arr = np.asarray([num(v) for v in value], dtype=np.float64).reshape(shape)
    else:
        arr = np.full(shape, num(value), dtype=np.float64)
    return arr.astype(dtype)


def space_from_data(data: Any, where: str = "space") -> gym.Space:
    """The space ``space_to_data`` described; malformed data raises ``CheckpointError``."""
    try:
        kind = data["type"]
        if kind == "Box":
            shape = tuple(int(n) for n in data["shape"])
            if len(shape) > 8 or any(n < 0 or n > 1 << 24 for n in shape):
                raise ValueError(f"shape {shape}")
            dtype = np.dtype(data["dtype"])
            if dtype.kind not in "biuf":
                raise ValueError(f"dtype {dtype}")
            low = _bound_array(data["low"], shape, dtype)
            high = _bound_array(data["high"], shape, dtype)
            return gym.spaces.Box(low, high, shape, dtype)
        if kind == "Discrete":
            return gym.spaces.Discrete(int(data["n"]), start=int(data.get("start", 0)))
        if kind == "MultiDiscrete":
            return gym.spaces.MultiDiscrete(np.asarray(data["nvec"], np.int64))
        if kind == "MultiBinary":
            return gym.spaces.MultiBinary(data["n"])
        if kind == "Tuple":
            return gym.spaces.Tuple([space_from_data(s, where) for s in data["spaces"]])
        if kind == "Dict":
            return gym.spaces.Dict(
                {k: space_from_data(s, where) for k, s in data["spaces"].items()}
            )
        raise ValueError(f"unknown space type {str(kind)[:40]!r}")
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise CheckpointError(f"{where}: not a space description ({e})") from None


def zeros_batch(space: gym.Space, n: int) -> Any:
    """``n`` zero observations of ``space`` stacked: an array, or for Dict / Tuple spaces a
    dict (keys sorted, as JAX orders them) / tuple of such, in dtypes JAX computes in."""
    import jax

    if isinstance(space, gym.spaces.Dict):
        return {k: zeros_batch(space.spaces[k], n) for k in sorted(space.spaces)}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(zeros_batch(s, n) for s in space.spaces)
    dtype = jax.dtypes.canonicalize_dtype(space.dtype if space.dtype is not None else np.float32)
    return np.zeros((n, *(space.shape or ())), dtype)


def is_structured(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Dict | gym.spaces.Tuple)


__all__ = ["is_structured", "space_from_data", "space_to_data", "zeros_batch"]
