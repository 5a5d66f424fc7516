"""A policy's weights written into its training state (``Algorithm.set_weights``), checked
against the weights it has."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def check_weights_fit(policy_id: str, given: Any, current: Any) -> None:
    """``set_weights``' check: ``given`` has ``current``'s structure and shapes; the
    ``ValueError`` names both."""
    expected, shapes = jax.tree.map(np.shape, current), jax.tree.map(np.shape, given)
    structures = jax.tree.structure(shapes), jax.tree.structure(expected)
    # jaxlib ships no stub for its pytree module, so mypy cannot see that PyTreeDefs compare.
    if structures[0] != structures[1] or shapes != expected:  # type: ignore[operator]
        raise ValueError(
            f"set_weights: the parameters given for {policy_id!r} have shapes {shapes}; this "
            f"policy has {expected}"
        )


def _replace_leaves(tree: Any, new: dict[str, Any]) -> Any:
    """``tree`` with the leaves at the key paths of ``new`` (``jax.tree_util.keystr``) replaced."""
    return jax.tree_util.tree_map_with_path(
        lambda path, x: new.get(jax.tree_util.keystr(path), x), tree
    )


def with_weights(state: Any, current: Any, given: Any, policy_id: str, owner: str) -> Any:
    """``state`` with policy ``policy_id``'s inference weights ``current`` (leaves of ``state``,
    as ``PolicyParts.inference_params`` gives them) replaced by ``given`` (the same structure
    and shapes: ``check_weights_fit``), each on its leaf's device and dtype.

    A leaf of ``current`` that is not in ``state`` is computed when acting (DQN's epsilon,
    TD3's warm-up flag): ``given`` must hold its value, else a ``ValueError`` names it and
    ``owner`` (the algorithm's class name).
    """
    pid = policy_id
    # Where each inference leaf lives in the state: the same array object.
    paths = {
        id(leaf): jax.tree_util.keystr(path)
        for path, leaf in jax.tree_util.tree_leaves_with_path(state)
    }
    new: dict[str, Any] = {}
    pairs = zip(jax.tree_util.tree_leaves_with_path(current), jax.tree.leaves(given), strict=True)
    for (where, leaf), value in pairs:
        if id(leaf) in paths:
            array = jnp.asarray(value, leaf.dtype)
            new[paths[id(leaf)]] = jax.device_put(array, getattr(leaf, "sharding", None))
        elif not np.array_equal(np.asarray(value), np.asarray(leaf)):
            # Computed when acting (DQN's epsilon, TD3's warm-up flag), not stored.
            raise ValueError(
                f"set_weights: {pid!r}{jax.tree_util.keystr(where)} is computed from "
                f"{owner}'s training state (now {np.asarray(leaf)}), "
                "not a weight; pass get_weights()'s value"
            )
    return _replace_leaves(state, new)


__all__ = ["check_weights_fit", "with_weights"]
