"""XLA CPU compiler options chosen per compiled program (``jax.jit(f, compiler_options=...)``).

XLA's CPU defaults suit large programs. rljax's programs are many small operations (an MLP of a
few hundred units on minibatches of a hundred rows), and for RLlib's default network (256x256)
some defaults cost several times the run time on a 2-core machine
(``benchmarks/xla_cpu_options.py``, ``benchmarks/rllib_defaults.py``). The options are given to
rljax's own jitted programs: the update, the act step, the fused rollout and training step of
PPO, APPO and IMPALA; the off-policy loop's programs of DQN, SAC and TD3 (the fused iteration,
the update cycle, the rollout, the runner threads' act step); multi-agent PPO's act step and
stacked updates; a population's rollout and update. The user's other JAX programs keep XLA's
defaults, and so does inference (``compute_single_action``).

Programs vmapped over policies or trials (multi-agent PPO's stacked updates, a population's
programs: ``resolve(..., stacked=True)``) get no options under ``"auto"``: with RLlib's 256x256
network a population of 4 PPO trials ran at 0.55x and 0.64x the env steps per second with
``LARGE_OPTIONS`` and multi-agent PPO (2 policies) at 0.85x and 0.92x, in two runs each
(``benchmarks/rllib_defaults.py``, the variants interleaved in one process); DQN's fused
iteration ran 1.56x faster with them, SAC's and TD3's within the noise of a busy machine.

Which options (``benchmarks/xla_cpu_options.py``: each option compiled into a copy of one
program with ``compiler_options``, the copies timed interleaved in one process):

- ``xla_cpu_use_fusion_emitters``: XLA's newer fusion code generation. Honoured per program:
  the optimized HLO changes, and PPO's training step at RLlib's defaults (256x256) ran in
  0.30 s instead of 0.58 s (min; median 0.78 s instead of 2.04 s) beside the copy compiled
  without options in the same process, on an AMD EPYC machine; on an Intel Xeon the same step
  ran at 0.92x with it (0.552 s against 0.507 s). ``False`` slows the programs of smaller
  networks (a 64x64 update step: 0.081 ms instead of 0.043 ms; 128x128: mixed), so ``"auto"``
  turns it off only for programs whose parameters number at least ``LARGE_PROGRAM_PARAMS``, and
  only where a calibration on this machine (``calibrate_large``: a 256x256 MLP's scanned Adam
  steps compiled both ways, about 2 s, once per process, skipped where ``XLA_FLAGS`` sets the
  option) finds it faster.
- ``xla_cpu_use_xnnpack``, ``xla_cpu_multi_thread_eigen``,
  ``xla_cpu_parallel_codegen_split_count``, ``xla_cpu_enable_concurrency_optimized_scheduler``:
  taken per program, but no measurable gain on rljax's programs; rljax leaves them alone.
- ``xla_cpu_use_thunk_runtime`` is refused per program ("No such compile option"); the size of
  the CPU client's intra-op thread pool is fixed when JAX creates the client and is no
  compile option (``intra_op_parallelism_threads`` is refused per program too):
  ``rljax.utils.xla_threads`` sizes it then, for the whole process (one thread where the first
  algorithm built is PPO, APPO or DQN with a dense model on a flat EnvPool task on a machine of
  at most 2 cores, or as ``RLJAX_XLA_CPU_THREADS`` says). rljax sets no process-wide XLA flag
  by itself.

The setting (``config.debugging(xla_cpu_options=...)``): ``"auto"`` (the default: the table
above, on the CPU backend only), ``None`` (no options: XLA's defaults), or a dict of options
given to every program as they are (on the CPU backend only). A flag the user set in
``XLA_FLAGS`` is never overridden: it is left out of the options.

The algorithm resolves its options once (``resolve``) and builds its programs inside
``applied(...)``; the jit sites read them with ``current(kind)``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

import jax
import numpy as np

from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError

Options = dict[str, str | bool | int | float]

# Programs whose parameters (of all networks, in elements) reach this get ``LARGE_OPTIONS``
# under "auto": RLlib's default 256x256 network has about 68,000, the tuned 64x64 ones about
# 9,000.
LARGE_PROGRAM_PARAMS = 32_768
LARGE_OPTIONS: Options = {"xla_cpu_use_fusion_emitters": False}
SMALL_OPTIONS: Options = {}

# The kinds of programs the jit sites ask for.
KINDS = ("update", "act", "rollout", "train_step")

# ``LARGE_OPTIONS`` must beat XLA's defaults by this much on the calibration program to be used.
CALIBRATION_MARGIN = 0.05
# What the process's calibration measured (``calibrate_large``), for reports; None before it.
last_calibration: dict[str, Any] | None = None

_CURRENT: contextvars.ContextVar[Mapping[str, Options | None] | None] = contextvars.ContextVar(
    "rljax_xla_cpu_options", default=None
)


def check_setting(name: str, value: Any) -> str | Options | None:
    """The setting's check: ``"auto"``, None, or a dict of option names to values."""
    if value is None or value == "auto":
        return value
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        bad = [k for k, v in value.items() if not isinstance(v, (str, bool, int, float))]
        if not bad:
            return dict(value)
    raise ConfigError(
        f'{name}={describe(value)}; use "auto", None or a dict of XLA option names to '
        "str, bool, int or float values"
    )


