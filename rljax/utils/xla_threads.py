"""The size of JAX's CPU client's thread pools, set before JAX creates the client: by the first
algorithm built in the process, or by ``import rljax`` when ``RLJAX_XLA_CPU_THREADS`` names a
number.

XLA's CPU client runs every program on pools sized once, when JAX creates the client (on the
process's first JAX call), from ``PJRT_NPROC`` if set, else one thread per core. No compiler
option changes them for one program: ``jax.jit(..., compiler_options=...)`` refuses
``intra_op_parallelism_threads`` ("No such compile option"), and the pool's size is what XLA's
CPU compiler splits loop fusions by (``outer_dimension_partitions`` in the compiled HLO: none
with ``PJRT_NPROC=1``, one per partitioned fusion with two threads; ``docs/scaling.md``, "The
CPU client's threads", and ``benchmarks/README.md``'s ``rllib_defaults.py`` section). An Adam
step on 68k parameters, split over two threads, took 81 us against 21 us on one: the rest is
the hand-off between the threads.

So rljax sizes them itself, process-wide, by ``RLJAX_XLA_CPU_THREADS``:

- unset (or ``auto``): the first algorithm built in the process chooses (``choose_at_build``,
  called before the build's first JAX call). One thread where it was measured faster: PPO, APPO or
  DQN with a dense model (no conv, LSTM or attention, no custom module) on an EnvPool task with flat
  observations, single-agent, on a machine with at most ``AUTO_ONE_THREAD_MAX_CORES`` usable cores,
  provided nothing else has sized the pools (no ``PJRT_NPROC`` or ``NPROC`` in the environment, no
  ``XLA_FLAGS`` at all: a user who tunes XLA keeps XLA's behaviour) and JAX's backends do not exist
  yet (a multi-process run's, a Tune population's and a notebook's that already ran JAX do).
  Otherwise XLA's own sizing. Conv and LSTM models ran slower with one thread (their larger matrix
  products gain from the second), hence the rule. The choice stays out of the environment of
  processes started later, which choose for themselves;
- ``xla``: XLA's own sizing (one thread per core), always;
- a whole number ``n``: ``n`` threads, set when ``import rljax`` runs (``set_xla_cpu_threads``).

The process keeps all its cores either way: EnvPool's and the runner threads still use them.
This module imports no JAX, so ``import rljax`` stays light.
"""

from __future__ import annotations

import operator
import os
import sys
import threading
from collections.abc import Mapping
from typing import Any

# The environment variable ``import rljax`` reads.
XLA_CPU_THREADS_ENV = "RLJAX_XLA_CPU_THREADS"
# What JAX's PJRT clients read, when JAX creates them, for the size of their thread pools.
PJRT_NPROC_ENV = "PJRT_NPROC"
# What else sizes them (read by the same code as ``PJRT_NPROC``).
_OTHER_SIZING_ENV = ("NPROC",)
# The automatic choice gives machines with at most this many usable cores a one-thread client.
# Measured on two 2-core machines (an Intel Xeon and an AMD EPYC; ``xla_cpu_threads.py``), one
# thread against XLA's two: RLlib's default PPO on CartPole 1.10-1.42x, the tuned example
# 0.94-1.12x, PPO on a JAX env 0.82-1.38x, a MinAtar conv network 0.61x, an LSTM 0.75x. Larger
# machines were not measured, and their matrix products gain from more threads.
AUTO_ONE_THREAD_MAX_CORES = 2
# ``RLJAX_XLA_CPU_THREADS`` values besides a whole number.
AUTO = "auto"
XLA = "xla"


