"""``InfiniteLookbackBuffer``: one column of an episode (its observations, actions, rewards,
infos or a model output) with a lookback part before the episode's first step, as RLlib's
``ray.rllib.env.utils.infinite_lookback_buffer``.

Indexing follows RLlib's rules:

- index 0 is the first item after the lookback part; a negative index counts back from the
  end, reaching into the lookback part; with ``neg_index_as_lookback=True`` a negative index
  counts back from index 0 instead (``-1`` is the last lookback item);
- a slice or index beyond the data (the lookback part included) is an ``IndexError`` for an
  int and is cut short for a slice, unless ``fill`` is given: then the missing places hold
  ``fill`` (shaped as the buffer's ``space`` when it has one), so ``get(slice(-3, None),
  fill=0.0)`` always has three items;
- ``one_hot_discrete=True`` gives ``Discrete`` / ``MultiDiscrete`` parts of the ``space`` as
  float one-hot vectors (a fill is then all zeros).

Until ``finalize()`` the data is a Python list and ``get`` returns lists; after it, the data is
one array per leaf (a structure of arrays for ``Dict``/``Tuple`` data) and ``get`` returns
arrays.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.utils.serialization import gym_space_to_dict, space_of_state
from rljax.utils.spaces.space_utils import (
    batch,
    data_equal,
    flatten_struct,
    get_base_struct_from_space,
    get_dummy_batch_for_space,
    map_struct,
)

# A slice's stop far before the data: a negative-step slice runs to the first item.
_BEFORE_ALL = -(2**62)


def _one_hot(value: Any, space: gym.Space) -> Any:
    x = np.asarray(value)
    if isinstance(space, gym.spaces.Discrete):
        return np.eye(int(space.n), dtype=np.float32)[x.astype(np.int64) - int(space.start)]
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec).reshape(-1)
        start = np.asarray(space.start).reshape(-1)
        x = x.reshape(*x.shape[: x.ndim - 1], -1) if x.ndim else x.reshape(1)
        parts = [
            np.eye(int(n), dtype=np.float32)[x[..., j].astype(np.int64) - int(start[j])]
            for j, n in enumerate(nvec)
        ]
        return np.concatenate(parts, axis=-1)
    return value


class InfiniteLookbackBuffer:
    """One episode column with a lookback part (see the module docstring).

    Args:
      data: The items, lookback part first: a list (or, finalized, an array or a structure
        of arrays with a leading time axis). None: empty.
      lookback: How many of the first items are the lookback part (at most all of them).
      space: The items' gymnasium space, for ``fill`` and ``one_hot_discrete``.
    """

    def __init__(self, data: Any = None, lookback: int = 0, space: gym.Space | None = None):
        self.data: Any = data if data is not None else []
        self.finalized = not isinstance(self.data, list)
        self.lookback = min(int(lookback), self.len_incl_lookback())
        self.space = space

    @property
    def space(self) -> gym.Space | None:
        """The items' space (None: unknown)."""
        return self._space

    @space.setter
    def space(self, value: gym.Space | None) -> None:
        self._space = value
        self._space_struct = get_base_struct_from_space(value)

    @property
    def space_struct(self) -> Any:
        """The space as a structure: a ``Dict`` space a dict of its parts, a ``Tuple`` a
        tuple."""
        return self._space_struct

    # -- size ------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The items after the lookback part."""
        return max(self.len_incl_lookback() - self.lookback, 0)

    def len_incl_lookback(self) -> int:
        """All items, the lookback part included."""
        if not self.finalized:
            return len(self.data)
        leaves = flatten_struct(self.data)
        return len(leaves[0]) if leaves else 0

    # -- adding and removing ---------------------------------------------------------------

    def append(self, item: Any) -> None:
        """Adds ``item`` at the end."""
        if self.finalized:
            self.data = map_struct(
                lambda d, i: np.concatenate([d, np.asarray(i)[np.newaxis]], axis=0),
                self.data,
                item,
            )
        else:
            self.data.append(item)

    def extend(self, items: Any) -> None:
        """Adds each of ``items`` (a list, or a batch of arrays when finalized) at the end."""
        if isinstance(items, list) and not items:
            return
        if self.finalized:
            new = batch(list(items)) if isinstance(items, list) else items
            self.data = map_struct(lambda d, i: np.concatenate([d, i], axis=0), self.data, new)
        else:
            for item in items:
                self.append(item)

    def concat(self, other: InfiniteLookbackBuffer) -> None:
        """Adds ``other``'s items after its lookback part at the end."""
        self.extend(other.get())

    def pop(self, index: int = -1) -> None:
        """Removes the item at ``index`` of the whole data (the lookback part included),
        without returning it."""
        if self.finalized:
            self.data = map_struct(lambda d: np.delete(d, index, axis=0), self.data)
        else:
            self.data.pop(index)

    def finalize(self) -> None:
        """Converts the list of items to arrays (one per leaf of the items' structure); an
        empty buffer becomes an empty float32 array."""
        if not self.finalized:
            self.data = batch(self.data) if self.data else np.zeros((0,), np.float32)
            self.finalized = True

    # -- reading -----------------------------------------------------------------------------

    def get(
        self,
        indices: int | slice | list[int] | None = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        """Items by index (one item), list of indices (a list, or a batch when finalized) or
        slice; None: all after the lookback part. See the module docstring for negative
        indices, ``fill`` and ``one_hot_discrete``.

        Raises:
          IndexError: an int index outside the data without ``fill``.
          TypeError: ``indices`` of another type.
        """
        if indices is None:
            data = self._get_slice(slice(None), None, False)
            return self._one_hot(data) if one_hot_discrete else data
        if isinstance(indices, slice):
            return self._get_slice(indices, fill, neg_index_as_lookback, one_hot_discrete)
        if isinstance(indices, list | tuple | np.ndarray):
            items = [
                self._get_int(int(i), fill, neg_index_as_lookback, one_hot_discrete)
                for i in indices
            ]
            return batch(items) if self.finalized and items else items
        if isinstance(indices, int | np.integer):
            return self._get_int(int(indices), fill, neg_index_as_lookback, one_hot_discrete)
        raise TypeError(f"indices must be an int, a list of ints, a slice or None; got {indices!r}")

    def __getitem__(self, item: Any) -> Any:
        return self.get(item)

    def __iter__(self) -> Any:
        return (self.get(i) for i in range(len(self)))

    def _fill_item(self, fill: Any, one_hot_discrete: bool) -> Any:
        if self.space is None:
            return fill
        return get_dummy_batch_for_space(
            self.space, 0, fill_value=fill, one_hot_discrete=one_hot_discrete
        )

    def _one_hot(self, data: Any) -> Any:
        if self.space_struct is None:
            raise ValueError(
                "one_hot_discrete=True needs the buffer's space (the episode's "
                "observation_space or action_space); this buffer has none"
            )
        if not self.finalized and isinstance(data, list):
            return [map_struct(_one_hot, item, self.space_struct) for item in data]
        return map_struct(_one_hot, data, self.space_struct)

    def _position(self, idx: int, neg_as_lookback: bool) -> int:
        """An int index as a position in the whole data (one past its end where
        ``neg_as_lookback`` reaches before the lookback part: out of range)."""
        position = self.lookback + idx if (idx >= 0 or neg_as_lookback) else idx
        if neg_as_lookback and position < 0:
            position = self.len_incl_lookback()
        return position

    def _get_int(self, idx: int, fill: Any, neg_as_lookback: bool, one_hot: bool) -> Any:
        position = self._position(idx, neg_as_lookback)
        try:
            if self.finalized:
                item = map_struct(lambda d: d[position], self.data)
            else:
                item = self.data[position]
        except IndexError:
            if fill is not None:
                return self._fill_item(fill, one_hot)
            raise IndexError(
                f"index {idx} is outside this buffer ({len(self)} items after a lookback of "
                f"{self.lookback}; neg_index_as_lookback={neg_as_lookback})"
            ) from None
        return self._one_hot(item) if one_hot else item

    def _interpret_slice(self, slice_: slice, neg_as_lookback: bool) -> tuple[slice, int, int, int]:
        """``slice_`` as positions in the whole data: (the slice, its length, the fill
        items before it, the fill items after it)."""
        total = self.len_incl_lookback()
        lb = self.lookback

        def position(i: int | None, default: int) -> int:
            if i is None:
                return default
            if i < 0 and not neg_as_lookback:
                return total + i  # from the end
            return lb + i

        start, stop = position(slice_.start, lb), position(slice_.stop, total)
        fill_left = fill_right = 0
        if start < 0 and stop < 0:
            fill_left, start, stop = abs(start - stop), 0, 0
        elif start >= total and stop >= total:
            fill_right, start, stop = abs(start - stop), total, total
        elif start < 0:
            fill_left, start = -start, 0
        elif stop >= total:
            fill_right, stop = stop - total, total
        elif stop < 0:  # a negative step from inside the data to before its start
            if start >= total:
                fill_left, start = start - total + 1, total - 1
            fill_right, stop = -stop - 1, _BEFORE_ALL
        step = 1 if slice_.step is None else int(slice_.step)
        length = max(0, (stop - start + (step - (1 if step > 0 else -1))) // step)
        return slice(start, stop, step), length, fill_left, fill_right

    def _get_slice(
        self, slice_: slice, fill: Any, neg_as_lookback: bool, one_hot: bool = False
    ) -> Any:
        positions, length, fill_left, fill_right = self._interpret_slice(slice_, neg_as_lookback)
        if self.finalized:
            part = map_struct(lambda d: d[positions], self.data)
        else:
            part = self.data[positions]
        if length > 0 and one_hot:
            part = self._one_hot(part)
        if fill is None or not (fill_left or fill_right):
            return part
        if not self.finalized:
            pad = self._fill_item(fill, one_hot)
            return [pad] * fill_left + (list(part) if length > 0 else []) + [pad] * fill_right
        if self.space is None:
            left, right = np.full(fill_left, fill), np.full(fill_right, fill)
        else:
            left = get_dummy_batch_for_space(
                self.space, fill_left, fill_value=fill, one_hot_discrete=one_hot
            )
            right = get_dummy_batch_for_space(
                self.space, fill_right, fill_value=fill, one_hot_discrete=one_hot
            )
        kept = [p for p, n in ((left, fill_left), (part, length), (right, fill_right)) if n]
        return map_struct(lambda *s: np.concatenate(s, axis=0), *kept)

    # -- writing -----------------------------------------------------------------------------

    def set(
        self,
        new_data: Any,
        *,
        at_indices: int | slice | list[int] | None = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites items: at an int index one item, at a list of indices or a slice as many
        as ``new_data`` holds (it must hold as many as the places named); None: all after the
        lookback part.

        Raises:
          IndexError: an index outside the data, or ``new_data`` of another length than the
            slice's.
        """
        if at_indices is None:
            at_indices = slice(0, None)
        if isinstance(at_indices, slice):
            positions, *_ = self._interpret_slice(at_indices, neg_index_as_lookback)
            self._set_slice(new_data, positions, at_indices)
        elif isinstance(at_indices, list | tuple):
            for i, idx in enumerate(at_indices):
                self._set_int(new_data[i], int(idx), neg_index_as_lookback)
        else:
            self._set_int(new_data, int(at_indices), neg_index_as_lookback)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.set(value, at_indices=key)

    def _set_slice(self, new_data: Any, positions: slice, asked: slice) -> None:
        def put(column: Any, new: Any) -> Any:
            if len(column[positions]) != len(new):
                raise IndexError(
                    f"set(at_indices={asked}): {len(new)} new items for "
                    f"{len(column[positions])} places"
                )
            column[positions] = new
            return column

        if self.finalized:
            map_struct(put, self.data, new_data)
        else:
            put(self.data, list(new_data))

    def _set_int(self, new_data: Any, idx: int, neg_as_lookback: bool) -> None:
        position = self._position(idx, neg_as_lookback)
        try:
            if self.finalized:

                def put(column: np.ndarray, new: Any) -> None:
                    column[position] = new

                map_struct(put, self.data, new_data)
            else:
                self.data[position] = new_data
        except IndexError:
            raise IndexError(
                f"set(at_indices={idx}): outside this buffer ({len(self)} items after a "
                f"lookback of {self.lookback}; neg_index_as_lookback={neg_as_lookback})"
            ) from None

    # -- whole buffers -----------------------------------------------------------------------

    def __add__(self, other: Any) -> InfiniteLookbackBuffer:
        """A new buffer: a number added to each numeric item, or ``other``'s items (a list,
        or another buffer's items after its lookback part) appended. Not for finalized
        buffers."""
        if self.finalized:
            raise RuntimeError("cannot add to a finalized InfiniteLookbackBuffer")
        if isinstance(other, int | float | complex):
            data = [d + other if isinstance(d, int | float | complex) else d for d in self.data]
        elif isinstance(other, InfiniteLookbackBuffer):
            data = self.data + list(other.data[other.lookback :])
        else:
            data = self.data + list(other)
        return InfiniteLookbackBuffer(data, lookback=self.lookback, space=self.space)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InfiniteLookbackBuffer):
            return False
        if (self.lookback, self.finalized, self.space) != (
            other.lookback,
            other.finalized,
            other.space,
        ):
            return False
        return data_equal(self.data, other.data)

    __hash__ = None  # type: ignore[assignment]

    def get_state(self) -> dict[str, Any]:
        """The buffer as a dict (``from_state`` rebuilds it): its data, lookback, whether
        finalized, and its space as RLlib writes one (``gym_space_to_dict``)."""
        return {
            "data": self.data,
            "lookback": self.lookback,
            "finalized": self.finalized,
            "space": gym_space_to_dict(self.space),
        }

    @staticmethod
    def from_state(state: dict[str, Any]) -> InfiniteLookbackBuffer:
        """The buffer ``get_state`` described (its data copied: the two buffers grow apart)."""
        data = state["data"]
        data = list(data) if isinstance(data, list) else map_struct(np.copy, data)
        buffer = InfiniteLookbackBuffer(data, space=space_of_state(state.get("space")))
        buffer.lookback = int(state["lookback"])
        buffer.finalized = bool(state["finalized"])
        return buffer

    def __repr__(self) -> str:
        if self.finalized:
            return f"InfiniteLookbackBuffer(finalized, lookback={self.lookback}, len={len(self)})"
        return (
            f"InfiniteLookbackBuffer({self.data[: self.lookback]} <- lookback({self.lookback}) "
            f"| {self.data[self.lookback :]})"
        )


__all__ = ["InfiniteLookbackBuffer"]