def _flags(xla_flags: str | None) -> list[str]:
    """``xla_flags`` (None: this process's ``XLA_FLAGS``) split into its whitespace-separated
    flags, as XLA splits it."""
    return (os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags).split()


def _flag_name(flag: str) -> str:
    """``--name=value`` -> ``name``."""
    return flag.lstrip("-").split("=", 1)[0]


def user_flags(xla_flags: str | None = None) -> set[str]:
    """The names of the flags set in ``XLA_FLAGS`` (or in ``xla_flags``), without dashes."""
    names = {_flag_name(f) for f in _flags(xla_flags) if f.startswith("-")}
    # A boolean flag may be turned off as ``--noname``.
    return names | {n[2:] for n in names if n.startswith("no")}


def param_count(params: Any) -> int:
    """The number of elements in the arrays of ``params``."""
    return int(sum(np.prod(np.shape(x)) for x in jax.tree.leaves(params)))


def resolve(
    setting: str | Mapping[str, Any] | None,
    params: Any,
    *,
    backend: str | None = None,
    xla_flags: str | None = None,
    stacked: bool = False,
) -> dict[str, Options | None]:
    """The options of each kind of program (``KINDS``) of an algorithm with ``params``.

    Args:
      setting: ``"auto"``, None or a dict (the module docstring).
      params: The parameters the programs train or act with (their size picks the options).
      backend: The backend the programs run on; None: JAX's default backend. Not "cpu": none.
      xla_flags: ``XLA_FLAGS`` as the user set it; None: the environment's.
      stacked: The programs are vmapped over policies or trials (multi-agent PPO's stacked
        updates, a population's programs): ``"auto"`` gives them none (``LARGE_OPTIONS``
        made them slower); a dict of options still applies.

    Returns:
      ``kind -> options`` (None: XLA's defaults), the flags set in ``XLA_FLAGS`` left out.
    """
    if setting is None or (backend or jax.default_backend()) != "cpu":
        return dict.fromkeys(KINDS)
    if setting == "auto" and stacked:
        return dict.fromkeys(KINDS)
    taken = user_flags(xla_flags)
    if setting == "auto":
        large = param_count(params) >= LARGE_PROGRAM_PARAMS
        # The calibration (about 2 s) only chooses LARGE_OPTIONS' values: where XLA_FLAGS sets
        # every one of them, its choice would be left out below, so it is not measured.
        calibrate = large and not set(LARGE_OPTIONS) <= taken
        chosen: Options = dict(calibrate_large() if calibrate else SMALL_OPTIONS)
    else:
        chosen = dict(check_setting("xla_cpu_options", setting) or {})  # type: ignore[arg-type]
    options = {k: v for k, v in chosen.items() if k not in taken} or None
    return dict.fromkeys(KINDS, options)


