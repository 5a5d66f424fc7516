"""Shared runner for the train-to-target benchmarks (``dqn_cartpole.py``, ``sac_pendulum.py``,
``td3_pendulum.py``, ``multi_agent_cartpole.py``).

Each variant trains in its own subprocess, so that it pays for, and measures, its own interpreter
start, imports and compilation. ``rljax`` always runs; the comparison (``rllib``, or ``sb3`` for
``td3_pendulum.py``) runs with ``--compare`` when it is importable (otherwise it is reported as
``{"status": "not installed"}``, or, where the script names an install command, ``--compare``
stops with it; nothing is installed). RLlib is built by the same chained config function as
rljax: only the import differs.

Per variant: ``throughput_env_steps_per_s`` (env steps sampled, with learning at the configured
replay ratio, per second of ``train()`` after the first iteration, which holds the compilation),
``time_to_target_s`` (process creation to the end of the first iteration whose
``episode_return_mean`` reaches the target), ``env_steps_to_target``, and the per-iteration curve.
The script prints one JSON object and writes it, with a plot, to ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import machine_info

SCRIPT_START = time.time()
REQUIREMENTS = {"rllib": ("ray", "torch"), "sb3": ("stable_baselines3", "torch")}
DISTRIBUTIONS = {"rllib": ["ray", "torch"], "sb3": ["stable-baselines3", "torch"]}


def process_start_time() -> float:
    """When this process was created (``/proc``), else the top of this module."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - (uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return SCRIPT_START


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def episode_return_mean(result: dict[str, Any]) -> float:
    return result["env_runners"].get("episode_return_mean", math.nan)


def train_loop(
    algo: Any,
    target: float,
    max_timesteps: int,
    name: str,
    score: Callable[[dict[str, Any]], float] = episode_return_mean,
) -> dict[str, Any]:
    """Trains until ``score(result)`` reaches ``target`` or ``max_timesteps`` env steps."""
    start = process_start_time()
    curve = []
    while True:
        t0 = time.perf_counter()
        result = algo.train()
        iter_s = time.perf_counter() - t0
        steps = int(result["num_env_steps_sampled_lifetime"])
        ret = _finite(score(result))
        updates = result.get("learners", {}).get("default_policy", {}).get("num_updates")
        curve.append(
            {
                "wall_s": time.time() - start,
                "iter_s": iter_s,
                "env_steps": steps,
                "return": ret,
                "updates": updates,
            }
        )
        if len(curve) % 10 == 1:
            print(
                f"{name}: steps {steps} return {ret} wall {curve[-1]['wall_s']:.1f}s",
                file=sys.stderr,
                flush=True,
            )
        if (ret is not None and ret >= target) or steps >= max_timesteps:
            break
    later = curve[1:]
    later_s = sum(p["iter_s"] for p in later)
    hit = next((p for p in curve if p["return"] is not None and p["return"] >= target), None)
    return {
        "status": "ok",
        "first_iteration_s": curve[0]["iter_s"],
        "throughput_env_steps_per_s": (curve[-1]["env_steps"] - curve[0]["env_steps"]) / later_s
        if later_s > 0
        else None,
        "reached_target": hit is not None,
        "time_to_target_s": hit["wall_s"] if hit else None,
        "env_steps_to_target": hit["env_steps"] if hit else None,
        "final_return": curve[-1]["return"],
        "env_steps_total": curve[-1]["env_steps"],
        "curve": curve,
    }


def _missing(variant: str) -> list[str]:
    return [m for m in REQUIREMENTS.get(variant, ()) if importlib.util.find_spec(m) is None]


def _spawn(script: str, variant: str, extra: list[str]) -> dict[str, Any]:
    missing = _missing(variant)
    if missing:
        return {"status": "not installed", "missing": missing}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, script, "--variant", variant, "--result-file", str(out), *extra]
        print(f"== {variant}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr)
        if proc.returncode != 0 or not out.exists():
            return {"status": "failed", "returncode": proc.returncode}
        return json.loads(out.read_text())


def _plot(results: dict[str, Any], target: float, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, r in results.items():
        if r.get("status") != "ok":
            continue
        pts = [p for p in r["curve"] if p["return"] is not None]
        axes[0].plot([p["wall_s"] for p in pts], [p["return"] for p in pts], label=name)
        axes[1].plot([p["env_steps"] for p in pts], [p["return"] for p in pts], label=name)
    for ax, xlabel in zip(axes, ("wall time since process start (s)", "env steps"), strict=True):
        ax.axhline(target, color="grey", linestyle=":")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("episode_return_mean")
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(
    name: str,
    script: str,
    settings: dict[str, Any],
    build: Callable[[str, dict[str, Any]], Any],
    extra_metrics: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None,
    score: Callable[[dict[str, Any]], float] = episode_return_mean,
    compare: str = "rllib",
    install: str | None = None,
    variants: tuple[str, ...] = ("rljax",),
) -> None:
    """The command line shared by the off-policy benchmarks.

    ``build(variant, settings)`` returns an algorithm (``train()``/``stop()``) for each name of
    ``variants`` (rljax's runs; the first is compared with ``compare``) and for ``compare``
    ("rllib" or "sb3"); ``extra_metrics(algo, result)`` adds figures measured inside
    the first variant's process. ``install``: the command that installs the comparison; given, a
    ``--compare`` that cannot run it exits with that command instead of reporting it missing.
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compare", action="store_true", help=f"also run {compare} when installed")
    p.add_argument("--max-timesteps", type=int, default=settings["max_timesteps"])
    p.add_argument("--out", default="benchmark_results")
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--result-file", help=argparse.SUPPRESS)
    args = p.parse_args()
    s = {**settings, "max_timesteps": args.max_timesteps}
    if args.variant:  # child process
        algo = build(args.variant, s)
        try:
            result = train_loop(algo, s["target_return"], s["max_timesteps"], args.variant, score)
            if extra_metrics is not None and args.variant == variants[0]:
                result.update(extra_metrics(algo, result))
        finally:
            algo.stop()
        Path(args.result_file).write_text(json.dumps(result))
        return
    if args.compare and install and _missing(compare):
        p.exit(
            2,
            f"--compare runs {compare}, which needs {' and '.join(_missing(compare))}: {install}\n",
        )
    extra = ["--max-timesteps", str(args.max_timesteps)]
    results = {v: _spawn(script, v, extra) for v in variants}
    if args.compare:
        results[compare] = _spawn(script, compare, extra)
    packages = ["rljax", "jax", "jaxlib", "flax", "optax", "envpool", "gymnasium"]
    if args.compare:
        packages += DISTRIBUTIONS[compare]
    summary: dict[str, Any] = {
        "benchmark": name,
        "settings": s,
        "machine": machine_info(packages),
        "results": results,
    }
    r, b = results[variants[0]], results.get(compare, {})
    if r.get("status") == "ok" and b.get("status") == "ok":
        summary["speedup_throughput"] = (
            r["throughput_env_steps_per_s"] / b["throughput_env_steps_per_s"]
        )
        if r["time_to_target_s"] and b["time_to_target_s"]:
            summary["time_to_target_ratio"] = r["time_to_target_s"] / b["time_to_target_s"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(summary, indent=2))
    _plot(results, s["target_return"], out / f"{name}.png", name)
    printable = {
        **summary,
        "results": {
            k: {kk: vv for kk, vv in v.items() if kk != "curve"} for k, v in results.items()
        },
    }
    print(json.dumps(printable, indent=2))
