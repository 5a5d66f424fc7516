"""RLlib 2.60's serialization formats (``ray.rllib.utils.serialization``): gymnasium spaces as
plain dicts, and msgpack with arrays as msgpack-numpy encodes them (RLlib's recorded episodes).

``gym_space_to_dict(space)`` gives a dict of strings, numbers and lists (arrays as base64 text of
zlib-compressed ``.npy`` bytes, as RLlib writes them), which JSON or msgpack can hold;
``gym_space_from_dict`` builds the space again. Episode states (``SingleAgentEpisode.get_state``)
and RLlib's recorded episodes hold their spaces this way.

Reading is for data from elsewhere: arrays are loaded without pickle (RLlib's reader allows it),
only numbers and booleans, and at most ``MAX_ARRAY_BYTES`` decompressed; anything else raises
``ValueError`` naming what was found.
"""

from __future__ import annotations

import base64
import binascii
import io
import zlib
from collections import OrderedDict
from typing import Any

import gymnasium as gym
import msgpack
import numpy as np

MAX_ARRAY_BYTES = 1 << 28
"""The most bytes one serialized array may decompress to (a space's bounds: 256 MiB)."""

_NUMBER_KINDS = "biuf"


def _serialize_ndarray(array: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return base64.b64encode(zlib.compress(buf.getvalue())).decode("ascii")


def _deserialize_ndarray(text: Any, what: str) -> np.ndarray:
    if not isinstance(text, str | bytes):
        raise ValueError(f"{what}: expected base64 text of an array, got {type(text).__name__}")
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(base64.b64decode(text, validate=True), MAX_ARRAY_BYTES)
    except (binascii.Error, zlib.error) as e:
        raise ValueError(f"{what}: not an array ({type(e).__name__}: {e})") from None
    if inflate.unconsumed_tail:
        raise ValueError(f"{what}: the array is larger than {MAX_ARRAY_BYTES:,} bytes")
    try:
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:  # an object array (pickle), not an .npy
        raise ValueError(f"{what}: not an array of numbers ({e})") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in _NUMBER_KINDS:
        raise ValueError(f"{what}: holds {getattr(array, 'dtype', type(array))}, not numbers")
    return array


def gym_space_to_dict(space: gym.Space | None) -> dict[str, Any] | None:
    """``space`` as a dict of plain values (None for None), RLlib's format.

    Raises:
      ValueError: a space type RLlib's format has no entry for.
    """
    if space is None:
        return None
    if isinstance(space, gym.spaces.Box):
        return {
            "space": "box",
            "low": _serialize_ndarray(space.low),
            "high": _serialize_ndarray(space.high),
            "shape": space.shape,
            "dtype": np.dtype(space.dtype).str,
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"space": "discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"space": "multi-binary", "n": space.n}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {
            "space": "multi-discrete",
            "nvec": _serialize_ndarray(space.nvec),
            "dtype": np.dtype(space.dtype).str,
        }
    if isinstance(space, gym.spaces.Tuple):
        return {"space": "tuple", "spaces": [gym_space_to_dict(s) for s in space.spaces]}
    if isinstance(space, gym.spaces.Dict):
        return {"space": "dict", "spaces": {k: gym_space_to_dict(s) for k, s in space.items()}}
    if isinstance(space, gym.spaces.Text):
        return {
            "space": "text",
            "min_length": space.min_length,
            "max_length": space.max_length,
            "charset": "".join(sorted(space.character_set)),
        }
    raise ValueError(f"Unknown space type for serialization: {type(space)}")


def _dtype(value: Any, what: str) -> np.dtype:
    try:
        dtype = np.dtype(value) if isinstance(value, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in _NUMBER_KINDS:
        raise ValueError(f"{what}: dtype {str(value)[:40]!r} is not a number type")
    return dtype


def _charset(value: Any) -> str:
    """A Text space's characters: a string, or the set RLlib's dict holds."""
    if isinstance(value, str):
        return value
    return "".join(sorted(str(c) for c in value))


def _int(d: dict[str, Any], key: str, what: str) -> int:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{what}: {key!r} is {type(value).__name__}, expected an int")
    return int(value)


def _child(d: Any, depth: int) -> gym.Space:
    space = gym_space_from_dict(d, depth + 1)
    if space is None:
        raise ValueError("space dict: a Tuple's or Dict's space is None")
    return space


def gym_space_from_dict(d: dict[str, Any] | None, _depth: int = 0) -> gym.Space | None:
    """The space ``gym_space_to_dict`` described (None for None).

    Raises:
      ValueError: ``d`` is not such a dict: an unknown ``"space"`` name, a missing or malformed
        field, an array that is not numbers.
    """
    if d is None:
        return None
    if _depth > 32:
        raise ValueError("space dict: nested deeper than 32 levels")
    if not isinstance(d, dict) or not isinstance(d.get("space"), str):
        raise ValueError(f"space dict: expected a dict with a 'space' name, got {type(d).__name__}")
    kind = d["space"]
    what = f"space dict {kind!r}"
    try:
        if kind == "box":
            shape = d.get("shape")
            return gym.spaces.Box(
                low=_deserialize_ndarray(d.get("low"), f"{what} 'low'"),
                high=_deserialize_ndarray(d.get("high"), f"{what} 'high'"),
                shape=None if shape is None else tuple(int(n) for n in shape),
                dtype=_dtype(d.get("dtype", "float32"), what),  # type: ignore[arg-type]
            )
        if kind == "discrete":
            return gym.spaces.Discrete(_int(d, "n", what), start=int(d.get("start", 0)))
        if kind == "multi-binary":
            n: Any = d.get("n")
            return gym.spaces.MultiBinary(n if isinstance(n, int) else [int(x) for x in n])
        if kind == "multi-discrete":
            return gym.spaces.MultiDiscrete(
                _deserialize_ndarray(d.get("nvec"), f"{what} 'nvec'"),
                dtype=_dtype(d.get("dtype", "int64"), what),  # type: ignore[arg-type]
            )
        if kind == "tuple":
            return gym.spaces.Tuple([_child(s, _depth) for s in d["spaces"]])
        if kind == "dict":
            return gym.spaces.Dict(
                OrderedDict((str(k), _child(s, _depth)) for k, s in d["spaces"].items())
            )
        if kind == "text":
            return gym.spaces.Text(
                min_length=_int(d, "min_length", what),
                max_length=_int(d, "max_length", what),
                charset=_charset(d["charset"]),
            )
    except ValueError as e:
        if str(e).startswith("space dict"):
            raise
        raise ValueError(f"{what}: {e}") from None
    except (KeyError, TypeError, AttributeError, AssertionError) as e:
        raise ValueError(f"{what}: malformed ({type(e).__name__}: {e})") from None
    raise ValueError(
        f"Unknown space type for de-serialization: {kind[:40]!r}; rljax reads box, discrete, "
        "multi-binary, multi-discrete, tuple, dict and text"
    )


def _msgpack_numpy_default(obj: Any) -> Any:
    """msgpack's ``default`` for what it cannot write itself, as msgpack-numpy encodes it
    (RLlib's recorded episodes): arrays and numpy scalars of numbers, complex numbers."""
    if isinstance(obj, np.ndarray) and obj.dtype.kind in _NUMBER_KINDS:
        array = np.ascontiguousarray(obj)
        return {
            b"nd": True,
            b"type": array.dtype.str,
            b"kind": b"",
            b"shape": list(array.shape),
            b"data": array.tobytes(),
        }
    if isinstance(obj, np.bool_ | np.integer | np.floating):
        return {b"nd": False, b"type": obj.dtype.str, b"data": obj.tobytes()}
    if isinstance(obj, complex):
        return {b"complex": True, b"data": repr(obj)}
    if isinstance(obj, tuple | set | frozenset):
        return list(obj)
    raise TypeError(
        f"cannot write a {type(obj).__module__}.{type(obj).__qualname__} (msgpack holds "
        "dicts, lists, strings, numbers and arrays of numbers)"
    )


def pack_msgpack_numpy(obj: Any) -> bytes:
    """``obj`` as msgpack bytes with arrays in msgpack-numpy's encoding: what RLlib writes for
    an episode (``msgpack.packb(episode.get_state(), default=msgpack_numpy.encode)``), so RLlib
    reads it; ``rljax.utils.safe_io.unpack_msgpack_numpy`` reads it back without pickle.

    Raises:
      ValueError: ``obj`` holds something else (an object array, a class instance), named.
    """
    try:
        return msgpack.packb(obj, default=_msgpack_numpy_default, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(f"cannot write as msgpack: {e}") from None


def space_of_state(value: Any) -> gym.Space | None:
    """A space from a state dict: ``gym_space_from_dict``'s dict, or a space object as such."""
    return value if isinstance(value, gym.Space) else gym_space_from_dict(value)


def space_to_dict(space: gym.Space) -> dict[str, Any]:
    """RLlib's wrapper of ``gym_space_to_dict``: ``{"space": ...}``, plus ``"original_space"``
    where the space carries one."""
    d: dict[str, Any] = {"space": gym_space_to_dict(space)}
    if "original_space" in space.__dict__:
        d["original_space"] = space_to_dict(space.original_space)  # type: ignore[attr-defined]
    return d


def space_from_dict(d: dict[str, Any]) -> gym.Space:
    """The space ``space_to_dict`` described, its ``original_space`` set where it had one."""
    space = gym_space_from_dict(d["space"])
    assert space is not None
    if "original_space" in d:
        original = d["original_space"]
        space.original_space = (  # type: ignore[attr-defined]
            gym_space_from_dict(original)
            if isinstance(original.get("space"), str)
            else space_from_dict(original)
        )
    return space


__all__ = [
    "gym_space_from_dict",
    "gym_space_to_dict",
    "pack_msgpack_numpy",
    "space_from_dict",
    "space_of_state",
    "space_to_dict",
]
