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

With ``--compare`` the ``rllib_defaults`` config gets a third variant, ``rllib``: Ray RLlib's own
``PPOConfig().environment("CartPole-v1")`` (RLlib 2.60's defaults: 2 env runners as Ray actors,
batch 4,000, 30 epochs of minibatch 128, 256x256, torch on the CPU), in a child process started
with ``--rllib-python`` (default: this interpreter) that trains one iteration per line it reads
on stdin. Its ``train()`` calls take their turn in the same A B C C B A order as rljax's, so the
three share the machine's load alike; ``speedup_vs_rllib`` is the ratio of median iteration times
(both sample 4,000 env steps per iteration).

Per config and variant: the options the programs got, ``first_iteration_s`` (compilation
included), and over the other iterations the env steps per second (``env_steps_per_s_median``
from the median iteration, ``env_steps_per_s_best`` from the fastest) and the iteration times.
The user's ``XLA_FLAGS`` apply to both variants (a flag set there is never overridden), so run
it without them.

Usage::

    python benchmarks/rllib_defaults.py                       # about 6 minutes on 2 cores
    python benchmarks/rllib_defaults.py --iterations 3 --tuned-iterations 10
    python benchmarks/rllib_defaults.py --configs rllib_defaults --compare \
        --rllib-python /path/to/rllib-venv/bin/python         # RLlib 2.60 + torch there
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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


class RLlibChild:
    """RLlib's PPO at its defaults in a child process: ``train()`` sends one line and reads back
    the iteration's env-step count (a JSON line), so its iterations interleave with rljax's."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen(
            [python, os.path.abspath(__file__), "--rllib-worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.versions = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                return dict(json.loads(line[len("RESULT ") :]))
        raise RuntimeError(f"the RLlib child exited with status {self.proc.wait()}")

    def train(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("train\n")
        self.proc.stdin.flush()
        return self._read()

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def rllib_worker() -> None:
    """The child's side of :class:`RLlibChild` (runs under RLlib's interpreter, no rljax)."""
    import ray
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig

    algo = PPOConfig().environment("CartPole-v1").build_algo()
    versions = {"ray": ray.__version__, "torch": torch.__version__}
    print("RESULT " + json.dumps(versions), flush=True)
    for _ in sys.stdin:
        steps = env_steps(algo.train())
        print("RESULT " + json.dumps({"num_env_steps_sampled_lifetime": steps}), flush=True)
    algo.stop()
    ray.shutdown()


def run_config(name: str, iterations: int, rllib_python: str | None = None) -> dict[str, Any]:
    algos: dict[str, Any] = {v: make_config(name, s).build_algo() for v, s in VARIANTS.items()}
    out: dict[str, Any] = {}
    try:
        if rllib_python is not None:
            algos["rllib"] = RLlibChild(rllib_python)
        times: dict[str, list[float]] = {v: [] for v in algos}
        steps: dict[str, list[int]] = {v: [] for v in algos}
        last = dict.fromkeys(algos, 0)
        for v, algo in algos.items():  # first iteration: compilation
            start = time.perf_counter()
            last[v] = env_steps(algo.train())
            out[v] = {
                "first_iteration_s": round(time.perf_counter() - start, 3),
            }
            if isinstance(algo, RLlibChild):
                out[v]["versions"] = algo.versions
            else:
                out[v]["xla_cpu_options"] = algo._xla_options.get("train_step")
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
        if "rllib" in out:
            out["speedup_vs_rllib"] = {
                v: round(out["rllib"]["iteration_s_median"] / out[v]["iteration_s_median"], 2)
                for v in VARIANTS
            }
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
    parser.add_argument(
        "--compare",
        action="store_true",
        help="rllib_defaults also runs RLlib's PPO at its defaults, interleaved",
    )
    parser.add_argument(
        "--rllib-python",
        default=sys.executable,
        help="the interpreter with ray[rllib] and torch for --compare (default: this one)",
    )
    parser.add_argument("--rllib-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    if args.rllib_worker:
        rllib_worker()
        return
    report: dict[str, Any] = {
        "machine": machine_info(["jax", "jaxlib", "envpool"]),
        "xla_flags": os.environ.get("XLA_FLAGS"),
    }
    for name in args.configs:
        print(f"{name} ...", file=sys.stderr)
        n = args.tuned_iterations if name == "tuned" else args.iterations
        rllib = args.rllib_python if args.compare and name == "rllib_defaults" else None
        report[name] = run_config(name, n, rllib)
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    save_report(report, args.out, "rllib_defaults")


if __name__ == "__main__":
    main()
