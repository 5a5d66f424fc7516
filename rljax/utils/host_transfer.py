"""A jitted program's many small outputs fetched to the host in one transfer per dtype.

An iteration's program returns a dozen scalar metrics and a few episode arrays. Fetched as they
are, each array costs a transfer of its own (about 17 us each on the CPU backend, measured with
``benchmarks/jax_envs.py``'s settings: 0.29 ms for 17 arrays against 0.07 ms for 2), which at
PureJaxRL's small settings is a tenth of an iteration. ``PackedOutputs.pack`` runs inside the
program and lays every array of one dtype end to end in one flat array; ``unpack`` rebuilds the
tree from the fetched arrays on the host, as numpy arrays of the original shapes.

The layout is known while the program is traced, so ``pack`` records it then, keyed by the flat
arrays' dtypes and lengths (what the host sees). Two layouts of the same key would be ambiguous
and are refused when the second is traced.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

# One leaf's place: (index of its dtype's flat array, start, stop, shape).
_Place = tuple[int, int, int, tuple[int, ...]]
_Layout = tuple[Any, tuple[_Place, ...]]  # (treedef, places)
_Key = tuple[tuple[str, int], ...]  # per flat array: (dtype name, length)


class PackedOutputs:
    """Packs a pytree of arrays into one flat array per dtype inside a traced program
    (``pack``) and rebuilds it from the fetched flat arrays on the host (``unpack``)."""

    def __init__(self) -> None:
        self._layouts: dict[_Key, _Layout] = {}

    def pack(self, tree: Any) -> tuple[jax.Array, ...]:
        """Inside a traced program: ``tree``'s leaves as one flat array per dtype."""
        leaves, treedef = jax.tree.flatten(tree)
        groups: dict[Any, list[jax.Array]] = {}
        sizes: dict[Any, int] = {}
        places: list[_Place] = []
        for leaf in leaves:
            leaf = jnp.asarray(leaf)
            group = groups.setdefault(leaf.dtype, [])
            start = sizes.get(leaf.dtype, 0)
            sizes[leaf.dtype] = start + int(leaf.size)
            places.append((list(groups).index(leaf.dtype), start, sizes[leaf.dtype], leaf.shape))
            group.append(jnp.ravel(leaf))
        flat = tuple(jnp.concatenate(g) for g in groups.values())
        key = tuple((str(f.dtype), int(f.shape[0])) for f in flat)
        layout = (treedef, tuple(places))
        known = self._layouts.setdefault(key, layout)
        if known != layout:
            raise ValueError(
                "two output trees of the same flat shapes traced for one PackedOutputs: "
                f"{known[0]} and {treedef}"
            )
        return flat

    def unpack(self, flat: tuple[Any, ...]) -> Any:
        """On the host: the tree ``pack`` was given, from its fetched flat arrays (numpy)."""
        flat = tuple(np.asarray(f) for f in flat)
        key = tuple((str(f.dtype), int(f.shape[0])) for f in flat)
        treedef, places = self._layouts[key]
        leaves = [flat[g][start:stop].reshape(shape) for g, start, stop, shape in places]
        return jax.tree.unflatten(treedef, leaves)


__all__ = ["PackedOutputs"]
