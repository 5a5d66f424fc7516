"""APPO on Atari Pong (EnvPool's Pong-v5, Nature CNN): env steps/s with learning, and a curve.

rljax's APPO trains on the fused path: EnvPool's Pong is stepped inside the jitted program
(``num_env_runners=0``), 32 sub-envs x 50 steps per update. EnvPool's Pong-v5 gives the usual
DeepMind preprocessing (84x84 grey, 4 stacked frames, frame skip 4, up to 30 no-op starts, no
sticky actions, the minimal action set); rljax adds reward clipping and episodic life (no-ops in
Pong, whose rewards are +-1 and which has no lives). The network is the Nature CNN (32x8x8/4,
64x4x4/2, 64x3x3/1, one shared trunk for policy and value) with a 256-unit head. The training
settings follow RLlib's tuned APPO Pong example where rljax has them: lr 5e-4, ``vf_loss_coeff``
1.0, entropy 0.01 (RLlib anneals it to 0 over 3M steps; rljax takes a constant),
``target_network_update_freq`` 2 (RLlib's unit: 2 x N x K gradient steps), clip 0.4, V-trace
thresholds 1, grad clip 40, and APPO's circular buffer (each batch serves 2 gradient steps, as
RLlib's). The return is the
game's score (-21 to 21), averaged over the episodes finished in an iteration.

Modes::

    python benchmarks/appo_atari.py                  # throughput: env steps/s and compile time
    python benchmarks/appo_atari.py --quick          # smoke run: 4 sub-envs, 2 iterations
    python benchmarks/appo_atari.py --learn --max-timesteps 2000000 --max-minutes 90
    python benchmarks/appo_atari.py --plot-only      # redraw PNG and JSON from the curve file

``--learn`` appends one JSON line per iteration to ``OUT/appo_atari_curve.jsonl`` as it goes
(a killed run keeps its curve) and writes ``OUT/appo_atari.png`` and ``OUT/appo_atari.json`` when
it stops (``--max-timesteps``, ``--max-minutes``, SIGTERM or Ctrl-C). Progress goes to stderr,
the JSON report to stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from common import machine_info

from rljax.networks.models import NATURE_FILTERS

NAME = "appo_atari"
PACKAGES = ["rljax", "jax", "jaxlib", "flax", "optax", "envpool", "gymnasium"]
SETTINGS: dict[str, Any] = {
    "env": "Pong-v5",
    "env_config": {"repeat_action_probability": 0.0, "full_action_space": False},
    "seed": 0,
    "num_envs": 32,
    "rollout_fragment_length": 50,
    "lr": 5e-4,
    "vf_loss_coeff": 1.0,
    "entropy_coeff": 0.01,
    "target_network_update_freq": 2,
    "grad_clip": 40.0,
    "model_config": {
        "conv_filters": [[f, list(k), st] for f, k, st in NATURE_FILTERS],
        "conv_activation": "relu",
        "head_fcnet_hiddens": [256],
        "vf_share_layers": True,
    },
}
QUICK = {"num_envs": 4, "rollout_fragment_length": 16}


def build(s: dict[str, Any]) -> Any:
    from rljax.algorithms.appo import APPOConfig

    return (
        APPOConfig()
        .environment(s["env"], env_config=dict(s["env_config"]))
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=s["num_envs"],
            rollout_fragment_length=s["rollout_fragment_length"],
        )
        .training(
            lr=s["lr"],
            vf_loss_coeff=s["vf_loss_coeff"],
            entropy_coeff=s["entropy_coeff"],
            target_network_update_freq=s["target_network_update_freq"],
            grad_clip=s["grad_clip"],
        )
        .rl_module(model_config=s["model_config"])
        .debugging(seed=s["seed"])
        .build_algo()
    )


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _point(result: dict[str, Any], start: float, iter_s: float) -> dict[str, Any]:
    runners = result.get("env_runners", {})
    return {
        "wall_s": time.time() - start,
        "iter_s": iter_s,
        "env_steps": int(result["num_env_steps_sampled_lifetime"]),
        "episode_return_mean": _finite(runners.get("episode_return_mean")),
        "num_episodes": runners.get("num_episodes"),
    }


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def throughput(s: dict[str, Any], iterations: int) -> dict[str, Any]:
    """Build, one compiling iteration, then ``iterations`` timed ones (learning included)."""
    t0 = time.perf_counter()
    algo = build(s)
    build_s = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        first = algo.train()
        compile_s = time.perf_counter() - t0
        steps0 = int(first["num_env_steps_sampled_lifetime"])
        _log(f"built in {build_s:.1f}s, first iteration (compile) {compile_s:.1f}s")
        t0 = time.perf_counter()
        for i in range(iterations):
            result = algo.train()
            _log(f"iteration {i + 1}/{iterations}: {time.perf_counter() - t0:.1f}s")
        timed_s = time.perf_counter() - t0
        steps = int(result["num_env_steps_sampled_lifetime"])
    finally:
        algo.stop()
    return {
        "build_s": build_s,
        "first_iteration_s": compile_s,
        "timed_iterations": iterations,
        "timed_s": timed_s,
        "env_steps_timed": steps - steps0,
        "env_steps_total": steps,
        "throughput_env_steps_per_s": (steps - steps0) / timed_s,
        "iteration_s_mean": timed_s / iterations,
    }


class _Stop:
    """Set by SIGTERM or SIGINT: the learning loop ends after the iteration in progress."""

    requested = False

    @classmethod
    def handler(cls, signum: int, frame: FrameType | None) -> None:
        cls.requested = True


def learn(s: dict[str, Any], out: Path, max_timesteps: int, max_minutes: float) -> str:
    """Trains until a limit; appends every iteration to the curve file. Returns why it stopped."""
    start = time.time()
    deadline = start + 60 * max_minutes
    signal.signal(signal.SIGTERM, _Stop.handler)
    signal.signal(signal.SIGINT, _Stop.handler)
    curve_path = out / f"{NAME}_curve.jsonl"
    curve_path.write_text("")
    algo = build(s)
    last_iter_s = 0.0
    n = 0
    try:
        while True:
            # Stop before an iteration that would end past the deadline.
            if time.time() + last_iter_s > deadline:
                return "max_minutes"
            if _Stop.requested:
                return "signal"
            t0 = time.perf_counter()
            result = algo.train()
            last_iter_s = time.perf_counter() - t0
            point = _point(result, start, last_iter_s)
            with curve_path.open("a") as f:
                f.write(json.dumps(point) + "\n")
            n += 1
            if n % 20 == 1:
                _log(
                    f"iter {n}: steps {point['env_steps']} return "
                    f"{point['episode_return_mean']} wall {point['wall_s']:.0f}s"
                )
            if point["env_steps"] >= max_timesteps:
                return "max_timesteps"
    finally:
        algo.stop()


def read_curve(path: Path) -> list[dict[str, Any]]:
    """The curve's points; a last line cut short by a kill is skipped."""
    points = []
    for line in path.read_text().splitlines():
        try:
            points.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return points


