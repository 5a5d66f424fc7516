"""Memory and speed of an Atari replay buffer: stacked uint8 observations vs one frame per step.

An Atari transition from EnvPool holds ``obs`` and ``next_obs``, each a uint8 stack [4, 84, 84],
plus action (int32), reward (float32), terminated and truncated (bool). Two storage modes:

* ``stacked``: ``make_uniform_buffer`` (``benchmarks/stacked_buffer.py``, a plain ring buffer) over items ``{obs, next_obs, action, reward,
  terminated, truncated}``: 56,458 bytes per transition. At ``--capacity`` (1,000,000 by default)
  that is about 56 GB, so it is *computed* from the state's shapes (``jax.eval_shape``), never
  allocated. Its add/sample times are measured on a small buffer (``--stacked-timing-capacity``).
* ``frame_stack``: ``rljax.replay.make_frame_stack_buffer`` (and its prioritized twin), which
  stores one 84 x 84 frame per env step plus 4 offset bytes and rebuilds both stacks at sample
  time. It is *allocated* at ``--capacity`` and filled with ``--fill-steps`` env steps of a
  synthetic stream (``--num-envs`` sub-envs, frames that slide like EnvPool's, an episode end
  every ``--episode-len`` steps). The stream repeats one episode per sub-env, so its batches are
  made once (``episode_len + 1`` env steps on device) and cycled without a seam.

Reported: bytes per transition (the state's bytes over its capacity), the arrays' ``nbytes``, the
process's resident memory (``VmRSS``) before allocating, after ``init``, after filling, and its
peak (``VmHWM``), all from ``/proc/self/status`` (``psutil`` where ``/proc`` is missing), and the
median wall time of jitted ``add`` (one env step of ``--num-envs`` sub-envs, the state donated so
the update is in place) and ``sample`` (``--batch-size`` transitions) calls on the CPU, after
warm-up. The uniform and prioritized frame buffers are allocated one after the other, so the
peak is one buffer's.

Usage::

    python benchmarks/replay_memory.py            # 1M transitions: allocates about 7.1 GB
    python benchmarks/replay_memory.py --quick    # 20,000 transitions, a few seconds
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from rljax.replay import (  # noqa: E402
    kary_tree,
    make_frame_stack_buffer,
    make_prioritized_frame_stack_buffer,
)
from rljax.replay.frame_stack import frame_stack_nbytes_per_transition  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stacked_buffer import make_uniform_buffer  # noqa: E402

STACK, HEIGHT, WIDTH = 4, 84, 84
MB = 1 << 20


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def memory() -> dict[str, float]:
    """Resident (``VmRSS``) and peak resident (``VmHWM``) memory of this process, in MiB."""
    try:
        with open("/proc/self/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return {
            "rss_mb": int(fields["VmRSS"].split()[0]) / 1024,
            "peak_rss_mb": int(fields["VmHWM"].split()[0]) / 1024,
        }
    except (OSError, KeyError, ValueError):
        import psutil

        info = psutil.Process().memory_info()
        peak = getattr(info, "peak_wset", None) or info.rss  # peak only where the OS keeps it
        return {"rss_mb": info.rss / MB, "peak_rss_mb": peak / MB}


def nbytes(tree: Any) -> int:
    """Bytes of every array (or ShapeDtypeStruct) in a pytree."""
    return int(
        sum(np.prod(x.shape, dtype=np.int64) * x.dtype.itemsize for x in jax.tree.leaves(tree))
    )


def fields_example() -> dict[str, Any]:
    return {
        "action": np.int32(0),
        "reward": np.float32(0),
        "terminated": np.bool_(False),
        "truncated": np.bool_(False),
    }


class SyntheticStream:
    """EnvPool-like stacks for K sub-envs: frames slide; an episode starts with one frame x 4.

    Sub-env ``k`` is ``k * episode_len // K`` steps into its episode at step 0, so the ends are
    spread over steps, and replays the same episode forever (the stream has period
    ``episode_len + 1``: the episode's steps and the auto-reset step). Frames come from a pool of
    random frames: their content does not change the cost; only where frames repeat matters, and
    they repeat where EnvPool's do.
    """

    def __init__(self, num_envs: int, episode_len: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.pool = rng.integers(0, 256, size=(257, HEIGHT, WIDTH), dtype=np.uint8)
        self.num_envs = num_envs
        self.episode_len = episode_len
        self.period = episode_len + 1
        self.phase = np.arange(num_envs) * episode_len // num_envs

    def step(self, t: int) -> dict[str, np.ndarray]:
        k = np.arange(self.num_envs)
        # Step in the episode; episode_len is the auto-reset step (the final observation).
        pos = (t + self.phase) % self.period
        frame_ids = (k * 7)[:, None] + np.maximum(pos[:, None] - np.arange(STACK - 1, -1, -1), 0)
        obs = self.pool[frame_ids % len(self.pool)]
        return {
            "obs": obs,
            "action": (t + k).astype(np.int32) % 6,
            "reward": np.zeros(self.num_envs, np.float32),
            "terminated": pos == self.episode_len - 1,
            "truncated": np.zeros(self.num_envs, bool),
            "valid": pos != self.episode_len,
        }


def time_calls(fn, n: int) -> dict[str, float]:
    """Median and mean milliseconds of ``n`` calls of ``fn()`` (which must block)."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": statistics.median(times), "mean_ms": statistics.fmean(times), "calls": n}


