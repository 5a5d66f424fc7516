"""Why one small jitted update runs several times slower in some fresh processes than others.

Each sample is a fresh Python process (``--child``) that compiles one PPO-sized update
(``xla_cpu_options.make_update``: two ``N``x``N`` tanh layers, policy and value heads,
minibatch 128, rljax's Adam, a scan of 30 minibatch steps), calls it ``--calls`` times and
reports its median and min milliseconds per gradient step. The parent launches the processes
under each condition in turn, round after round (the conditions' order rotating each round), so
a load on the machine that changes over time weighs on every condition alike, and prints per
condition the distribution over processes (sorted per-process medians, their min, median, max
and max/min ratio) with the load average seen at each launch.

Conditions, each testing one hypothesis against ``plain`` (XLA's defaults, two cores):

- ``aslr_off``: address-space randomisation off (``setarch -R``);
- ``one_core``: the process pinned to one core from its start (``taskset``): XLA sizes its
  intra-op thread pool (``tf_XLAEigen`` threads) from the cores it may use, so one thread;
- ``pool1_two_cores``: started on one core (a pool of one thread), then every thread of the
  process allowed both cores again: the pool's size without the placement;
- ``pool2_one_core``: started on both cores (a pool of two), then every thread pinned to one
  core after the first compilation: the placement without the pool's size;
- ``arena_max_1``: glibc's ``MALLOC_ARENA_MAX=1``;
- ``jemalloc``, ``tcmalloc``: the allocator replaced (``LD_PRELOAD`` of ``--jemalloc`` /
  ``--tcmalloc``; left out when the library is not there);
- ``aslr_off_env_pad``: ASLR off and an environment variable of a random length (0-4095
  bytes): with the addresses fixed, this moves the stack (and what is aligned from it) only;
- ``rljax_options``: the update compiled with rljax's options for large programs
  (``rljax.utils.xla_options.LARGE_OPTIONS``), under ASLR and both cores as ``plain``.

Usage::

    python benchmarks/process_variance.py                       # about 8 minutes on 2 quiet cores
    python benchmarks/process_variance.py --rounds 4 --conditions plain aslr_off one_core
    python benchmarks/process_variance.py --hidden 64
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CONDITIONS = (
    "plain",
    "aslr_off",
    "one_core",
    "pool1_two_cores",
    "pool2_one_core",
    "arena_max_1",
    "jemalloc",
    "tcmalloc",
    "aslr_off_env_pad",
    "rljax_options",
)
DEFAULT_LIBS = "/work/xla-variance-libs/usr/lib/x86_64-linux-gnu"


def _set_affinity(cpus: set[int]) -> None:
    """Every thread of this process to ``cpus``."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cpus)


def _eigen_threads() -> int:
    """Threads of XLA's intra-op pool in this process (named ``tf_XLAEigen``)."""
    count = 0
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{tid}/comm") as f:
            count += f.read().strip() == "tf_XLAEigen"
    return count


def child(hidden: int, calls: int, affinity: str, options: str) -> dict[str, Any]:
    """One sample: compile the update, then time ``calls`` calls (ms per gradient step)."""
    import jax
    from xla_cpu_options import STEPS, make_update

    from rljax.utils import xla_options

    update, args = make_update(hidden)
    compiler_options = dict(xla_options.LARGE_OPTIONS) if options == "rljax" else None
    exe = jax.jit(update, compiler_options=compiler_options).lower(*args).compile()
    jax.block_until_ready(exe(*args))
    if affinity == "widen":
        _set_affinity(set(range(os.cpu_count() or 1)))
    elif affinity == "pin":
        _set_affinity({min(os.sched_getaffinity(0))})
    for _ in range(3):  # warm-up
        jax.block_until_ready(exe(*args))
    ms = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(exe(*args))
        ms.append(1e3 * (time.perf_counter() - start) / STEPS)
    return {
        "median_ms": round(statistics.median(ms), 4),
        "min_ms": round(min(ms), 4),
        "eigen_threads": _eigen_threads(),
        "cpus": sorted(os.sched_getaffinity(0)),
    }


