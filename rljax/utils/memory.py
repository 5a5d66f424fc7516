"""A memory estimate of a config, checked before anything is allocated.

A config (typed by a user, or read from someone's file) can ask for more memory than the
machine has: ``fcnet_hiddens=[65536, 65536]`` is 4.3 billion parameters, and
``num_envs_per_env_runner=2_000_000`` makes EnvPool abort the process from C++. Each config
class lists its large allocations as ``(setting, bytes)`` terms (``AlgorithmConfig.memory_terms``);
``check_fits`` compares their sum with the machine's memory and raises a ``ConfigError`` naming
the largest terms, in well under a second and before any env, array or program is built.

The estimates are upper-side approximations of what rljax allocates (parameters with their
gradients, optimizer moments and copies; rollout and replay storage; per-env overhead), not
exact counts: their job is to turn a crash or a swap storm into a clear message.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

from rljax.utils.errors import ConfigError

# Host memory an env takes besides its observations: EnvPool's CartPole measured ~7.5 KB per
# env (20,000 envs: 150 MB), gymnasium's Python envs a few KB; twice that leaves room.
PER_ENV_BYTES = 16 << 10
# Copies of the parameters an update keeps: parameters, gradients and Adam's two moments, and
# one more for the runners' (or the target network's) copy.
PARAM_COPIES = 5


def machine_memory_bytes() -> int:
    """Physical memory, or the cgroup's limit where it is lower (a container)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return int(total)


def space_bytes(space: object) -> int:
    """Bytes of one observation (or action) of a gymnasium space."""
    shape = getattr(space, "shape", None) or ()
    dtype = getattr(space, "dtype", None)
    itemsize = np.dtype(dtype).itemsize if dtype is not None else 4
    return int(math.prod(shape)) * itemsize


def flat_size(space: object) -> int:
    shape = getattr(space, "shape", None) or ()
    return int(math.prod(shape)) if shape else 1


def mlp_params(in_dim: int, hiddens: Sequence[int], out_dim: int) -> int:
    """Weights and biases of a dense stack ``in_dim -> hiddens -> out_dim``."""
    widths = [int(in_dim), *(int(h) for h in hiddens), int(out_dim)]
    return sum(a * b + b for a, b in zip(widths[:-1], widths[1:], strict=False))


def encoder_in_dim(observation_space: object) -> int:
    """Inputs of the first dense layer: the flat observation, or a conv stack's output for
    images (the Nature CNN's 3136 for 84x84; the conv weights themselves are small)."""
    shape = getattr(observation_space, "shape", None) or ()
    if len(shape) == 3:
        return 3136
    return flat_size(observation_space)


def fmt_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{int(n)} B"


def check_fits(terms: Sequence[tuple[str, int]], what: str, available: int | None = None) -> None:
    """Raises ``ConfigError`` when the terms add up to more than the machine's memory.

    Args:
      terms: ``(setting, bytes)`` pairs: what allocates, named as the user set it.
      what: What is being built, for the message (``"PPO on CartPole-v1"``).
      available: Bytes to compare with (default: ``machine_memory_bytes()``).
    """
    available = machine_memory_bytes() if available is None else available
    total = sum(max(0, int(b)) for _, b in terms)
    if total <= available:
        return
    largest = sorted(terms, key=lambda t: -t[1])[:3]
    parts = "; ".join(f"{name}: ~{fmt_bytes(b)}" for name, b in largest)
    raise ConfigError(
        f"{what} would need about {fmt_bytes(total)} of memory ({parts}), more than this "
        f"machine's {fmt_bytes(available)}; lower these settings"
    )
