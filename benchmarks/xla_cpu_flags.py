"""PPO iteration time on the CPU under XLA's defaults, without its new fusion emitters, and on one core.

On a 2-core machine, RLlib's default network (256x256, shared value layers) trained with the seed
tutorial's small minibatches runs several times slower than the same program pinned to one
core, and the time varies from process to process; XLA's older fusion code
(``--xla_cpu_use_fusion_emitters=false``) removes most of the gap but slows the small network of
the tuned example. This script measures that, each variant in a fresh process (XLA reads its
flags once):

- configs: ``default_1env`` (RLlib's defaults: 1 sub-env, batch 4000, 256x256; 10 epochs of
  minibatch 32, as the seed's grid can draw), ``default_16env`` (the same with 16 sub-envs),
  ``tuned_16env`` (``ppo_cartpole.yaml``'s shape: 16 sub-envs, separate 64x64 networks, 6 epochs
  of minibatch 128);
- modes: ``default``; ``no_fusion_emitters`` (``XLA_FLAGS=--xla_cpu_use_fusion_emitters=false``);
  ``one_core`` (the process pinned to one core before JAX starts).

Per variant and repeat: ``first_s`` (the first iteration, compilation included) and
``iteration_s`` (the median of the next iterations), all on the fused EnvPool path. JSON on
stdout and in ``OUT/xla_cpu_flags.json``.

Usage::

    python benchmarks/xla_cpu_flags.py                 # 3 repeats, about 3 minutes on 2 cores
    python benchmarks/xla_cpu_flags.py --repeats 1 --iterations 3 --configs tuned_16env
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine_info, save_report  # noqa: E402

CONFIGS: dict[str, dict[str, Any]] = {
    "default_1env": {"num_epochs": 10, "minibatch_size": 32},
    "default_16env": {"num_envs_per_env_runner": 16, "num_epochs": 10, "minibatch_size": 32},
    "tuned_16env": {
        "num_envs_per_env_runner": 16,
        "num_epochs": 6,
        "minibatch_size": 128,
        "model_config": {
            "fcnet_hiddens": [64, 64],
            "fcnet_activation": "tanh",
            "vf_share_layers": False,
        },
    },
}
MODES = ("default", "no_fusion_emitters", "one_core")


def child(config_name: str, iterations: int) -> dict[str, Any]:
    from rljax.algorithms.ppo import PPOConfig

    settings = {"env": "CartPole-v1", "lr": 1e-3, "seed": 0, **CONFIGS[config_name]}
    algo = PPOConfig().update_from_dict(settings).build_algo()
    try:
        times = []
        for _ in range(iterations):
            start = time.perf_counter()
            algo.train()
            times.append(time.perf_counter() - start)
    finally:
        algo.stop()
    return {"first_s": times[0], "iteration_s": statistics.median(times[1:])}


def run(config_name: str, mode: str, iterations: int) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", config_name]
    cmd += ["--iterations", str(iterations)]
    if mode == "no_fusion_emitters":
        env["XLA_FLAGS"] = "--xla_cpu_use_fusion_emitters=false"
    if mode == "one_core":
        cmd.append("--one-core")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"status": "failed", "tail": proc.stderr[-2000:]}
    return {"status": "ok", **json.loads(proc.stdout.strip().splitlines()[-1])}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--repeats", type=int, default=3, help="fresh processes per variant")
    p.add_argument("--iterations", type=int, default=5, help="train() calls per process (>= 2)")
    p.add_argument("--out", default="results")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--one-core", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.iterations < 2 or args.repeats < 1:
        p.error(f"--iterations {args.iterations} --repeats {args.repeats}: use >= 2 and >= 1")
    if args.child:
        if args.one_core:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        print(json.dumps(child(args.child, args.iterations)))
        return 0
    report: dict[str, Any] = {
        "machine": machine_info(["rljax", "jax", "envpool"]),
        "iterations": args.iterations,
        "results": {},
    }
    failed = False
    for config_name in args.configs:
        for mode in args.modes:
            runs = [run(config_name, mode, args.iterations) for _ in range(args.repeats)]
            failed |= any(r["status"] != "ok" for r in runs)
            ok = [r for r in runs if r["status"] == "ok"]
            report["results"][f"{config_name}/{mode}"] = {
                "runs": runs,
                "iteration_s": [round(r["iteration_s"], 4) for r in ok],
                "first_s": [round(r["first_s"], 3) for r in ok],
            }
            print(f"[{config_name}/{mode}] {report['results'][f'{config_name}/{mode}']['iteration_s']}",
                  file=sys.stderr, flush=True)  # fmt: skip
    save_report(report, args.out, "xla_cpu_flags")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
