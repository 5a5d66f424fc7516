"""Compilation helpers."""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils import xla_options

# Sizing the CPU client's pools lives in ``xla_threads`` (imported by ``import rljax``, which
# imports no JAX); these names stay here for code that reaches them through this module.
from rljax.utils.xla_threads import set_xla_cpu_threads as set_xla_cpu_threads
from rljax.utils.xla_threads import xla_cpu_threads_from_env as xla_cpu_threads_from_env

# For functions that run once (parameter init): compile fast rather than run fast. Op by op they
# would compile dozens of tiny programs; jitted at full optimisation, the orthogonal initialisers'
# QR decompositions alone take about a second to compile on a CPU. The CPU backend's older fusion
# emitters compile faster still (building tuned PPO on CartPole: 1.1 s instead of 1.4 s; other
# backends ignore the option).
# (JAX types the options as str | bool; XLA parses "0" as it does the int 0.)
_ONE_SHOT_OPTIONS: dict[str, str | bool] = {
    "xla_backend_optimization_level": "0",
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_use_fusion_emitters": False,
}


# Programs ``run_once`` compiled under a caller's key, by the key and the arguments' shapes.
_ONCE_CACHE: collections.OrderedDict[Any, Callable] = collections.OrderedDict()
_ONCE_CACHE_SIZE = 64
# Builds may run in several threads (a Tuner's batches): the cache is read and changed under it.
_ONCE_LOCK = threading.Lock()


_ABSTRACT = threading.local()
_SHARING = threading.local()


@contextlib.contextmanager
def sharing_programs() -> Iterator[None]:
    """Within it, ``shared_key(key)`` names one scope: builds of equal configs (a population's
    trials, built one after another) reuse the one-shot programs they compile under such a key
    (a JAX env's first step) instead of each compiling its own. Outside, ``shared_key`` gives
    None (compile per call): a program traced from one build's closures is reused only where
    the caller knows the builds are alike. The scope's programs are dropped when it ends."""
    before = getattr(_SHARING, "scope", None)
    scope = object()
    _SHARING.scope = scope
    try:
        yield
    finally:
        _SHARING.scope = before
        with _ONCE_LOCK:
            for key in [k for k in _ONCE_CACHE if isinstance(k[0], tuple) and k[0][:1] == (scope,)]:
                del _ONCE_CACHE[key]


def shared_key(key: Hashable) -> Hashable | None:
    """``run_once``'s ``cache_key`` for ``key`` within the current ``sharing_programs()``
    scope; None outside one."""
    scope = getattr(_SHARING, "scope", None)
    return None if scope is None else (scope, key)


@contextlib.contextmanager
def abstract_init() -> Iterator[None]:
    """Within it, ``run_once`` and ``init_stacked`` compile and run nothing: they return zeros
    of the shapes and dtypes ``jax.eval_shape`` traces. For a build whose state is replaced
    right after by one loaded from a file, whose tree is checked against these shapes first."""
    before = getattr(_ABSTRACT, "on", False)
    _ABSTRACT.on = True
    try:
        yield
    finally:
        _ABSTRACT.on = before


def _numpy_lacks(dtype: Any) -> bool:
    """A dtype numpy cannot hold (JAX's extended dtypes: typed PRNG keys)."""
    return jax.dtypes.issubdtype(dtype, jax.dtypes.extended)


def host_zeros(shape: tuple[int, ...], dtype: Any) -> Any:
    """Zeros made on the host, so no program compiles for them (``jnp.zeros`` compiles one per
    shape and dtype); a dtype numpy cannot hold gets ``jnp.zeros``."""
    return jnp.zeros(shape, dtype) if _numpy_lacks(dtype) else np.zeros(shape, dtype)


def _zeros_of(shapes: Any) -> Any:
    """Host zeros shaped like ``jax.eval_shape``'s result (None: a leaf numpy cannot hold)."""
    leaves = jax.tree.leaves(shapes)
    if any(_numpy_lacks(x.dtype) for x in leaves):
        return None
    return jax.tree.map(lambda x: np.zeros(x.shape, x.dtype), shapes)


