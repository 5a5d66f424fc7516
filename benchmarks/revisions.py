"""Two revisions of rljax side by side: the speed benchmarks run on each, interleaved, in one sitting.

A change to the execution layer must not slow training. This script checks out ``--base`` (any
git revision) into a temporary worktree and runs each benchmark on the base and on this
checkout's working tree one after the other, ``--rounds`` times in the order base, head, head,
base, ... (so a drift in the machine's load over the sitting falls on both sides alike). Every
benchmark prints one JSON object; from it this script keeps the speed figures (numbers under a
key that ends in ``steps_per_s``, ``env_calls_per_s`` or ``time_to_target_s``) and reports, per
figure, the values of each round, their medians and ``head / base``.

Usage::

    python benchmarks/revisions.py --base 586f6af                 # the default set, 1 round
    python benchmarks/revisions.py --base main~3 --rounds 2 --only ppo_cartpole dqn_cartpole

Each run uses this interpreter; the revision's own ``rljax`` and ``benchmarks/`` come first on
``PYTHONPATH``. Output: one JSON object on stdout (progress on stderr), also written to
``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# name -> arguments after the script path. Run lengths are cut so that one sitting of both
# revisions fits in about 20 minutes on 2 cores; the figures are rates, so they stay comparable.
BENCHMARKS: dict[str, list[str]] = {
    "ppo_cartpole": ["benchmarks/ppo_cartpole.py", "--max-timesteps", "200000"],
    "dqn_cartpole": ["benchmarks/dqn_cartpole.py", "--max-timesteps", "20000"],
    "sac_pendulum": ["benchmarks/sac_pendulum.py", "--max-timesteps", "6000"],
    "multi_agent_cartpole": ["benchmarks/multi_agent_cartpole.py", "--max-timesteps", "120000"],
    "sync_vs_async_quick": ["benchmarks/sync_vs_async.py", "--quick"],
    # Not in the default set: the episode hooks' replay beside the plain fused PPO run.
    "callbacks": ["benchmarks/callbacks_and_serving.py", "--parts", "a", "--rounds", "5"],
    # Not in the default set: part (b) in full (runner-thread sampling of EnvPool Atari, 8
    # configurations), where --quick's short runs are too noisy to compare revisions.
    "sync_vs_async_b": ["benchmarks/sync_vs_async.py", "--parts", "b"],
}
DEFAULT = [name for name in BENCHMARKS if name not in ("sync_vs_async_b", "callbacks")]
SPEED_SUFFIXES = ("steps_per_s", "env_calls_per_s", "time_to_target_s")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def speed_figures(report: Any, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of ``report`` whose key ends in one of ``SPEED_SUFFIXES``, by path."""
    out: dict[str, float] = {}
    if isinstance(report, dict):
        for key, value in report.items():
            path = f"{prefix}/{key}" if prefix else str(key)
            if key == "curve":
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if str(key).endswith(SPEED_SUFFIXES):
                    out[path] = float(value)
            else:
                out.update(speed_figures(value, path))
    elif isinstance(report, list):
        for i, value in enumerate(report):
            out.update(speed_figures(value, f"{prefix}/{i}"))
    return out


def last_json_object(text: str) -> Any:
    """The JSON object a benchmark printed last on stdout (it may print a table before it)."""
    start = text.find("{")
    while start != -1:
        try:
            return json.loads(text[start:])
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
    raise ValueError("no JSON object in the benchmark's output")


def run_one(tree: Path, args: list[str], out_dir: Path, timeout_s: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'benchmarks'}"}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *args, "--out", str(out_dir)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        return {"status": "failed", "wall_s": wall, "stderr_tail": proc.stderr[-2000:]}
    try:
        report = last_json_object(proc.stdout)
    except ValueError as e:
        return {"status": "failed", "wall_s": wall, "error": str(e)}
    failed = failed_parts(report)
    if failed:  # a variant that crashed in its own process, reported as such
        return {"status": "failed", "wall_s": wall, "failed_parts": failed}
    return {"status": "ok", "wall_s": wall, "figures": speed_figures(report)}


def failed_parts(report: Any, prefix: str = "") -> list[str]:
    """The paths of the parts of ``report`` whose ``status`` is ``"failed"``."""
    out: list[str] = []
    if isinstance(report, dict):
        if report.get("status") == "failed":
            out.append(prefix or "/")
        for key, value in report.items():
            out += failed_parts(value, f"{prefix}/{key}" if prefix else str(key))
    elif isinstance(report, list):
        for i, value in enumerate(report):
            out += failed_parts(value, f"{prefix}/{i}")
    return out


def order(rounds: int) -> list[str]:
    """base, head, head, base, base, head, ...: each side runs first in half of the rounds."""
    sides = []
    for r in range(rounds):
        sides += ["base", "head"] if r % 2 == 0 else ["head", "base"]
    return sides


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    values: dict[str, dict[str, list[float]]] = {}
    for side, results in runs.items():
        for result in results:
            for path, value in result.get("figures", {}).items():
                values.setdefault(path, {"base": [], "head": []})[side].append(value)
    out = {}
    for path, sides in sorted(values.items()):
        row: dict[str, Any] = dict(sides)
        if sides["base"] and sides["head"]:
            base, head = statistics.median(sides["base"]), statistics.median(sides["head"])
            row["median_base"], row["median_head"] = base, head
            row["head_over_base"] = head / base if base else None
        out[path] = row
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="the git revision to compare against")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=DEFAULT)
    p.add_argument("--timeout-s", type=float, default=900.0, help="per benchmark run")
    p.add_argument("--out", type=Path, default=Path("results") / "revisions.json")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds must be >= 1; got {args.rounds}")
    base_rev = subprocess.run(
        ["git", "rev-parse", "--verify", f"{args.base}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if base_rev.returncode != 0:
        p.error(f"--base {args.base!r} is not a revision of {ROOT}")
    head_rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    report: dict[str, Any] = {
        "benchmark": "revisions",
        "base": base_rev.stdout.strip(),
        "head": head_rev + " (working tree)",
        "rounds": args.rounds,
        "cpu_count": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "benchmarks": {},
    }
    with tempfile.TemporaryDirectory(prefix="rljax-base-") as tmp:
        base_tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base_tree), report["base"]],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            trees = {"base": base_tree, "head": ROOT}
            for name in args.only:
                runs: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
                for i, side in enumerate(order(args.rounds)):
                    log(f"{name}: run {i + 1}/{2 * args.rounds} on {side}")
                    out_dir = Path(tmp) / f"{name}-{side}-{i}"
                    runs[side].append(
                        run_one(trees[side], BENCHMARKS[name], out_dir, args.timeout_s)
                    )
                report["benchmarks"][name] = {
                    "command": " ".join(BENCHMARKS[name]),
                    "wall_s": {s: [r["wall_s"] for r in rs] for s, rs in runs.items()},
                    "failed": {s: [r for r in rs if r["status"] != "ok"] for s, rs in runs.items()},
                    "figures": summarize(runs),
                }
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base_tree)],
                cwd=ROOT,
                capture_output=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
