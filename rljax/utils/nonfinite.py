"""Updates with non-finite gradients are skipped inside the jitted update, and counted.

Every optimizer is wrapped by ``guard``: optax's ``apply_if_finite`` checks the gradients of each
step and, when any is NaN or infinite, applies no update (parameters and optimizer moments stay
as they were) and counts the step in its state. ``count_non_finite`` reads those counters from a
learner state on the host, where ``Algorithm.train()`` reports them and, with
``fault_tolerance(on_non_finite_update="raise")``, stops with ``NonFiniteUpdateError``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

# Never fall back to applying non-finite updates (optax's default gives up after a few in a row).
_NEVER = 2**30


class NonFiniteUpdateError(RuntimeError):
    """An update had non-finite gradients (and was skipped); raised when so configured."""


def guard(optimizer: optax.GradientTransformation) -> optax.GradientTransformation:
    """``optimizer``, skipping (and counting) every step whose gradients are not all finite."""
    return optax.apply_if_finite(optimizer, max_consecutive_errors=_NEVER)


def _is_guard_state(x: Any) -> bool:
    return isinstance(x, optax.ApplyIfFiniteState)


def _counters(state: Any) -> list[Any]:
    return [
        s.total_notfinite
        for s in jax.tree.leaves(state, is_leaf=_is_guard_state)
        if _is_guard_state(s)
    ]


def count_non_finite(state: Any) -> int:
    """Total skipped steps over every guarded optimizer state in ``state`` (any pytree)."""
    return int(sum(np.sum(c) for c in jax.device_get(_counters(state))))  # one transfer for all


def total_non_finite(state: Any) -> jax.Array:
    """``count_non_finite`` inside a traced program: an int32 scalar (0 without guards)."""
    return sum((jnp.sum(c, dtype=jnp.int32) for c in _counters(state)), jnp.int32(0))


__all__ = ["NonFiniteUpdateError", "count_non_finite", "guard", "total_non_finite"]