def launch(
    condition: str, hidden: int, calls: int, libs: dict[str, str], rng: random.Random
) -> dict[str, Any]:
    """One fresh process under ``condition``: its report, and the load at its launch."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--hidden", str(hidden)]
    cmd += ["--calls", str(calls)]
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    prefix: list[str] = []
    arch = platform.machine()
    if condition in ("aslr_off", "aslr_off_env_pad"):
        prefix = ["setarch", arch, "-R"]
    if condition == "aslr_off_env_pad":
        env["RLJAX_ENV_PAD"] = "x" * rng.randrange(4096)
    if condition in ("one_core", "pool1_two_cores"):
        prefix = ["taskset", "-c", str(min(os.sched_getaffinity(0)))]
    if condition == "pool1_two_cores":
        cmd += ["--affinity", "widen"]
    if condition == "pool2_one_core":
        cmd += ["--affinity", "pin"]
    if condition == "arena_max_1":
        env["MALLOC_ARENA_MAX"] = "1"
    if condition in ("jemalloc", "tcmalloc"):
        env["LD_PRELOAD"] = libs[condition]
    if condition == "rljax_options":
        cmd += ["--options", "rljax"]
    load = os.getloadavg()[0]
    out = subprocess.run(prefix + cmd, env=env, capture_output=True, text=True, check=False)
    lines = [x for x in out.stdout.splitlines() if x.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"error": (out.stderr or out.stdout)[-500:], "load_1min": load}
    return {**json.loads(lines[-1]), "load_1min": round(load, 2)}


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [s for s in samples if "error" not in s]
    out: dict[str, Any] = {
        "processes": len(ok),
        "errors": [s["error"] for s in samples if "error" in s],
    }
    if not ok:
        return out
    medians = sorted(s["median_ms"] for s in ok)
    out.update(
        {
            # Each process's fastest call: less of the machine's load in it than the median.
            "per_process_min_ms": sorted(s["min_ms"] for s in ok),
            "per_process_median_ms": medians,
            "min": medians[0],
            "median": round(statistics.median(medians), 4),
            "max": medians[-1],
            "max_over_min": round(medians[-1] / medians[0], 2),
            "load_1min": [s["load_1min"] for s in ok],
            "eigen_threads": sorted({s["eigen_threads"] for s in ok}),
        }
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6, help="processes per condition")
    parser.add_argument("--calls", type=int, default=20, help="timed calls per process")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--conditions", nargs="+", default=list(CONDITIONS), choices=CONDITIONS)
    parser.add_argument("--jemalloc", default=f"{DEFAULT_LIBS}/libjemalloc.so.2")
    parser.add_argument("--tcmalloc", default=f"{DEFAULT_LIBS}/libtcmalloc_minimal.so.4")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--affinity", default="keep", help=argparse.SUPPRESS)
    parser.add_argument("--options", default="none", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.hidden, args.calls, args.affinity, args.options)))
        return

    from common import machine_info, save_report

    libs = {"jemalloc": args.jemalloc, "tcmalloc": args.tcmalloc}
    conditions = [c for c in args.conditions if c not in libs or os.path.exists(libs[c])]
    skipped = sorted(set(args.conditions) - set(conditions))
    rng = random.Random(args.seed)
    samples: dict[str, list[dict[str, Any]]] = {c: [] for c in conditions}
    for r in range(args.rounds):
        shift = r % len(conditions)
        for condition in conditions[shift:] + conditions[:shift]:  # rotating order
            print(f"round {r + 1}/{args.rounds}: {condition}", file=sys.stderr)
            samples[condition].append(launch(condition, args.hidden, args.calls, libs, rng))
        # The rounds so far, in case the run is cut short.
        partial = Path(args.out) / f"process_variance_{args.hidden}.partial.json"
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps({c: summarize(s) for c, s in samples.items()}, indent=2))
    report: dict[str, Any] = {
        "machine": machine_info(["jax", "jaxlib"]),
        "hidden": args.hidden,
        "calls": args.calls,
        "rounds": args.rounds,
        "skipped_conditions": skipped,
        "conditions": {c: summarize(s) for c, s in samples.items()},
    }
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    save_report(report, args.out, f"process_variance_{args.hidden}")


if __name__ == "__main__":
    main()
