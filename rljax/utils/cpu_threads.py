"""The size of JAX's CPU client's thread pools, chosen when rljax is imported.

XLA's CPU client runs every program on pools of one thread per core, sized once, when JAX
creates the client (on the process's first JAX call, ``jax.devices()`` included), from
``PJRT_NPROC`` if it is set; no compiler option changes them later
(``rljax.utils.xla_options``). rljax's programs are many small operations, and on a 2-core
machine the hand-offs between the pool's two threads cost more than the second thread gains:
``benchmarks/xla_cpu_threads.py`` ran the same ``train()`` calls 1.09x-1.38x faster in a process
whose pool had one thread (RLlib's default PPO 1.23x), compiling no slower.

``RLJAX_XLA_CPU_THREADS`` (read by ``import rljax``):

- unset or ``auto`` (the default): one thread where the process may use at most
  ``AUTO_MAX_CORES`` cores, and only if the user set no ``PJRT_NPROC``, ``NPROC`` or
  ``XLA_FLAGS`` and JAX's backends do not exist yet; JAX's default otherwise (more cores were
  not measured);
- ``default``: JAX's default, always;
- a whole number ``n``: ``n`` threads (``set_xla_cpu_threads``).

The setting holds for the whole process and its children (``PJRT_NPROC`` is inherited); the
process keeps all its cores for EnvPool's and the runner threads. This module imports no JAX:
``import rljax`` creates no backend, so ``jax.distributed.initialize`` may still follow.
"""

from __future__ import annotations

import operator
import os
import sys

# The environment variable ``import rljax`` reads.
ENV = "RLJAX_XLA_CPU_THREADS"
# What JAX's PJRT clients read, when JAX creates them, for the size of their thread pools.
PJRT_NPROC_ENV = "PJRT_NPROC"
# ``auto`` gives one thread where the process may use at most this many cores (measured on 2).
AUTO_MAX_CORES = 2


def usable_cores() -> int:
    """The cores this process may run on."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        return len(getaffinity(0))
    return os.cpu_count() or 1


def backends_initialized() -> bool:
    """Whether JAX's backends exist in this process (never before JAX is imported)."""
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def set_xla_cpu_threads(n: int) -> int:
    """Has JAX create its CPU client with ``n`` threads in its pools instead of one per core:
    sets ``PJRT_NPROC=n`` in the process's environment (child processes inherit it).

    Call it before the process's first JAX call. Returns ``n``.

    Raises:
      ValueError: ``n`` is not a whole number of at least 1, or ``PJRT_NPROC`` is already set
        to another value.
      RuntimeError: JAX's backends already exist, with their pools sized otherwise.
    """
    try:
        count = None if isinstance(n, bool) else operator.index(n)
    except TypeError:
        count = None
    if count is None or count < 1:
        raise ValueError(f"set_xla_cpu_threads(n={n!r}): n must be a whole number of at least 1")
    existing = os.environ.get(PJRT_NPROC_ENV)
    if existing is not None and existing.strip() == str(count):
        return count  # already asked for (an inherited environment): nothing to change
    if existing is not None:
        raise ValueError(
            f"set_xla_cpu_threads({count}): {PJRT_NPROC_ENV}={existing!r} is already set in the "
            f"environment and sizes the same pools; unset one of the two"
        )
    if backends_initialized():
        raise RuntimeError(
            f"set_xla_cpu_threads({count}): JAX's backends already exist (a JAX call, "
            "jax.devices() included, created them), and their thread pools are sized when "
            "they are created; import rljax or call set_xla_cpu_threads before the process's "
            f"first JAX call, or set {PJRT_NPROC_ENV}={count} in the environment before starting "
            "Python"
        )
    os.environ[PJRT_NPROC_ENV] = str(count)
    return count


def threads_from_env(value: str) -> int | str:
    """``RLJAX_XLA_CPU_THREADS``'s value: ``"auto"``, ``"default"`` or a thread count
    (``ValueError`` naming the value otherwise)."""
    word = value.strip().lower()
    if word in ("auto", "default"):
        return word
    try:
        n = int(word)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"{ENV}={value!r}: expected 'auto' (the default), 'default' (JAX's own pools) or a "
            "whole number of at least 1 (the JAX CPU client's threads)"
        )
    return n


def auto_threads() -> int | None:
    """What ``auto`` chooses: 1 where the process may use at most ``AUTO_MAX_CORES`` cores and
    the user set no ``PJRT_NPROC``, ``NPROC`` or ``XLA_FLAGS``; None (JAX's default)
    otherwise."""
    if any(os.environ.get(k) for k in (PJRT_NPROC_ENV, "NPROC", "XLA_FLAGS")):
        return None
    return 1 if usable_cores() <= AUTO_MAX_CORES else None


def apply_environment() -> int | None:
    """What ``import rljax`` runs: ``RLJAX_XLA_CPU_THREADS`` applied (module docstring).
    Returns the threads asked for, or None where JAX's default stands."""
    setting = threads_from_env(os.environ.get(ENV, "auto"))
    if setting == "default":
        return None
    if setting == "auto":
        n = auto_threads()
        if n is None or backends_initialized():  # auto never fails: JAX's default stands
            return None
        return set_xla_cpu_threads(n)
    return set_xla_cpu_threads(int(setting))


__all__ = [
    "AUTO_MAX_CORES",
    "ENV",
    "PJRT_NPROC_ENV",
    "apply_environment",
    "auto_threads",
    "set_xla_cpu_threads",
    "threads_from_env",
    "usable_cores",
]
