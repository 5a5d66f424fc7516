"""The baseline of ``replay_memory.py``: a plain ring buffer on device with uniform sampling, which
stores every item whole (both stacks of an Atari transition).

Items are any pytree of arrays (an observation, action, reward, ..., next observation); each leaf
is stored in an array with leading dimension ``capacity``, in the dtype of the example item
(images given as uint8 stay uint8). ``add`` writes a batch of B items at consecutive slots with
wrap-around; ``sample`` draws uniformly with replacement from the filled slots.
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from rljax.replay.base import ReplayBuffer, batch_size_of, item_spec


@flax.struct.dataclass
class UniformBufferState:
    """A ring buffer.

    Attributes:
      storage: The items, a pytree like the example item with every leaf of shape
        [capacity, *leaf_shape].
      insert_pos: An int32 scalar, the slot the next item goes to.
      size: An int32 scalar, the number of filled slots (at most ``capacity``). Slots
        ``[0, size)`` are filled: the ring fills from slot 0 and never empties.
    """

    storage: Any
    insert_pos: jax.Array
    size: jax.Array


def init_storage(spec: Any, capacity: int) -> Any:
    """Zeros shaped [capacity, *leaf_shape] for every leaf of ``spec``."""
    return jax.tree.map(lambda s: jnp.zeros((capacity, *s.shape), s.dtype), spec)


def write(
    spec: Any, capacity: int, state: UniformBufferState, batch: Any
) -> tuple[UniformBufferState, jax.Array]:
    """``add``, also returning the int32 [B] slots written (shared with the prioritized buffer)."""
    size = batch_size_of(spec, batch)
    if size > capacity:
        raise ValueError(f"cannot add {size} items at once to a buffer of capacity {capacity}")
    slots = (state.insert_pos + jnp.arange(size, dtype=jnp.int32)) % capacity
    storage = jax.tree.map(
        lambda s, x: s.at[slots].set(jnp.asarray(x).astype(s.dtype)), state.storage, batch
    )
    state = UniformBufferState(
        storage=storage,
        insert_pos=(state.insert_pos + size) % capacity,
        size=jnp.minimum(state.size + size, capacity),
    )
    return state, slots


def gather(storage: Any, indices: jax.Array) -> Any:
    """The items at slots ``indices`` [N]: every leaf of shape [N, *leaf_shape]."""
    return jax.tree.map(lambda s: s[indices], storage)


def make_uniform_buffer(example_item: Any, capacity: int) -> ReplayBuffer:
    """A uniform replay buffer for items shaped like ``example_item``.

    Args:
      example_item: One item (no batch dimension): a pytree of arrays, scalars or
        ``jax.ShapeDtypeStruct``; only shapes and dtypes are used. Added items are cast to these
        dtypes.
      capacity: The number of items kept; the oldest are overwritten first.

    Returns:
      ``ReplayBuffer(init, add, sample)``:

      * ``init() -> UniformBufferState``, all zeros, ``size`` 0.
      * ``add(state, batch) -> state``: ``batch`` is the item's pytree with a leading dimension
        B (static, ``B <= capacity``) on every leaf; the items go to slots
        ``insert_pos, ..., insert_pos + B - 1`` modulo ``capacity``.
      * ``sample(state, key, batch_size) -> (batch, indices)``: ``indices`` is an int32 tensor of
        shape [batch_size] drawn uniformly from ``[0, size)``, ``batch`` the items there (every
        leaf [batch_size, *leaf_shape]). ``batch_size`` is static. On an empty buffer it
        returns slot 0's zeros.
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    spec = item_spec(example_item)

    def init() -> UniformBufferState:
        return UniformBufferState(
            storage=init_storage(spec, capacity),
            insert_pos=jnp.zeros((), jnp.int32),
            size=jnp.zeros((), jnp.int32),
        )

    def add(state: UniformBufferState, batch: Any) -> UniformBufferState:
        return write(spec, capacity, state, batch)[0]

    def sample(state: UniformBufferState, key: jax.Array, batch_size: int) -> tuple[Any, jax.Array]:
        high = jnp.maximum(state.size, 1)
        indices = jax.random.randint(key, (batch_size,), 0, high, dtype=jnp.int32)
        return gather(state.storage, indices), indices

    return ReplayBuffer(init=init, add=add, sample=sample)
