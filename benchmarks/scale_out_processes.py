"""PPO CartPole env steps/s with its learners in one process or across local processes.

Two variants of the same run (PPO, CartPole-v1 on the fused EnvPool path, 2 learners, 16
sub-envs, 2048-step batches), each in fresh processes:

- ``1proc_x_2dev``: one process with 2 CPU devices (``--xla_force_host_platform_device_count=2``);
- ``2proc_x_1dev``: two processes of 1 CPU device each (``rljax.distributed.launch_local``,
  gloo collectives), each sampling 8 of the sub-envs, the gradients averaged across them.

Per variant: ``first_s`` (the first iteration, compilation included), ``iteration_s`` (the
median of the next ones) and ``env_steps_per_s`` (env steps of those iterations over their
time). On a machine with few cores the processes compete for them and pay the collectives over
TCP: expect overhead, not a speed-up; across hosts each process brings its own cores. JSON on
stdout and in ``OUT/scale_out_processes.json``.

Usage::

    python benchmarks/scale_out_processes.py                  # 6 iterations per variant
    python benchmarks/scale_out_processes.py --iterations 3 --out /tmp/bench
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine_info, save_report  # noqa: E402

NUM_ENVS = 16
BATCH = 2048


def worker(out: str, iterations: int) -> None:
    """One process of a variant: trains and (process 0) writes its timings to ``out``."""
    import jax

    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=NUM_ENVS)
        .training(train_batch_size=BATCH, minibatch_size=256, num_epochs=4)
        .learners(num_learners=2)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    t0 = time.perf_counter()
    first = algo.train()
    first_s = time.perf_counter() - t0
    times = []
    steps0 = first["num_env_steps_sampled_lifetime"]
    result = first
    for _ in range(iterations - 1):
        t = time.perf_counter()
        result = algo.train()
        times.append(time.perf_counter() - t)
    steps = result["num_env_steps_sampled_lifetime"] - steps0
    algo.stop()
    if jax.process_index() == 0:
        Path(out).write_text(
            json.dumps(
                {
                    "processes": jax.process_count(),
                    "devices": jax.device_count(),
                    "first_s": first_s,
                    "iteration_s": statistics.median(times),
                    "env_steps_per_s": steps / sum(times),
                    "env_steps_timed": steps,
                }
            )
        )


def _env(devices: int) -> dict[str, str]:
    from rljax.utils.xla_options import with_host_devices

    env = dict(os.environ)
    env["XLA_FLAGS"] = with_host_devices(devices)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_variant(name: str, iterations: int) -> dict[str, Any]:
    from rljax.distributed import launch_local

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        argv = [sys.executable, os.path.abspath(__file__), "--worker", out]
        argv += ["--iterations", str(iterations)]
        t0 = time.perf_counter()
        # The children's output (gloo's connection lines) goes to stderr: stdout is the JSON.
        if name == "1proc_x_2dev":
            subprocess.run(argv, env=_env(2), check=True, stdout=sys.stderr)
        else:
            launch_local(argv, 2, env=_env(1), timeout_s=1800, stdout=sys.stderr)
        res = json.loads(Path(out).read_text())
        res["wall_s"] = time.perf_counter() - t0
        return dict(res)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=6, help="iterations per variant (>= 2)")
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.iterations < 2:
        p.error(f"--iterations {args.iterations}; use at least 2 (the first one compiles)")
    if args.worker:
        worker(args.worker, args.iterations)
        return
    results = {
        name: run_variant(name, args.iterations) for name in ("1proc_x_2dev", "2proc_x_1dev")
    }
    one, two = results["1proc_x_2dev"], results["2proc_x_1dev"]
    report = {
        "benchmark": "scale_out_processes",
        "setup": {
            "algo": "PPO",
            "env": "CartPole-v1 (EnvPool, fused)",
            "num_learners": 2,
            "num_envs": NUM_ENVS,
            "train_batch_size": BATCH,
            "iterations": args.iterations,
        },
        "machine": machine_info(["jax", "jaxlib", "envpool"]),
        "results": results,
        "two_processes_over_one": two["env_steps_per_s"] / one["env_steps_per_s"],
    }
    save_report(report, args.out, "scale_out_processes")


if __name__ == "__main__":
    main()
