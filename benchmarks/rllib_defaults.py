"""PPO on CartPole-v1 end to end, with rljax's XLA CPU options (``"auto"``) and without (None).

Three configs, each built twice in this one process (``.debugging(xla_cpu_options="auto")`` and
``.debugging(xla_cpu_options=None)``), their ``train()`` calls alternating (in the order
A B B A ...), so a load on the machine that changes over time weighs on both alike:

- ``rllib_defaults``: ``PPOConfig().environment("CartPole-v1")``, RLlib's defaults (batch
  4,000, 30 epochs of minibatch 128, 256x256 shared layers; rljax's default of no runner
  threads: the fused EnvPool path, one program per iteration);
- ``rllib_defaults_2_runners``: the same with RLlib's 2 runners (``num_env_runners=2``): runner
  threads step EnvPool from Python with the jitted act step, then the jitted update;
- ``tuned``: ``rljax/tuned_examples/ppo_cartpole.yaml`` (16 envs, 6 epochs of minibatch 128,
  separate 64x64 tanh networks).

Per config and variant: the options the programs got, ``first_iteration_s`` (compilation
included), and over the other iterations the env steps per second (``env_steps_per_s_median``
from the median iteration, ``env_steps_per_s_best`` from the fastest) and the iteration times.
The user's ``XLA_FLAGS`` apply to both variants (a flag set there is never overridden), so run
it without them.

Usage::

    python benchmarks/rllib_defaults.py                       # about 6 minutes on 2 cores
    python benchmarks/rllib_defaults.py --iterations 3 --tuned-iterations 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine_info, save_report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VARIANTS: dict[str, Any] = {"auto": "auto", "off": None}


def make_config(name: str, setting: Any) -> Any:
    from rljax.algorithms.ppo import PPOConfig

    if name == "rllib_defaults":
        config: Any = PPOConfig().environment("CartPole-v1")
    elif name == "rllib_defaults_2_runners":
        config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2)
    else:
        config = PPOConfig.from_yaml(ROOT / "rljax" / "tuned_examples" / "ppo_cartpole.yaml")
    return config.debugging(xla_cpu_options=setting)


def env_steps(result: dict[str, Any]) -> int:
    for where in (result, result.get("env_runners", {})):
        if "num_env_steps_sampled_lifetime" in where:
            return int(where["num_env_steps_sampled_lifetime"])
    raise KeyError("num_env_steps_sampled_lifetime not in the result")


def run_config(name: str, iterations: int) -> dict[str, Any]:
    algos = {v: make_config(name, s).build_algo() for v, s in VARIANTS.items()}
    out: dict[str, Any] = {}
    try:
        times: dict[str, list[float]] = {v: [] for v in algos}
        steps: dict[str, list[int]] = {v: [] for v in algos}
        last = dict.fromkeys(algos, 0)
        for v, algo in algos.items():  # first iteration: compilation
            start = time.perf_counter()
            last[v] = env_steps(algo.train())
            out[v] = {
                "xla_cpu_options": algo._xla_options.get("train_step"),
                "first_iteration_s": round(time.perf_counter() - start, 3),
            }
        order = list(algos)
        for i in range(iterations):
            # ABBA: neither variant always runs right after the other one.
            for v in order if i % 2 == 0 else order[::-1]:
                algo = algos[v]
                start = time.perf_counter()
                now = env_steps(algo.train())
                times[v].append(time.perf_counter() - start)
                steps[v].append(now - last[v])
                last[v] = now
        for v in algos:
            per_iter = statistics.median(steps[v])
            out[v].update(
                {
                    "iterations": iterations,
                    "env_steps_per_iteration": per_iter,
                    "iteration_s_min": round(min(times[v]), 4),
                    "iteration_s_median": round(statistics.median(times[v]), 4),
                    "env_steps_per_s_best": round(per_iter / min(times[v]), 1),
                    "env_steps_per_s_median": round(per_iter / statistics.median(times[v]), 1),
                }
            )
        out["speedup_median"] = round(
            out["off"]["iteration_s_median"] / out["auto"]["iteration_s_median"], 3
        )
    finally:
        for algo in algos.values():
            algo.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=5, help="rllib_defaults*, per variant")
    parser.add_argument("--tuned-iterations", type=int, default=30, help="tuned, per variant")
    parser.add_argument(
        "--configs",
        nargs="+",
        default=["rllib_defaults", "rllib_defaults_2_runners", "tuned"],
        choices=["rllib_defaults", "rllib_defaults_2_runners", "tuned"],
    )
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    report: dict[str, Any] = {
        "machine": machine_info(["jax", "jaxlib", "envpool"]),
        "xla_flags": os.environ.get("XLA_FLAGS"),
    }
    for name in args.configs:
        print(f"{name} ...", file=sys.stderr)
        n = args.tuned_iterations if name == "tuned" else args.iterations
        report[name] = run_config(name, n)
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    save_report(report, args.out, "rllib_defaults")


if __name__ == "__main__":
    main()