def _backends_initialized() -> bool:
    if "jax" not in sys.modules:
        return False  # JAX not imported: its backends cannot exist yet
    from jax._src import xla_bridge

    return bool(xla_bridge.backends_are_initialized())


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def set_xla_cpu_threads(n: int) -> int:
    """Has JAX create its CPU client with ``n`` threads in its pools instead of one per core.

    XLA's CPU client sizes its thread pools once, when JAX creates it (on the process's first
    JAX call, ``jax.devices()`` included), from ``PJRT_NPROC`` if set, else from the cores; no
    compiler option changes them later. rljax's programs are many small operations, and on a
    2-core machine the hand-offs between the pool's threads cost more than the second thread
    gains: ``benchmarks/xla_cpu_threads.py`` measures the same ``train()`` calls in a process
    started each way, in turns. This sets ``PJRT_NPROC=n`` in the process's environment (so
    child processes inherit it); the process keeps all its cores for EnvPool's and the runner
    threads.

    Call it before the process's first JAX call, or set ``RLJAX_XLA_CPU_THREADS=<n>`` in the
    environment and ``import rljax`` calls it (before anything else creates JAX's backends, so
    ``jax.distributed.initialize`` may still follow). Returns ``n``.

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
    existing = os.environ.get(PJRT_NPROC_ENV, "").strip() or None  # blank: unset, as for XLA
    if existing == str(count):
        return count  # already asked for (an inherited environment): nothing to change
    if existing is not None:
        raise ValueError(
            f"set_xla_cpu_threads({count}): {PJRT_NPROC_ENV}={existing!r} is already set in the "
            f"environment and sizes the same pools; unset one of the two"
        )
    if _backends_initialized():
        raise RuntimeError(
            f"set_xla_cpu_threads({count}): JAX's backends already exist (a JAX call, "
            "jax.devices() included, created them), and their thread pools are sized when "
            "they are created; import rljax or call set_xla_cpu_threads before the process's "
            f"first JAX call, or set {PJRT_NPROC_ENV}={count} in the environment before starting "
            "Python"
        )
    os.environ[PJRT_NPROC_ENV] = str(count)
    return count


def xla_cpu_threads_from_env(value: str) -> int:
    """``RLJAX_XLA_CPU_THREADS``'s value as a thread count (``ValueError`` naming it if it is
    not a whole number of at least 1)."""
    try:
        n = int(value.strip())
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"{XLA_CPU_THREADS_ENV}={value!r}: expected a whole number of at least 1 (the "
            f"JAX CPU client's threads), {AUTO!r} (rljax's choice, as when unset) or {XLA!r} "
            "(XLA's own: one thread per core)"
        )
    return n


def auto_xla_cpu_threads(
    environ: Mapping[str, str] | None = None, cores: int | None = None
) -> int | None:
    """Whether the automatic choice (``choose_at_build``, when ``RLJAX_XLA_CPU_THREADS`` is unset
    or ``auto``) may give the CPU client one thread: 1 on a machine with at most
    ``AUTO_ONE_THREAD_MAX_CORES`` usable ``cores`` (None: this process's), unless ``environ`` (None:
    this process's) already sizes the pools (``PJRT_NPROC``, ``NPROC``) or sets ``XLA_FLAGS`` (any
    flag: a user who tunes XLA keeps XLA's behaviour), or JAX's backends exist; None otherwise
    (XLA's own sizing)."""
    env = os.environ if environ is None else environ
    if any(env.get(name) for name in (PJRT_NPROC_ENV, *_OTHER_SIZING_ENV)):
        return None
    if env.get("XLA_FLAGS", "").strip():
        return None
    if (usable_cores() if cores is None else cores) > AUTO_ONE_THREAD_MAX_CORES:
        return None
    if _backends_initialized():
        return None
    return 1


def _setting(environ: Mapping[str, str]) -> str | int:
    """``RLJAX_XLA_CPU_THREADS`` in ``environ``: ``AUTO`` (also when unset or blank), ``XLA``
    or a thread count (``ValueError`` naming a bad value)."""
    value = environ.get(XLA_CPU_THREADS_ENV, "")
    word = value.strip().lower()
    if word in ("", AUTO):
        return AUTO
    if word == XLA:
        return XLA
    return xla_cpu_threads_from_env(value)


def xla_cpu_threads_at_import(environ: Mapping[str, str] | None = None) -> int | None:
    """The thread count ``import rljax`` sets from ``RLJAX_XLA_CPU_THREADS`` in ``environ``
    (None: this process's): a number given there; None for ``xla`` and for ``auto`` (unset),
    which the first algorithm's build decides (``choose_at_build``). ``ValueError`` naming a
    bad value."""
    setting = _setting(os.environ if environ is None else environ)
    return setting if isinstance(setting, int) else None


def apply_at_import() -> int | None:
    """Sizes the CPU client's pools when ``RLJAX_XLA_CPU_THREADS`` gives a number (``import
    rljax`` calls this); returns it, None otherwise."""
    threads = xla_cpu_threads_at_import()
    if threads is not None:
        set_xla_cpu_threads(threads)
    return threads


def dense_on_flat_envpool(config: Any) -> bool:
    """Whether ``config`` (an ``AlgorithmConfig``) trains one policy with rljax's dense networks
    (no conv filters, LSTM or attention, no module class of its own) on an EnvPool task whose
    observations, with the config's ``env_config``, are one flat vector (not Atari's frames, not
    a discrete state): the programs measured faster on a one-thread CPU client. Builds no env
    (``envpool.make_spec``) and makes no JAX call."""
    if config.is_multi_agent or config.rl_module_spec is not None:
        return False
    model = config.model_config
    model = model.to_dict() if hasattr(model, "to_dict") else dict(model or {})
    if any(model.get(k) for k in ("use_lstm", "use_attention", "conv_filters")):
        return False
    env, env_config = config.env, dict(config.env_config or {})
    from rljax.env.envpool_settings import envpool_config
    from rljax.env.resolve import runs_on_envpool
    from rljax.utils.errors import ConfigError

    if not runs_on_envpool(env, env_config):
        return False  # gymnasium's env, a JAX env, or one resolve_env refuses
    try:  # the settings as the build passes them (Atari's ALE names translated)
        settings = envpool_config(env, env_config)
    except ConfigError:
        return False  # a setting the build refuses
    import envpool

    shape = envpool.make_spec(env, **settings).observation_space.shape
    return shape is not None and len(shape) == 1


# ``choose_at_build``'s check and setting, one build at a time (a Tuner builds in threads).
_CHOICE_LOCK = threading.Lock()
# What ``choose_at_build`` put in ``PJRT_NPROC`` (None: nothing), until ``release_choice``.
_chosen: str | None = None


def choose_at_build(config: Any, algorithm_class: Any = None) -> int | None:
    """The automatic choice, made by the first algorithm built in the process (its build calls
    this before its first JAX call): a one-thread CPU client (``PJRT_NPROC=1``) where
    ``RLJAX_XLA_CPU_THREADS`` is unset or ``auto``, ``auto_xla_cpu_threads`` allows it, the
    algorithm's class was measured faster on it (``xla_cpu_one_thread = True``: PPO, APPO, DQN; SAC
    was slower) and ``dense_on_flat_envpool(config)``. Returns 1 then, None where nothing changed.
    Never raises: whatever it cannot decide leaves XLA's sizing. A later build finds the client
    created and changes nothing; ``release_choice`` takes the variable back out of the environment
    once the client exists, so child processes choose for themselves."""
    global _chosen
    try:
        with _CHOICE_LOCK:
            if not getattr(algorithm_class, "xla_cpu_one_thread", False):
                return None
            if _setting(os.environ) != AUTO or auto_xla_cpu_threads() is None:
                return None
            if not dense_on_flat_envpool(config):
                return None
            os.environ[PJRT_NPROC_ENV] = _chosen = "1"
            return 1
    except Exception:  # noqa: BLE001  (an unreadable config or setting: XLA's sizing stays)
        return None


def release_choice() -> None:
    """Removes the ``PJRT_NPROC`` that ``choose_at_build`` set (call it once JAX's client
    exists, which read it), so processes started later make their own choice."""
    global _chosen
    with _CHOICE_LOCK:
        if _chosen is not None and os.environ.get(PJRT_NPROC_ENV) == _chosen:
            del os.environ[PJRT_NPROC_ENV]
        _chosen = None


__all__ = [
    "AUTO_ONE_THREAD_MAX_CORES",
    "apply_at_import",
    "auto_xla_cpu_threads",
    "choose_at_build",
    "dense_on_flat_envpool",
    "release_choice",
    "set_xla_cpu_threads",
    "usable_cores",
    "xla_cpu_threads_at_import",
    "xla_cpu_threads_from_env",
]
