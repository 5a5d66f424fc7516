"""PPO on MuJoCo HalfCheetah-v4: the return after 1M env steps and env steps/s, with and
without observation normalisation.

Both variants train ``rljax/tuned_examples/ppo_halfcheetah.yaml`` (CleanRL's continuous PPO
settings) on the fused EnvPool path; ``mean_std_filter`` is the file as it is (RLlib's
``MeanStdFilter`` connector), ``no_filter`` the same config without the connector: the
baseline that shows what the filter is for. They run one after the other, each in its own
process, so that neither slows the other on a small machine.

Measured per variant: ``return_at_end`` (RLlib's ``episode_return_mean`` after the last
iteration: the mean over the last 100 episodes), ``best_return``, ``env_steps``,
``env_steps_per_s`` (env steps over the wall time of every ``train()`` call after the first,
which compiles), ``first_iteration_s`` and the curve of returns. Prints one JSON object and
writes ``OUT/ppo_halfcheetah.json`` and a plot ``OUT/ppo_halfcheetah.png``.

CleanRL's ppo_continuous_action.py reaches roughly 1,500-2,500 on HalfCheetah in 1M steps.

Usage::

    python benchmarks/ppo_halfcheetah.py                       # 1M env steps per variant
    python benchmarks/ppo_halfcheetah.py --timesteps 200000    # shorter
    python benchmarks/ppo_halfcheetah.py --quick               # smoke test, seconds
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import common

TUNED = Path(__file__).resolve().parent.parent / "rljax" / "tuned_examples" / "ppo_halfcheetah.yaml"
VARIANTS = ("mean_std_filter", "no_filter")


def run_variant(variant: str, timesteps: int, quick: bool) -> dict[str, Any]:
    """One variant in this process: builds, trains to ``timesteps``, returns its figures."""
    from rljax.algorithms.algorithm_config import read_config_file
    from rljax.algorithms.ppo import PPOConfig

    data = read_config_file(TUNED)
    assert data.pop("algo") == "PPO"
    config = PPOConfig.from_dict(data)
    if variant == "no_filter":
        config.env_runners(env_to_module_connector=None)
    if quick:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
    t0 = time.perf_counter()
    algo = config.build_algo()
    build_s = time.perf_counter() - t0
    curve: list[tuple[int, float]] = []
    train_s: list[float] = []
    steps: list[int] = []
    result: dict[str, Any] = {}
    try:
        while not curve or curve[-1][0] < timesteps:
            t = time.perf_counter()
            result = algo.train()
            train_s.append(time.perf_counter() - t)
            steps.append(result["env_runners"]["num_env_steps_sampled"])
            ret = result["env_runners"].get("episode_return_mean", float("nan"))
            curve.append((result["num_env_steps_sampled_lifetime"], float(ret)))
            if len(curve) % 50 == 0:
                print(f"{variant}: {curve[-1][0]:,} steps, return {ret:.1f}", file=sys.stderr)
    finally:
        algo.stop()
    later = sum(train_s[1:])
    finite = [r for _, r in curve if r == r]
    return {
        "return_at_end": curve[-1][1],
        "best_return": max(finite) if finite else None,
        "env_steps": curve[-1][0],
        "env_steps_per_s": sum(steps[1:]) / later if later > 0 else None,
        "first_iteration_s": train_s[0],
        "build_s": build_s,
        "wall_s": build_s + sum(train_s),
        "curve": curve,
    }


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, r in report["results"].items():
        xs, ys = zip(*r["curve"], strict=True)
        ax.plot(xs, ys, label=name)
    ax.set_xlabel("env steps")
    ax.set_ylabel("episode return (mean of last 100)")
    ax.set_title("PPO on HalfCheetah-v4 (rljax, fused EnvPool)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="smoke test: 2 small iterations")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="benchmarks/out", help="output folder")
    args = parser.parse_args()
    timesteps = 512 if args.quick else args.timesteps
    if args.variant:  # a child process: one variant, JSON on the last line
        print(json.dumps(run_variant(args.variant, timesteps, args.quick)))
        return
    report: dict[str, Any] = {
        "benchmark": "ppo_halfcheetah",
        "config": TUNED.name,
        "timesteps": timesteps,
        "machine": common.machine_info(["jax", "envpool", "mujoco"]),
        "results": {},
    }
    for variant in VARIANTS:
        cmd = [sys.executable, __file__, "--variant", variant, "--timesteps", str(timesteps)]
        proc = subprocess.run(
            cmd + (["--quick"] if args.quick else []), capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise SystemExit(f"{variant} failed:\n{proc.stderr[-3000:]}")
        sys.stderr.write(proc.stderr)
        report["results"][variant] = json.loads(proc.stdout.splitlines()[-1])
    path = common.save_report(report, args.out, "ppo_halfcheetah")
    if path is not None:
        plot(report, path.with_suffix(".png"))


if __name__ == "__main__":
    main()