def run_once(fn: Callable, *args: Any, cache_key: Hashable | None = None) -> Any:
    """Runs ``fn(*args)`` as one program compiled with cheap optimisation settings.

    ``cache_key``: a value that identifies the program ``fn`` traces (e.g. a Flax module, equal
    for equal modules); the compiled program is kept under it and the arguments' shapes and
    reused, so building many equal models (the trials of a population) compiles once. None:
    compile for this call only. Within ``abstract_init()``: zeros of the result's shapes.
    """
    if getattr(_ABSTRACT, "on", False):
        zeros = _zeros_of(jax.eval_shape(fn, *args))
        if zeros is not None:
            return zeros
    if cache_key is None:
        return compile_cheap(fn, *args)(*args)
    leaves, tree = jax.tree.flatten(args)
    key = (cache_key, tree, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves))
    with _ONCE_LOCK:
        compiled = _ONCE_CACHE.get(key)
        if compiled is not None:
            _ONCE_CACHE.move_to_end(key)
    if compiled is None:
        compiled = compile_cheap(fn, *args)  # outside the lock: builds compile side by side
        with _ONCE_LOCK:
            _ONCE_CACHE[key] = compiled
            while len(_ONCE_CACHE) > _ONCE_CACHE_SIZE:
                _ONCE_CACHE.popitem(last=False)
    return compiled(*args)


def compile_cheap(fn: Callable, *args: Any) -> Callable:
    """``fn`` compiled once for arguments shaped like ``args``, with cheap optimisation settings."""
    lowered = jax.jit(fn).lower(*args)
    given = xla_options.user_flags()  # an option the user set in XLA_FLAGS is left to them
    try:
        return lowered.compile(
            compiler_options={k: v for k, v in _ONE_SHOT_OPTIONS.items() if k not in given}
        )
    except Exception:  # an XLA build without these options: compile as usual
        return lowered.compile()


def init_stacked(init_fn: Callable, keys: jax.Array, *args: Any) -> Any:
    """``init_fn(key, *args)`` for each of ``keys`` [P, 2], stacked along a new leading axis.

    One compiled program is called P times. (``vmap`` of Flax's orthogonal initialisers hangs in
    XLA's CPU backend in this JAX release, so the initialisers are not batched.) Within
    ``abstract_init()``: zeros of the stacked shapes.
    """
    if getattr(_ABSTRACT, "on", False):
        one = jax.eval_shape(init_fn, keys[0], *args)
        stacked = jax.tree.map(lambda x: jax.ShapeDtypeStruct((len(keys), *x.shape), x.dtype), one)
        zeros = _zeros_of(stacked)
        if zeros is not None:
            return zeros
    compiled = compile_cheap(init_fn, keys[0], *args)
    outs = [compiled(k, *args) for k in keys]
    return jax.tree.map(lambda *xs: jax.numpy.stack(xs), *outs)


def enable_compilation_cache(path: str | os.PathLike | None = None) -> str:
    """Keeps compiled XLA programs on disk, so later processes skip compilation.

    JAX's persistent compilation cache: the first run of a configuration compiles as usual and
    writes each program to ``path`` (default ``~/.cache/rljax/xla``); a later process that builds
    the same programs (same shapes, settings, jax version and machine) loads them instead. Setting
    ``RLJAX_COMPILATION_CACHE=<dir>`` in the environment calls this when rljax is imported.
    EnvPool's fused rollout is the exception: its program names the EnvPool instance, so it
    compiles in every process (the cache cannot, and must not, reuse it).

    Returns the cache directory.
    """
    directory = Path(path or Path.home() / ".cache" / "rljax" / "xla").expanduser().resolve()
    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    # Cache every program: rljax's are small but many, and each saves a compile.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return str(directory)
