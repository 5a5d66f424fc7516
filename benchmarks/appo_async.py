"""APPO against PPO where envs are slow or uneven: stragglers, and the 5 ms env of sync_vs_async.

Two parts, run one after another in this process, each variant timed over ``measure_s`` of
``train()`` after ``warmup`` iterations (the first compiles). Throughput is the real env steps
of the timed iterations (``result["env_runners"]["num_env_steps_sampled"]``) over their wall
time, learning included.

(a) Stragglers. gymnasium's CartPole-v1 where each observation costs a sleep
    (``sync_vs_async.SlowCartPole``): 1 ms on the sub-envs of runners 1-3, 10 ms (10x) on those
    of runner 4 in the straggler runs; 4 runners x 4 sub-envs (SYNC), fragments of 25 steps,
    train batches of 400 env steps. APPO takes the first 4 fragments ready from any runners
    (runners never wait for weights); PPO takes one fragment of every runner per update, so it
    waits for the slowest (``sample_async=True``: runners sample the next fragment meanwhile).
    Reported: env steps/s with and without the straggler and their ratio, per algorithm, and
    APPO's fragments per runner. The ideal with the straggler, were the envs the only cost, is
    3 x 4 / 1 ms + 4 / 10 ms = 12,400 env steps/s against 16,000 without (77.5%); two cores
    running 4 runner threads, their policies and the learner are the bound here instead.

(b) The slow env of ``sync_vs_async.py`` part (a): every observation costs 5 ms, 6 sub-envs on
    one runner, ASYNC (a process per sub-env, lock-step; ideal 6 / 5 ms = 1,200 env steps/s),
    fragments of 100 steps, batches of 600: PPO with ``sample_async`` False and True against
    APPO (free-running: the runner steps while the learner updates, never waiting for weights).

Prints one JSON object on stdout (a table on stderr) and writes ``OUT/appo_async.json``.

Usage::

    python benchmarks/appo_async.py             # both parts, about 3 minutes on 2 cores
    python benchmarks/appo_async.py --quick     # smoke test: shorter timing, rough figures
    python benchmarks/appo_async.py --parts a --out results/stragglers
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import sync_vs_async
from common import machine_info, save_report

import rljax

STRAGGLER_ENV = "StragglerCartPole"


class StragglerCartPole(sync_vs_async.SlowCartPole):
    """``SlowCartPole`` whose sub-envs on runner ``slow_worker_index`` (``worker_index``, from 1)
    sleep ``slow_cost_s``, the others ``fast_cost_s``."""

    def __init__(self, env_config: dict[str, Any]):
        worker = getattr(env_config, "worker_index", 0)
        slow = worker == env_config.get("slow_worker_index", -1)
        cost = env_config["slow_cost_s"] if slow else env_config["fast_cost_s"]
        super().__init__({"step_cost_s": cost})


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def timed(config: Any, warmup: int, measure_s: float) -> dict[str, Any]:
    """Builds, trains ``warmup`` iterations, then times ``train()`` for ``measure_s``."""
    algo = config.build_algo()
    try:
        for _ in range(warmup):
            algo.train()
        results = []
        t0 = time.perf_counter()
        while len(results) < 3 or time.perf_counter() - t0 < measure_s:
            results.append(algo.train())
        elapsed = time.perf_counter() - t0
    finally:
        algo.stop()
    steps = sum(r["env_runners"]["num_env_steps_sampled"] for r in results)
    out: dict[str, Any] = {
        "env_steps_per_s": steps / elapsed,
        "timed_env_steps": steps,
        "timed_s": elapsed,
        "timed_iterations": len(results),
    }
    per_runner = [r["env_runners"].get("per_runner") for r in results]
    if all(per_runner):
        out["fragments_per_runner"] = {
            k: int(sum(p[k].get("num_fragments", 1) for p in per_runner)) for k in per_runner[0]
        }
    lags = [r["learners"]["default_policy"].get("policy_lag_mean") for r in results]
    if all(x is not None for x in lags):
        out["policy_lag_mean"] = float(np.mean(lags))
    return out


def straggler_config(algo: str, straggler: bool, seed: int) -> Any:
    from rljax.algorithms.appo import APPOConfig
    from rljax.algorithms.ppo import PPOConfig

    env_config = {
        "fast_cost_s": 0.001,
        "slow_cost_s": 0.010,
        "slow_worker_index": 4 if straggler else -1,
    }
    config = APPOConfig() if algo == "appo" else PPOConfig()
    config.environment(STRAGGLER_ENV, env_config=env_config)
    config.env_runners(
        num_env_runners=4,
        num_envs_per_env_runner=4,
        rollout_fragment_length=25,
        sample_async=algo == "ppo",
    )
    config.training(train_batch_size_per_learner=400, lr=5e-4)
    if algo == "ppo":
        config.training(minibatch_size=200, num_epochs=2)
    return config.rl_module(model_config={"fcnet_hiddens": [32]}).debugging(seed=seed)


def run_part_a(seed: int, warmup: int, measure_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for algo in ("appo", "ppo"):
        runs = {}
        for straggler in (False, True):
            key = "straggler" if straggler else "no_straggler"
            log(f"(a) {algo} {key} ...")
            runs[key] = timed(straggler_config(algo, straggler, seed), warmup, measure_s)
            log(f"    {runs[key]['env_steps_per_s']:,.0f} env steps/s")
        ratio = runs["straggler"]["env_steps_per_s"] / runs["no_straggler"]["env_steps_per_s"]
        out[algo] = {**runs, "straggler_over_no_straggler": ratio}
    return out


def slow_env_config(algo: str, sample_async: bool, seed: int) -> Any:
    from rljax.algorithms.appo import APPOConfig
    from rljax.algorithms.ppo import PPOConfig

    config = APPOConfig() if algo == "appo" else PPOConfig()
    config.environment(sync_vs_async.SLOW_ENV, env_config={"step_cost_s": 0.005})
    config.env_runners(
        num_env_runners=1,
        num_envs_per_env_runner=6,
        gym_env_vectorize_mode="ASYNC",
        rollout_fragment_length=100,
        sample_async=sample_async,
    )
    config.training(train_batch_size_per_learner=600, lr=5e-4)
    if algo == "ppo":
        config.training(minibatch_size=300, num_epochs=4)
    return config.rl_module(model_config={"fcnet_hiddens": [32]}).debugging(seed=seed)


def run_part_b(seed: int, warmup: int, measure_s: float) -> dict[str, Any]:
    ideal = 6 / 0.005
    out: dict[str, Any] = {"ideal_env_steps_per_s": ideal}
    for key, algo, sample_async in (
        ("ppo", "ppo", False),
        ("ppo_sample_async", "ppo", True),
        ("appo", "appo", False),
    ):
        log(f"(b) {key} ...")
        # sample_async: one more warm-up iteration drains the fragment sampled while the first
        # compiled; APPO's runner samples ahead as well.
        run = timed(slow_env_config(algo, sample_async, seed), warmup + 1, measure_s)
        run["fraction_of_ideal"] = run["env_steps_per_s"] / ideal
        out[key] = run
        log(f"    {run['env_steps_per_s']:,.0f} env steps/s ({run['fraction_of_ideal']:.0%})")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test; rough figures")
    p.add_argument("--parts", nargs="+", choices=("a", "b"), default=["a", "b"])
    p.add_argument("--out", type=Path, default=Path("results"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--measure-s", type=float, default=None, help="seconds timed per variant")
    args = p.parse_args(argv)
    measure_s = args.measure_s or (2.0 if args.quick else 12.0)
    warmup = 1 if args.quick else 3
    sync_vs_async.register_envs()
    rljax.register_env(STRAGGLER_ENV, StragglerCartPole)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    if "a" in args.parts:
        results["stragglers"] = run_part_a(args.seed, warmup, measure_s)
    if "b" in args.parts:
        results["slow_env_async"] = run_part_b(args.seed, warmup, measure_s)
    report = {
        "benchmark": "appo_async",
        "quick": args.quick,
        "measure_s": measure_s,
        "machine": machine_info(["rljax", "jax", "jaxlib", "flax", "gymnasium", "numpy"]),
        "wall_s": time.perf_counter() - started,
        "results": results,
    }
    save_report(report, args.out, "appo_async")
    return report


if __name__ == "__main__":
    main()