def time_add_and_sample(add, sample, state, batches, args, warm_adds: int, start: int = 0):
    """Times jitted ``add`` (cycling through ``batches`` from ``start``) and ``sample``.

    Returns:
      The final state, and the timings of ``add`` and ``sample`` (``time_calls``).
    """
    box = {"state": state, "t": start}
    keys = iter(jax.random.split(jax.random.key(0), args.timing_calls + 1))

    def one_add():
        box["state"] = add(box["state"], batches[box["t"] % len(batches)])
        box["t"] += 1
        jax.block_until_ready(box["state"])

    def one_sample():
        jax.block_until_ready(sample(box["state"], next(keys), args.batch_size))

    for _ in range(warm_adds):
        one_add()
    one_sample()
    add_t = time_calls(one_add, args.timing_calls)
    sample_t = time_calls(one_sample, args.timing_calls)
    return box["state"], add_t, sample_t


def bench_frame_buffer(args, prioritized: bool) -> dict[str, Any]:
    example = {"obs": np.zeros((STACK, HEIGHT, WIDTH), np.uint8), **fields_example()}
    make = make_prioritized_frame_stack_buffer if prioritized else make_frame_stack_buffer
    buffer = make(example, args.num_envs, args.capacity)
    before = memory()
    state = jax.jit(buffer.init)()
    jax.block_until_ready(state)
    after_init = memory()
    add = jax.jit(buffer.add, donate_argnums=0)
    sample = jax.jit(buffer.sample, static_argnums=2)
    stream = SyntheticStream(args.num_envs, args.episode_len)
    batches = [jax.device_put(stream.step(t)) for t in range(stream.period)]

    t0 = time.perf_counter()
    for t in range(args.fill_steps):
        state = add(state, batches[t % len(batches)])
    jax.block_until_ready(state)
    fill_s = time.perf_counter() - t0
    after_fill = memory()

    state, add_t, sample_t = time_add_and_sample(
        add, sample, state, batches, args, warm_adds=1, start=args.fill_steps
    )
    slots = args.capacity
    result = {
        "capacity": slots,
        "allocated": True,
        "arrays_nbytes": nbytes(state),
        "bytes_per_transition": nbytes(state) / slots,
        "filled_env_steps_per_env": int(state.size.max()),
        "filled_slots": int(state.size.sum()),
        "sampleable_slots": None if prioritized else int(kary_tree.total(state.sum_tree)),
        "memory_mb": {
            "rss_before_init": before["rss_mb"],
            "rss_after_init": after_init["rss_mb"],
            "rss_after_fill": after_fill["rss_mb"],
            "peak_rss": after_fill["peak_rss_mb"],
            "arrays": nbytes(state) / MB,
        },
        "fill_s": fill_s,
        "add": add_t,
        "sample": sample_t,
    }
    del state
    gc.collect()
    return result


