"""gymnasium spaces as plain data (JSON), and back: checkpoints and exported policies describe
their spaces this way, so that a policy loads without building its env."""

from __future__ import annotations

import math
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


# Bounds on a space read from data (a checkpoint's or an exported policy's description): far
# above real spaces (Atari's 210x160x3 frames are 100,800 numbers, a 1024x1024 RGB image 3.1
# million), far below what exhausts memory or makes a model's build and compile run for minutes.
MAX_SPACE_ELEMENTS = 1 << 22
MAX_SPACE_DEPTH = 8
MAX_SUBSPACES = 256


def _bound_array(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    def num(v: Any) -> float:
        return float(v) if isinstance(v, str) else v

    if isinstance(value, list):
        arr = np.asarray([num(v) for v in value], dtype=np.float64).reshape(shape)
        return arr.astype(dtype)
    # One number: filled in the space's dtype (no float64 copy of a large bound).
    return np.full(shape, np.asarray(num(value), np.float64).astype(dtype), dtype=dtype)


class _Budget:
    """What a space description may still hold: elements (array entries and counts) and
    subspaces, over the whole description."""

    def __init__(self) -> None:
        self.elements = MAX_SPACE_ELEMENTS
        self.subspaces = MAX_SUBSPACES

    def take_elements(self, n: int, what: str) -> None:
        self.elements -= n
        if self.elements < 0:
            raise ValueError(
                f"{what} makes the space hold more than {MAX_SPACE_ELEMENTS:,} numbers in all"
            )

    def take_subspace(self) -> None:
        self.subspaces -= 1
        if self.subspaces < 0:
            raise ValueError(f"more than {MAX_SUBSPACES} subspaces in all (Dict / Tuple entries)")


def _int_list(value: Any, what: str) -> list[int]:
    if isinstance(value, bool) or not isinstance(value, (int, list)):
        raise ValueError(f"{what} must be an int or a list of ints")
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise ValueError(f"{what} must be an int or a list of ints")
    return items


def _number_dtype(value: Any) -> np.dtype:
    """A Box's dtype from its name: numbers or booleans only. numpy reads some strings as
    Python literals (``"(,)f4"`` raises ``SyntaxError``): any failure is a ``ValueError``."""
    if not isinstance(value, str):
        raise TypeError(f"a Box dtype must be a dtype name; got a {type(value).__name__}")
    try:
        dtype = np.dtype(value)
    except Exception:
        raise ValueError(f"dtype {value[:40]!r} is not understood") from None
    if dtype.kind not in "biuf":
        raise ValueError(f"dtype {dtype}")
    return dtype


def space_from_data(data: Any, where: str = "space") -> gym.Space:
    """The space ``space_to_data`` described; malformed data raises ``CheckpointError``.

    The data may come from someone else's file, so it is bounded before anything is
    allocated: at most ``MAX_SPACE_ELEMENTS`` numbers in all (Box shapes, MultiDiscrete and
    MultiBinary sizes), Dict / Tuple nesting at most ``MAX_SPACE_DEPTH`` deep, and at most
    ``MAX_SUBSPACES`` subspaces in all.
    """
    try:
        return _space_from_data(data, _Budget(), 0)
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise CheckpointError(f"{where}: not a space description ({e})") from None


def _space_from_data(data: Any, budget: _Budget, depth: int) -> gym.Space:
    if not isinstance(data, dict):
        raise TypeError(f"expected an object with a 'type'; got a {type(data).__name__}")
    kind = data["type"]
    if kind == "Box":
        raw_shape = data["shape"]
        if not isinstance(raw_shape, list) or len(raw_shape) > 8:
            raise ValueError("a Box shape must be a list of at most 8 ints")
        shape = tuple(_int_list(raw_shape, "a Box shape"))
        if any(n < 0 for n in shape):
            raise ValueError(f"shape {shape}")
        budget.take_elements(math.prod(shape), f"a Box of shape {list(shape)}")
        dtype: Any = _number_dtype(data["dtype"])  # gymnasium < 1.4 types Box's dtype narrower
        low = _bound_array(data["low"], shape, dtype)
        high = _bound_array(data["high"], shape, dtype)
        return gym.spaces.Box(low, high, shape, dtype)
    if kind == "Discrete":
        n, start = data["n"], data.get("start", 0)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (n, start)):
            raise ValueError("a Discrete space's n and start must be ints")
        budget.take_elements(1, "a Discrete space")
        return gym.spaces.Discrete(n, start=start)
    if kind == "MultiDiscrete":
        nvec = data["nvec"]
        flat = np.asarray(nvec, np.int64) if isinstance(nvec, list) else None
        if flat is None or flat.dtype != np.int64:
            raise ValueError("a MultiDiscrete space's nvec must be a list of ints")
        budget.take_elements(flat.size, f"a MultiDiscrete space of {flat.size:,} entries")
        return gym.spaces.MultiDiscrete(flat)
    if kind == "MultiBinary":
        n = _int_list(data["n"], "a MultiBinary space's n")
        if len(n) > 8 or any(v < 0 for v in n):
            raise ValueError(f"a MultiBinary space's n {n[:8]}")
        budget.take_elements(math.prod(n), f"a MultiBinary space of shape {n}")
        return gym.spaces.MultiBinary(data["n"])
    if kind in ("Tuple", "Dict"):
        if depth >= MAX_SPACE_DEPTH:
            raise ValueError(f"Dict / Tuple spaces nested deeper than {MAX_SPACE_DEPTH} levels")
        subs = data["spaces"]
        if kind == "Tuple":
            if not isinstance(subs, list):
                raise TypeError("a Tuple space's spaces must be a list")
            for _ in subs:
                budget.take_subspace()
            return gym.spaces.Tuple([_space_from_data(s, budget, depth + 1) for s in subs])
        if not isinstance(subs, dict) or not all(isinstance(k, str) for k in subs):
            raise TypeError("a Dict space's spaces must be an object of named spaces")
        for _ in subs:
            budget.take_subspace()
        return gym.spaces.Dict({k: _space_from_data(s, budget, depth + 1) for k, s in subs.items()})
    raise ValueError(f"unknown space type {str(kind)[:40]!r}")


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
