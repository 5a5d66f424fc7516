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
# A gymnasium sub-env in its own process (gym_env_vectorize_mode="ASYNC", and each multi-agent
# env copy in ASYNC mode): a spawned worker (an interpreter with numpy and gymnasium imported,
# running CartPole) was measured at ~50 MB resident; 64 MB leaves room for a larger env.
ASYNC_PROCESS_BYTES = 64 << 20
# A runner thread: its stack, which glibc sizes by ``ulimit -s`` (8 MB on most Linux systems).
# Little of it is resident, so this is the upper side; the thread's vector env and fragment are
# counted by the env and batch terms.
RUNNER_THREAD_BYTES = 8 << 20
# The most runner threads a config may ask for: far above the cores of any one host (runners are
# threads of this process), well below the thousands of threads a file could otherwise start.
MAX_ENV_RUNNERS = 1024
# Bytes per element of an n-step sampling window ([batch, n_step]: the window's row indices and
# the gather index, int32; the gathered rewards and the discounted rewards, float32; the
# terminated, truncated and inside-window flags; the running count of ended steps, int32): what
# exists before XLA fuses any of it.
N_STEP_WINDOW_BYTES = 24


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


def _leaves(space: object) -> list[object] | None:
    """The sub-spaces of a Dict / Tuple space; None for other spaces."""
    subs = getattr(space, "spaces", None)
    if isinstance(subs, dict):
        return list(subs.values())
    if isinstance(subs, tuple | list):
        return list(subs)
    return None


def space_bytes(space: object) -> int:
    """Bytes of one observation (or action) of a gymnasium space."""
    leaves = _leaves(space)
    if leaves is not None:
        return sum(space_bytes(s) for s in leaves)
    shape = getattr(space, "shape", None) or ()
    dtype = getattr(space, "dtype", None)
    itemsize = np.dtype(dtype).itemsize if dtype is not None else 4
    return int(math.prod(shape)) * itemsize


def flat_size(space: object) -> int:
    leaves = _leaves(space)
    if leaves is not None:
        return sum(flat_size(s) for s in leaves)
    n = getattr(space, "n", None)
    if n is not None and not getattr(space, "shape", None):  # a Discrete leaf reads one-hot
        return int(n)
    shape = getattr(space, "shape", None) or ()
    return int(math.prod(shape)) if shape else 1


def mlp_params(in_dim: int, hiddens: Sequence[int], out_dim: int) -> int:
    """Weights and biases of a dense stack ``in_dim -> hiddens -> out_dim``."""
    widths = [int(in_dim), *(int(h) for h in hiddens), int(out_dim)]
    return sum(a * b + b for a, b in zip(widths[:-1], widths[1:], strict=False))


def actor_critic_params(
    observation_space: object,
    action_space: object,
    hiddens: Sequence[int],
    actor_outputs_per_action: int,
    num_critics: int,
) -> int:
    """An MLP actor (``actor_outputs_per_action`` outputs per action dimension) and
    ``num_critics`` MLP critics of (observation, action) -> value, on vector observations (SAC's
    and TD3's networks; their targets are counted with the optimizer's copies)."""
    obs, act = flat_size(observation_space), flat_size(action_space)
    actor = mlp_params(obs, hiddens, actor_outputs_per_action * act)
    return actor + num_critics * mlp_params(obs + act, hiddens, 1)


def is_image(observation_space: object) -> bool:
    """A 3-D observation, which the default networks read with a conv stack
    (``rljax.networks.models.is_image_space``)."""
    return len(getattr(observation_space, "shape", None) or ()) == 3


def image_hw(observation_space: object) -> tuple[int, int]:
    """``(height, width)`` of an image observation space, channels first when
    ``shape[0] < shape[-1]`` (EnvPool's ``[C, H, W]`` frames), as the networks read it."""
    from rljax.networks.models import image_size, is_channels_first

    shape = tuple(int(d) for d in getattr(observation_space, "shape", None) or ())
    return image_size(shape, is_channels_first(shape))


def image_head(observation_space: object, head_fcnet_hiddens: Sequence[int]) -> list[int]:
    """The head layers the default networks put on an image observation's conv stack:
    ``head_fcnet_hiddens``, or ``rljax.networks.models.default_image_head`` when empty."""
    from rljax.networks.models import default_image_head

    return list(head_fcnet_hiddens or default_image_head(*image_hw(observation_space)))


def conv_encoder(
    observation_space: object,
    conv_filters: Sequence[tuple[int, tuple[int, int], int]] | None,
    patches: bool = False,
) -> tuple[int, int, int]:
    """The conv stack the default networks build for an image observation, as counts.

    As ``rljax.networks.models._CNN`` builds it: ``conv_filters`` (or
    ``default_conv_filters`` of the image's size), VALID padding, channels first when
    ``shape[0] < shape[-1]`` (EnvPool's ``[C, H, W]`` frames).

    Returns:
      ``(parameters, features, activations)``: the conv weights and biases, the flat output
      that the first dense layer reads (3136 for the Nature CNN on 84x84 frames), and the
      floats one observation's pass makes (the float input and every layer's output; with
      ``patches``, also each layer's ``[H', W', kh * kw * C]`` slices, which the CPU form of a
      convolution, ``rljax.networks.models.patch_conv``, lays side by side and keeps for the
      kernel's gradient). A kernel larger than its input gives 0 features: the build itself
      then says what is wrong.
    """
    # Upward on purpose, when counting only: the default filters are read from the networks
    # that build them, so that the count cannot drift from the build.
    from rljax.networks.models import default_conv_filters, is_channels_first

    shape = tuple(int(d) for d in getattr(observation_space, "shape", None) or ())
    height, width = image_hw(observation_space)
    channels = shape[0] if is_channels_first(shape) else shape[-1]
    params = 0
    activations = height * width * channels
    for out, (kh, kw), stride in conv_filters or default_conv_filters(height, width):
        params += kh * kw * channels * out + out
        height = (height - kh) // stride + 1 if height >= kh else 0
        width = (width - kw) // stride + 1 if width >= kw else 0
        if patches:
            activations += height * width * kh * kw * channels
        channels = out
        activations += height * width * channels
    return params, height * width * channels, activations


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