@functools.cache
def calibrate_large(rounds: int = 7) -> Options:
    """``LARGE_OPTIONS`` if they make a large program faster on this machine, else XLA's
    defaults (``{}``); measured once per process.

    Whether they help depends on the CPU: on the AMD EPYC machines rljax was tuned on, PPO's
    training step at RLlib's defaults (256x256) ran 4.7x faster with them; on an Intel Xeon
    it ran at 0.92x (``benchmarks/xla_cpu_options.py --parts rljax``). So "auto" times a small
    stand-in, a 256x256 MLP's Adam steps on minibatches of 128 in a ``lax.scan`` (RLlib's
    default update), compiled both ways in this process and called in turn ``rounds`` times
    (about two seconds), and takes the options only where their best time beats the
    defaults' by ``CALIBRATION_MARGIN``. ``last_calibration`` holds what it measured."""
    global last_calibration
    import optax  # the calibration's optimizer, as the updates'

    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    params = {
        "w1": jax.random.normal(k1, (8, 256)) * 0.1,
        "w2": jax.random.normal(k2, (256, 256)) * 0.06,
        "w3": jax.random.normal(k3, (256, 3)) * 0.06,
    }
    xs = jax.random.normal(k4, (10, 128, 8))
    opt = optax.adam(1e-4)

    def steps(p: Any, s: Any, xs: Any) -> Any:
        def body(carry: Any, x: Any) -> Any:
            p, s = carry

            def loss(p: Any) -> Any:
                h = jax.numpy.tanh(jax.numpy.tanh(x @ p["w1"]) @ p["w2"])
                return jax.numpy.mean(jax.numpy.square(h @ p["w3"]))

            g = jax.grad(loss)(p)
            u, s = opt.update(g, s, p)
            return (optax.apply_updates(p, u), s), None

        return jax.lax.scan(body, (p, s), xs)[0]

    state = opt.init(params)
    variants = {
        "defaults": jax.jit(steps),
        "large_options": jax.jit(steps, compiler_options=dict(LARGE_OPTIONS)),
    }
    best = {}
    for name, fn in variants.items():
        jax.block_until_ready(fn(params, state, xs))  # compiles
        best[name] = float("inf")
    for _ in range(rounds):
        for name, fn in variants.items():
            t = time.perf_counter()
            jax.block_until_ready(fn(params, state, xs))
            best[name] = min(best[name], time.perf_counter() - t)
    use = best["large_options"] < (1.0 - CALIBRATION_MARGIN) * best["defaults"]
    last_calibration = {
        "defaults_s": best["defaults"],
        "large_options_s": best["large_options"],
        "chosen": "large_options" if use else "defaults",
    }
    return dict(LARGE_OPTIONS) if use else {}


@contextlib.contextmanager
def applied(options: Mapping[str, Options | None] | None) -> Iterator[None]:
    """The block's jit sites take ``options`` (from ``resolve``; None: XLA's defaults)."""
    token = _CURRENT.set(options)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current(kind: str) -> Options | None:
    """The compiler options of a ``kind`` program built now (None: XLA's defaults), for
    ``jax.jit(..., compiler_options=current(kind))``."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}; use one of {KINDS}")
    options = _CURRENT.get()
    found = None if options is None else options.get(kind)
    return dict(found) if found else None


HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"


def with_host_devices(devices: int, xla_flags: str | None = None) -> str:
    """``XLA_FLAGS`` for a process with ``devices`` CPU devices: ``xla_flags`` (None: this
    process's ``XLA_FLAGS``) with any host device count replaced by ``devices``, its other flags
    kept. Set it in a child process's environment before JAX is imported there.

    >>> with_host_devices(4, "--xla_force_host_platform_device_count=2 --xla_dump_to=/tmp/x")
    '--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=4'
    """
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"devices={describe(devices)}; use an int of at least 1")
    name = _flag_name(HOST_DEVICES_FLAG)
    kept = [f for f in _flags(xla_flags) if _flag_name(f) != name]
    return " ".join([*kept, f"{HOST_DEVICES_FLAG}={devices}"])


__all__ = [
    "CALIBRATION_MARGIN",
    "HOST_DEVICES_FLAG",
    "KINDS",
    "LARGE_OPTIONS",
    "LARGE_PROGRAM_PARAMS",
    "Options",
    "SMALL_OPTIONS",
    "applied",
    "calibrate_large",
    "check_setting",
    "current",
    "param_count",
    "resolve",
    "user_flags",
    "with_host_devices",
]
