"""Batching data of gymnasium spaces: RLlib's ``ray.rllib.utils.spaces.space_utils`` helpers
that episode code and connectors call (``batch``, ``unbatch``, ``get_base_struct_from_space``,
``get_dummy_batch_for_space``).

Nested data is dicts and tuples (the shapes of ``Dict`` and ``Tuple`` spaces); anything else,
lists included, is one item, as in RLlib, except in ``batch``, which goes into lists below the
top level as RLlib's does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np


def map_struct(fn: Callable[..., Any], *structs: Any) -> Any:
    """``fn`` over the leaves of one or more structures of the same shape (dicts by key,
    tuples by position; anything else is a leaf)."""
    first = structs[0]
    if isinstance(first, dict):
        return {k: map_struct(fn, *(s[k] for s in structs)) for k in first}
    if isinstance(first, tuple):
        return tuple(map_struct(fn, *parts) for parts in zip(*structs, strict=True))
    return fn(*structs)


def flatten_struct(struct: Any) -> list[Any]:
    """The leaves of a structure (dicts in key order, tuples in order)."""
    if isinstance(struct, dict):
        return [leaf for k in struct for leaf in flatten_struct(struct[k])]
    if isinstance(struct, tuple):
        return [leaf for part in struct for leaf in flatten_struct(part)]
    return [struct]


def data_equal(a: Any, b: Any) -> bool:
    """Whether two items of data are equal: dicts by key, lists and tuples item by item,
    anything else as arrays (``np.array_equal``); values numpy cannot compare are equal only
    when they are the same object."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(data_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(data_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except (TypeError, ValueError):
        return a is b


def batch(
    list_of_structs: list[Any], *, individual_items_already_have_batch_dim: bool = False
) -> Any:
    """Stacks items (arrays, numbers, or dicts/tuples of them) into one structure of arrays
    with a leading batch axis; with ``individual_items_already_have_batch_dim``, concatenates
    them along their first axis instead.

    Raises:
      ValueError: ``list_of_structs`` is empty.
    """
    if not list_of_structs:
        raise ValueError("batch() needs at least one item; got an empty list")
    if individual_items_already_have_batch_dim:
        return _map_nested(lambda *s: np.concatenate(s, axis=0), *list_of_structs)
    n = len(list_of_structs)

    def stack(*items: Any) -> np.ndarray:
        if not isinstance(items[0], np.ndarray):
            return np.array(items)
        out = np.empty((n, *items[0].shape), items[0].dtype)
        for i, item in enumerate(items):
            out[i] = item  # a number broadcasts (a fill value among arrays)
        return out

    return _map_nested(stack, *list_of_structs)


def _map_nested(fn: Callable[..., Any], *structs: Any) -> Any:
    """``map_struct`` that also goes into lists, as RLlib's ``batch`` (dm-tree) does: each
    item's ``{"a": [1, 2]}`` batches to ``{"a": [array, array]}``."""
    first = structs[0]
    if isinstance(first, dict):
        return {k: _map_nested(fn, *(s[k] for s in structs)) for k in first}
    if isinstance(first, tuple | list):
        return type(first)(_map_nested(fn, *parts) for parts in zip(*structs, strict=True))
    return fn(*structs)


def unbatch(batches_struct: Any) -> list[Any]:
    """The inverse of ``batch``: a structure of arrays with a leading batch axis as a list
    of structures, one per batch row."""
    leaves = flatten_struct(batches_struct)
    if not leaves:
        return []
    n = len(leaves[0])
    return [map_struct(lambda leaf, i=i: leaf[i], batches_struct) for i in range(n)]


def get_base_struct_from_space(space: gym.Space | None) -> Any:
    """A ``Dict`` space as a dict of its subspaces, a ``Tuple`` as a tuple, nested; any other
    space (or None) as itself."""
    if isinstance(space, gym.spaces.Tuple):
        return tuple(get_base_struct_from_space(s) for s in space.spaces)
    if isinstance(space, gym.spaces.Dict):
        return {k: get_base_struct_from_space(s) for k, s in space.spaces.items()}
    return space


def get_dummy_batch_for_space(
    space: gym.Space | dict | tuple,
    batch_size: int = 32,
    *,
    fill_value: float | int | str = 0.0,
    time_size: int | None = None,
    time_major: bool = False,
    one_hot_discrete: bool = False,
) -> Any:
    """Data of ``space``'s shape and dtype filled with ``fill_value`` (``"random"``: samples
    of the space), with a leading axis of ``batch_size`` (0: one item, no batch axis). With
    ``time_size``, a time axis too: ``[B, T, ...]``, or ``[T, B, ...]`` with ``time_major``
    (both sizes then at least 1). ``one_hot_discrete`` gives ``Discrete``/``MultiDiscrete``
    parts as float one-hot vectors (all ``fill_value``).

    Raises:
      ValueError: ``time_size`` with a ``batch_size`` or ``time_size`` under 1.
    """
    if time_size is not None and (batch_size < 1 or time_size < 1):
        raise ValueError(
            f"get_dummy_batch_for_space(batch_size={batch_size}, time_size={time_size}): with "
            "a time axis both sizes must be at least 1"
        )
    if isinstance(space, gym.spaces.Dict | gym.spaces.Tuple | dict | tuple):
        struct = space if isinstance(space, dict | tuple) else get_base_struct_from_space(space)
        return map_struct(
            lambda s: get_dummy_batch_for_space(
                s,
                batch_size,
                fill_value=fill_value,
                time_size=time_size,
                time_major=time_major,
                one_hot_discrete=one_hot_discrete,
            ),
            struct,
        )
    if one_hot_discrete and isinstance(space, gym.spaces.Discrete):
        space = gym.spaces.Box(0.0, 1.0, (int(space.n),), np.float32)
    elif one_hot_discrete and isinstance(space, gym.spaces.MultiDiscrete):
        space = gym.spaces.Box(0.0, 1.0, (int(np.sum(space.nvec)),), np.float32)
    if time_size is None:
        lead = [batch_size] if batch_size > 0 else []
    else:
        lead = [time_size, batch_size] if time_major else [batch_size, time_size]
    if fill_value == "random":
        samples = [space.sample() for _ in range(max(int(np.prod(lead)), 1))]
        data = np.asarray(samples, dtype=space.dtype)
        return data.reshape(lead + list(space.shape or ())) if lead else data[0]
    return np.full(lead + list(space.shape or ()), fill_value, dtype=space.dtype)


__all__ = [
    "batch",
    "data_equal",
    "flatten_struct",
    "get_base_struct_from_space",
    "get_dummy_batch_for_space",
    "map_struct",
    "unbatch",
]