def smoothed(curve: list[dict[str, Any]], window: int = 100) -> list[tuple[int, float, float]]:
    """(env steps, wall s, mean return of the last ``window`` episodes) after each iteration
    that finished episodes; each iteration's mean is weighted by its episode count."""
    recent: list[tuple[float, int]] = []
    out = []
    for p in curve:
        ret, n = p.get("episode_return_mean"), p.get("num_episodes") or 1
        if ret is None:
            continue
        recent.append((ret, n))
        while sum(k for _, k in recent) - recent[0][1] >= window:
            recent.pop(0)
        total = sum(k for _, k in recent)
        out.append((p["env_steps"], p["wall_s"], sum(r * k for r, k in recent) / total))
    return out


def summarize(curve: list[dict[str, Any]]) -> dict[str, Any]:
    """Env steps, wall time, env steps/s after the first (compiling) iteration, and returns."""
    if not curve:
        return {"iterations": 0}
    later = curve[1:]
    later_s = sum(p["iter_s"] for p in later)
    rets = [p for p in curve if p["episode_return_mean"] is not None]
    smooth = smoothed(curve)
    return {
        "iterations": len(curve),
        "env_steps_total": curve[-1]["env_steps"],
        "wall_s": curve[-1]["wall_s"],
        "first_iteration_s": curve[0]["iter_s"],
        "throughput_env_steps_per_s": (curve[-1]["env_steps"] - curve[0]["env_steps"]) / later_s
        if later_s > 0
        else None,
        "episodes": sum(p.get("num_episodes") or 0 for p in rets),
        "return_first": rets[0]["episode_return_mean"] if rets else None,
        "return_first_env_steps": rets[0]["env_steps"] if rets else None,
        "return_last": rets[-1]["episode_return_mean"] if rets else None,
        "return_smoothed_last": smooth[-1][2] if smooth else None,
        "return_smoothed_best": max(v for _, _, v in smooth) if smooth else None,
    }


