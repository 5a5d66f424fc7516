"""Compilation helpers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

# For functions that run once (parameter init): compile fast rather than run fast. Op by op they
# would compile dozens of tiny programs; jitted at full optimisation, the orthogonal initialisers'
# QR decompositions alone take about a second to compile on a CPU.
_ONE_SHOT_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def run_once(fn: Callable, *args: Any) -> Any:
    """Runs ``fn(*args)`` as one program compiled with cheap optimisation settings."""
    lowered = jax.jit(fn).lower(*args)
    try:
        compiled = lowered.compile(compiler_options=_ONE_SHOT_OPTIONS)
    except Exception:  # an XLA build without these options: compile as usual
        compiled = lowered.compile()
    return compiled(*args)


def compile_cheap(fn: Callable, *args: Any) -> Callable:
    """``fn`` compiled once for arguments shaped like ``args``, with cheap optimisation settings."""
    lowered = jax.jit(fn).lower(*args)
    try:
        return lowered.compile(compiler_options=_ONE_SHOT_OPTIONS)
    except Exception:  # an XLA build without these options: compile as usual
        return lowered.compile()


def init_stacked(init_fn: Callable, keys: jax.Array, *args: Any) -> Any:
    """``init_fn(key, *args)`` for each of ``keys`` [P, 2], stacked along a new leading axis.

    One compiled program is called P times. (``vmap`` of Flax's orthogonal initialisers hangs in
    XLA's CPU backend in this JAX release, so the initialisers are not batched.)
    """
    compiled = compile_cheap(init_fn, keys[0], *args)
    outs = [compiled(k, *args) for k in keys]
    return jax.tree.map(lambda *xs: jax.numpy.stack(xs), *outs)