def bench_stacked(args) -> dict[str, Any]:
    obs = np.zeros((STACK, HEIGHT, WIDTH), np.uint8)
    example = {"obs": obs, "next_obs": obs, **fields_example()}
    full = jax.eval_shape(make_uniform_buffer(example, args.capacity).init)
    buffer = make_uniform_buffer(example, args.stacked_timing_capacity)
    state = jax.jit(buffer.init)()
    add = jax.jit(buffer.add, donate_argnums=0)
    sample = jax.jit(buffer.sample, static_argnums=2)
    stream = SyntheticStream(args.num_envs, args.episode_len)
    steps = [stream.step(t) for t in range(stream.period + 1)]
    batches = [
        jax.device_put(
            {
                "obs": steps[t]["obs"],
                "next_obs": steps[t + 1]["obs"],
                **{k: steps[t][k] for k in fields_example()},
            }
        )
        for t in range(stream.period)
    ]
    # Fill the small buffer once before timing.
    warm = max(1, args.stacked_timing_capacity // args.num_envs)
    state, add_t, sample_t = time_add_and_sample(add, sample, state, batches, args, warm)
    timing_nbytes = nbytes(state)
    del state
    gc.collect()
    return {
        "capacity": args.capacity,
        "allocated": False,
        "arrays_nbytes": nbytes(full),
        "bytes_per_transition": nbytes(full) / args.capacity,
        "memory_mb": {"arrays": nbytes(full) / MB, "note": "computed from shapes, not allocated"},
        "timing_capacity": args.stacked_timing_capacity,
        "timing_arrays_nbytes": timing_nbytes,
        "add": add_t,
        "sample": sample_t,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small capacity and few calls")
    p.add_argument("--capacity", type=int, default=1_000_000)
    p.add_argument("--num-envs", type=int, default=32, help="sub-envs: the add batch")
    p.add_argument("--batch-size", type=int, default=32, help="the sample batch")
    p.add_argument("--fill-steps", type=int, default=4_000, help="env steps added before timing")
    p.add_argument("--episode-len", type=int, default=127)
    p.add_argument("--timing-calls", type=int, default=200)
    p.add_argument("--stacked-timing-capacity", type=int, default=10_016)
    p.add_argument("--skip-prioritized", action="store_true")
    p.add_argument("--out", default=None, help="also write the JSON to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.capacity = 20_000
        args.fill_steps = 300
        args.timing_calls = 20
        args.stacked_timing_capacity = 2_048
        args.episode_len = 31
    args.capacity -= args.capacity % args.num_envs
    return args


def run(args: argparse.Namespace) -> dict[str, Any]:
    example = {"obs": np.zeros((STACK, HEIGHT, WIDTH), np.uint8), **fields_example()}
    report: dict[str, Any] = {
        "settings": vars(args),
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "jax": jax.__version__,
            "device": str(jax.devices()[0]),
        },
        "bytes_per_transition_formula": frame_stack_nbytes_per_transition(example, args.capacity),
    }
    log(f"stacked: computing {args.capacity} transitions, timing {args.stacked_timing_capacity}")
    report["stacked"] = bench_stacked(args)
    log(f"frame_stack: allocating {args.capacity} slots ({args.num_envs} sub-envs)")
    report["frame_stack"] = bench_frame_buffer(args, prioritized=False)
    if not args.skip_prioritized:
        log("frame_stack_prioritized")
        report["frame_stack_prioritized"] = bench_frame_buffer(args, prioritized=True)
    report["ratio_stacked_over_frame_stack"] = (
        report["stacked"]["bytes_per_transition"] / report["frame_stack"]["bytes_per_transition"]
    )
    report["peak_rss_mb"] = memory()["peak_rss_mb"]
    return report


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    report = run(args)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