def plot(curve: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [p for p in curve if p["episode_return_mean"] is not None]
    smooth = smoothed(curve)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, idx, xlabel in (
        (axes[0], "env_steps", 0, "env steps"),
        (axes[1], "wall_s", 1, "wall time since start (s)"),
    ):
        ax.plot(
            [p[key] for p in pts],
            [p["episode_return_mean"] for p in pts],
            ".",
            alpha=0.3,
            label="episodes finished in an iteration",
        )
        ax.plot([q[idx] for q in smooth], [q[2] for q in smooth], label="last 100 episodes")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("episode return (Pong score)")
        ax.set_ylim(-21.5, 21.5)
        ax.legend(loc="upper left")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report_from_curve(out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    curve = read_curve(out / f"{NAME}_curve.jsonl")
    report = {**meta, "mode": "learn", "results": summarize(curve), "curve": curve}
    (out / f"{NAME}.json").write_text(json.dumps(report, indent=2))
    plot(curve, out / f"{NAME}.png", f"rljax APPO, {meta['settings']['env']} (fused EnvPool)")
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--throughput", action="store_true", help="env steps/s (the default)")
    mode.add_argument("--quick", action="store_true", help="a smoke run: 4 sub-envs, 2 iters")
    mode.add_argument("--learn", action="store_true", help="a learning run with a curve")
    mode.add_argument("--plot-only", action="store_true", help="redraw from the curve file")
    p.add_argument("--iterations", type=int, default=5, help="timed iterations (throughput)")
    p.add_argument("--max-timesteps", type=int, default=10_000_000, help="--learn: env steps")
    p.add_argument("--max-minutes", type=float, default=60.0, help="--learn: wall minutes")
    p.add_argument("--num-envs", type=int, help="sub-envs (default 32; --quick 4)")
    p.add_argument("--fragment", type=int, help="rollout_fragment_length (default 50; --quick 16)")
    p.add_argument("--out", default="results")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    s = {**SETTINGS, **(QUICK if args.quick else {})}
    if args.num_envs:
        s["num_envs"] = args.num_envs
    if args.fragment:
        s["rollout_fragment_length"] = args.fragment

    if args.plot_only:
        saved = out / f"{NAME}.json"
        meta = json.loads(saved.read_text()) if saved.exists() else {}
        meta = {k: v for k, v in meta.items() if k not in ("results", "curve", "status")}
        meta.setdefault("benchmark", NAME)
        meta.setdefault("settings", s)
        report = report_from_curve(out, meta)
    elif args.learn:
        s.update(max_timesteps=args.max_timesteps, max_minutes=args.max_minutes)
        meta = {
            "benchmark": NAME,
            "settings": s,
            "machine": machine_info(PACKAGES),
            "environment": {
                k: os.environ.get(k) for k in ("XLA_FLAGS", "JAX_PLATFORMS") if k in os.environ
            },
        }
        if hasattr(os, "sched_getaffinity"):
            meta["machine"]["affinity"] = sorted(os.sched_getaffinity(0))
        # The report's settings and machine are on disk from the start: --plot-only reuses them.
        (out / f"{NAME}.json").write_text(json.dumps({**meta, "status": "running"}, indent=2))
        stopped_by = learn(s, out, args.max_timesteps, args.max_minutes)
        report = report_from_curve(out, {**meta, "stopped_by": stopped_by})
    else:
        iterations = 2 if args.quick else args.iterations
        report = {
            "benchmark": NAME,
            "mode": "quick" if args.quick else "throughput",
            "settings": s,
            "machine": machine_info(PACKAGES),
            "results": throughput(s, iterations),
        }
        (out / f"{NAME}.json").write_text(json.dumps(report, indent=2))
    printable = {k: v for k, v in report.items() if k != "curve"}
    print(json.dumps(printable, indent=2))


if __name__ == "__main__":
    main()
