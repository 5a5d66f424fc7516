"""The replay buffer interfaces: NamedTuples of pure functions, like optax's GradientTransformation.

A factory closes over the static settings (item shapes, capacity, priority exponents) and returns
the functions; the state is a ``flax.struct.dataclass`` pytree that lives on device. Every
function is jit-able with static shapes: jit ``add`` with ``donate_argnums=0`` so that the storage
is updated in place, and ``sample`` with ``static_argnums=2`` (the batch size).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

InitFn = Callable[[], Any]
AddFn = Callable[[Any, Any], Any]


class ReplayBuffer(NamedTuple):
    """A replay buffer with uniform sampling.

    Attributes:
      init: ``init() -> state``, an empty buffer.
      add: ``add(state, batch) -> state``: stores a batch of B items (every leaf with leading
        dimension B, B static), overwriting the oldest ones once the buffer is full.
      sample: ``sample(state, key, batch_size) -> (batch, indices)``: ``batch_size`` items drawn
        uniformly with replacement from the stored ones, and their int32 [batch_size] slots.
    """

    init: InitFn
    add: AddFn
    sample: Callable[..., tuple[Any, jax.Array]]


class PrioritizedReplayBuffer(NamedTuple):
    """A replay buffer with proportional prioritized sampling (Schaul et al., 2016).

    Attributes:
      init: ``init() -> state``, an empty buffer.
      add: ``add(state, batch) -> state``; new items get the largest priority seen so far.
      sample: ``sample(state, key, batch_size, beta=None) -> (batch, indices, weights)``:
        stratified proportional sampling; ``weights`` are the float32 [batch_size] importance
        weights ``(N * P(i)) ** -beta / max_j (N * P(j)) ** -beta``.
      update_priorities: ``update_priorities(state, indices, td_errors) -> state`` sets the
        priorities of the sampled slots to ``(|td_error| + eps) ** alpha``.
    """

    init: InitFn
    add: AddFn
    sample: Callable[..., tuple[Any, jax.Array, jax.Array]]
    update_priorities: Callable[[Any, jax.Array, jax.Array], Any]


def item_spec(example_item: Any) -> Any:
    """The ``jax.ShapeDtypeStruct`` of each leaf of one item (arrays, scalars or structs)."""

    def spec(x):
        if isinstance(x, jax.ShapeDtypeStruct):
            return x
        dtype = x.dtype if hasattr(x, "dtype") else np.result_type(x)
        dtype = jax.dtypes.canonicalize_dtype(dtype)
        return jax.ShapeDtypeStruct(np.shape(x), dtype)

    return jax.tree.map(spec, example_item)


def batch_size_of(spec: Any, batch: Any) -> int:
    """Checks that ``batch`` is ``spec`` with one leading dimension B on every leaf; returns B.

    Raises:
      ValueError: The structures differ, a leaf has the wrong shape, or the leaves disagree on B.
    """
    spec_def = jax.tree.structure(spec)
    batch_def = jax.tree.structure(batch)
    # jaxlib ships no stub for its pytree module, so mypy cannot see that PyTreeDefs compare.
    if spec_def != batch_def:  # type: ignore[operator]
        raise ValueError(f"batch structure {batch_def} differs from the item's {spec_def}")
    sizes = set()
    for (path, s), x in zip(
        jax.tree_util.tree_leaves_with_path(spec), jax.tree.leaves(batch), strict=True
    ):
        shape = np.shape(x)
        if len(shape) != len(s.shape) + 1 or tuple(shape[1:]) != tuple(s.shape):
            raise ValueError(
                f"batch leaf {jax.tree_util.keystr(path)} has shape {shape}, expected "
                f"[B, *{tuple(s.shape)}]"
            )
        sizes.add(shape[0])
    if len(sizes) != 1:
        raise ValueError(f"batch leaves disagree on the batch size: {sorted(sizes)}")
    return sizes.pop()
