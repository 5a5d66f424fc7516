"""Soak test: train for a set time and report resident memory over time and compilations.

A long run must not leak: after a warm-up, resident memory (RSS) should stay flat, and nothing
should compile after the first iteration (a recompilation per iteration would show up as both
time and memory). This script trains PPO (default: CartPole-v1 on the fused EnvPool path; with
``--env gym`` a gymnasium CartPole stepped by a runner thread, where Python objects could leak)
for ``--minutes``, samples RSS (``/proc/self/statm``) every ``--sample-s`` seconds, and counts XLA
backend compilations through ``jax.monitoring``.

Reported (JSON on stdout and in ``OUT/soak.json``, plot in ``OUT/soak.png``):

- ``rss_mb``: samples ``[elapsed_s, rss_mb, iteration]``;
- ``rss_after_warmup_mb`` / ``rss_end_mb`` / ``rss_growth_after_warmup``: the growth from the
  end of the warm-up (``--warmup-s``) to the end, as a fraction (target: < 0.10 over 30 minutes);
- ``compilations_first_iteration`` / ``compilations_after_first_iteration`` (target: 0).

Usage::

    python benchmarks/soak.py --minutes 30            # the full soak
    python benchmarks/soak.py --minutes 2 --env gym   # a short run on the runner-thread path
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from common import machine_info


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--warmup-s", type=float, default=None, help="default: 10%% of the run")
    p.add_argument("--sample-s", type=float, default=5.0)
    p.add_argument("--env", choices=("envpool", "gym"), default="envpool")
    p.add_argument("--out", default="benchmark_results")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.sample_s <= 0:
        p.error(f"--minutes {args.minutes} and --sample-s {args.sample_s} must be positive")
    return args


def run(args: argparse.Namespace) -> dict:
    import gymnasium as gym
    import jax

    from rljax.algorithms.ppo import PPOConfig

    compilations = {"n": 0}

    def on_event(event: str, duration: float, **kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compilations["n"] += 1

    jax.monitoring.register_event_duration_secs_listener(on_event)
    env = "CartPole-v1" if args.env == "envpool" else (lambda cfg: gym.make("CartPole-v1"))
    runners = {"num_envs_per_env_runner": 16}
    if args.env == "gym":
        import rljax

        rljax.register_env("soak_cartpole", env)
        env, runners = "soak_cartpole", {"num_envs_per_env_runner": 8, "num_env_runners": 1}
    algo = (
        PPOConfig()
        .environment(env)
        .env_runners(**runners)
        .training(train_batch_size_per_learner=4000, minibatch_size=128, num_epochs=6, lr=3e-4)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=0)
        .build_algo()
    )
    duration = args.minutes * 60
    warmup = args.warmup_s if args.warmup_s is not None else 0.1 * duration
    samples: list[list[float]] = []
    start = time.perf_counter()
    next_sample = 0.0
    first_iter_compiles = None
    try:
        # At least 3 iterations, so that a short run still has iterations after the first.
        while time.perf_counter() - start < duration or algo.iteration < 3:
            result = algo.train()
            if first_iter_compiles is None:
                first_iter_compiles = compilations["n"]
            now = time.perf_counter() - start
            if now >= next_sample:
                samples.append([round(now, 1), round(rss_mb(), 1), result["training_iteration"]])
                next_sample = now + args.sample_s
        samples.append([round(time.perf_counter() - start, 1), round(rss_mb(), 1), algo.iteration])
        steps = algo.num_env_steps_sampled_lifetime
    finally:
        algo.stop()
    after = [s for s in samples if s[0] >= warmup] or samples[-1:]
    base, end = after[0][1], samples[-1][1]
    report = {
        "benchmark": "soak",
        "settings": {"minutes": args.minutes, "warmup_s": warmup, "env": args.env},
        "machine": machine_info(["rljax", "jax", "jaxlib", "flax", "optax", "envpool"]),
        "iterations": samples[-1][2],
        "env_steps": steps,
        "rss_mb": samples,
        "rss_after_warmup_mb": base,
        "rss_end_mb": end,
        "rss_max_mb": max(s[1] for s in samples),
        "rss_growth_after_warmup": (end - base) / base,
        "compilations_first_iteration": first_iter_compiles,
        "compilations_after_first_iteration": compilations["n"] - (first_iter_compiles or 0),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "soak.json").write_text(json.dumps(report, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([s[0] / 60 for s in samples], [s[1] for s in samples])
        ax.axvline(warmup / 60, color="gray", ls="--", lw=0.8)
        ax.set_xlabel("minutes")
        ax.set_ylabel("resident memory (MB)")
        ax.set_title(f"rljax PPO soak ({args.env}): {report['iterations']} iterations")
        fig.tight_layout()
        fig.savefig(out / "soak.png", dpi=100)
    except ImportError:
        pass
    return report


if __name__ == "__main__":
    print(json.dumps(run(parse_args()), indent=2))
