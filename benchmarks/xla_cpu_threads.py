"""The same ``train()`` calls in a process whose JAX CPU client has one thread per core (XLA's
sizing: ``RLJAX_XLA_CPU_THREADS=xla``) and in one started with ``RLJAX_XLA_CPU_THREADS=1``
(``rljax.utils.xla_threads.set_xla_cpu_threads``: ``PJRT_NPROC=1``, the client's pools sized to
one thread; the process keeps every core). Without either, the first algorithm built chooses
(one thread for PPO, APPO or DQN with a dense model on a flat EnvPool task on 2 cores or fewer:
``rljax.utils.xla_threads``); this script names both settings, so it compares the same two on
every machine and config.

XLA's CPU client sizes its thread pools once, when it is created; the two settings can only be
compared in two processes. This script starts one child process per setting; each builds every
config and trains its first iteration (``first_iteration_s``: the build, compilation and one
iteration), then trains one more iteration each time the parent asks. The parent asks in turns,
A B B A, so a load on the machine that changes over time weighs on both alike, and reports
medians of iteration seconds and their ratio (``speedup_median``: default seconds over
one-thread seconds). Linux only (it counts the pool's threads in ``/proc``).

Configs (``--configs``):

- ``rllib_defaults``: ``PPOConfig().environment("CartPole-v1")`` at RLlib's defaults (batch
  4,000, 30 epochs of minibatch 128, 256x256), rljax's fused EnvPool path;
- ``rllib_defaults_2_runners``: the same with 2 runner threads stepping EnvPool;
- ``tuned``: ``rljax/tuned_examples/ppo_cartpole.yaml`` (16 envs, 64x64 networks);
- ``jax_env``: PPO on ``gymnax:CartPole-v1`` at PureJaxRL's settings (4 envs x 128 steps, 4
  epochs of 4 minibatches, 64x64 tanh), 10 updates per ``train()`` call (needs gymnax);
- ``minatar_cnn``: PPO on ``gymnax:Breakout-MinAtar`` (16 envs x 128 steps, PureJaxRL's update
  settings), whose 10x10 frames go through RLlib's default conv encoder (needs gymnax);
- ``lstm``: PPO on CartPole-v1 with ``use_lstm`` (16 envs, batch 4,000, 6 epochs of 500 rows,
  sequences of 20);
- ``population``: 4 trials of RLlib's default PPO on CartPole-v1 (10 epochs instead of 30),
  seeds 0-3, as one population (one vmapped program, as ``rljax.tune`` trains them);
- ``dqn``, ``sac``, ``appo``: RLlib's defaults of DQN on CartPole-v1, SAC on Pendulum-v1 and
  APPO on CartPole-v1 (``DQNConfig().environment("CartPole-v1")`` and so on);
- ``small`` (not run by default): PPO on CartPole-v1, 4 envs, batch 256, one epoch, 16 units,
  a check that the script runs.

Usage::

    python benchmarks/xla_cpu_threads.py                   # about 4 minutes on 2 cores
    python benchmarks/xla_cpu_threads.py --configs tuned --iterations 20 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import LineWorker, machine_info, save_report, xla_pool_threads  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = (
    "rllib_defaults",
    "rllib_defaults_2_runners",
    "tuned",
    "jax_env",
    "minatar_cnn",
    "lstm",
    "population",
    "dqn",
    "sac",
    "appo",
    "small",
)
DEFAULT_CONFIGS = CONFIGS[:10]
ITERATIONS = {
    "rllib_defaults": 5,
    "rllib_defaults_2_runners": 5,
    "tuned": 30,
    "jax_env": 20,
    "minatar_cnn": 8,
    "lstm": 8,
    "population": 6,
    "dqn": 10,
    "sac": 10,
    "appo": 20,
    "small": 5,
}


def _cartpole(envs: int, batch: int, minibatch: int, epochs: int, model: dict[str, Any]) -> Any:
    """PPO on CartPole-v1 with these sizes and ``model_config``."""
    from rljax.algorithms.ppo import PPOConfig

    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=envs)
        .training(train_batch_size_per_learner=batch, minibatch_size=minibatch, num_epochs=epochs)
        .rl_module(model_config=model)
    )


def build(name: str) -> Any:
    """The algorithm of config ``name`` (built in the child)."""
    from rljax.algorithms.ppo import PPOConfig

    if name == "rllib_defaults":
        return PPOConfig().environment("CartPole-v1").build_algo()
    if name == "rllib_defaults_2_runners":
        config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2)
        return config.build_algo()
    if name == "tuned":
        return PPOConfig.from_yaml(
            ROOT / "rljax" / "tuned_examples" / "ppo_cartpole.yaml"
        ).build_algo()
    if name == "small":
        return _cartpole(4, 256, 128, 1, {"fcnet_hiddens": [16]}).build_algo()
    if name == "jax_env":
        from jax_envs import ppo_config

        n, t = 4, 128
        config = ppo_config("gymnax:CartPole-v1", n, t)
        return config.reporting(min_sample_timesteps_per_iteration=10 * n * t).build_algo()
    if name in ("dqn", "sac", "appo"):
        from rljax.algorithms.appo import APPOConfig
        from rljax.algorithms.dqn import DQNConfig
        from rljax.algorithms.sac import SACConfig

        configs = {
            "dqn": DQNConfig().environment("CartPole-v1"),
            "sac": SACConfig().environment("Pendulum-v1"),
            "appo": APPOConfig().environment("CartPole-v1"),
        }
        return configs[name].build_algo()
    if name == "population":
        configs = [
            PPOConfig().environment("CartPole-v1").training(num_epochs=10).debugging(seed=s)
            for s in range(4)
        ]
        return _Population(configs)
    if name == "minatar_cnn":  # RLlib's conv encoder for the 10x10 MinAtar frames
        from jax_envs import ppo_config

        return ppo_config("gymnax:Breakout-MinAtar", 16, 128).build_algo()
    if name == "lstm":
        return _cartpole(16, 4000, 500, 6, {"use_lstm": True, "max_seq_len": 20}).build_algo()
    raise ValueError(f"config {name!r}; use one of {CONFIGS}")


class _Population:
    """Trials trained as one population, driven like an algorithm (``train()`` sums their env
    steps)."""

    def __init__(self, configs: list[Any]):
        from rljax.execution.population import Population

        self.population = Population(configs)

    def train(self) -> dict[str, Any]:
        results = [r for r in self.population.train() if r]
        steps = sum(r["env_runners"]["num_env_steps_sampled"] for r in results)
        return {"env_runners": {"num_env_steps_sampled": steps}}

    def stop(self) -> None:
        self.population.stop()


def available(name: str) -> bool:
    if name not in ("jax_env", "minatar_cnn"):
        return True
    try:
        import gymnax  # noqa: F401
    except ImportError:
        return False
    return True


def worker(names: list[str]) -> None:
    """The child: builds ``names``, reports each first iteration's seconds, then trains the
    config named on each line of stdin and reports the seconds and env steps."""
    import rljax  # noqa: F401  (reads RLJAX_XLA_CPU_THREADS before anything compiles)

    algos = {}
    first = {}
    for name in names:
        t0 = time.perf_counter()
        algos[name] = build(name)
        algos[name].train()
        first[name] = time.perf_counter() - t0
    threads = xla_pool_threads()
    cores = len(os.sched_getaffinity(0))
    started = {
        "first_iteration_s": first,
        "xla_pool_threads": threads,
        "cores": cores,
        "pjrt_nproc": os.environ.get("PJRT_NPROC"),
    }
    print("RESULT " + json.dumps(started))
    sys.stdout.flush()
    for line in sys.stdin:
        algo = algos[line.strip()]
        t0 = time.perf_counter()
        result = algo.train()
        seconds = time.perf_counter() - t0
        steps = result["env_runners"]["num_env_steps_sampled"]
        print("RESULT " + json.dumps({"seconds": seconds, "env_steps": steps}), flush=True)
    for algo in algos.values():
        algo.stop()


class Child(LineWorker):
    """A worker process with ``RLJAX_XLA_CPU_THREADS`` set to ``threads`` (None: ``xla``, XLA's
    own sizing)."""

    def __init__(self, names: list[str], threads: int | None):
        unset = ("RLJAX_XLA_CPU_THREADS", "PJRT_NPROC", "NPROC")
        env = {k: v for k, v in os.environ.items() if k not in unset}
        env["RLJAX_XLA_CPU_THREADS"] = "xla" if threads is None else str(threads)
        argv = [sys.executable, os.path.abspath(__file__), "--worker", *names]
        super().__init__(argv, env=env, what="worker")

    def train(self, name: str) -> dict[str, Any]:
        return self.ask(name)


def compare(names: list[str], threads: int, iterations: dict[str, int]) -> dict[str, Any]:
    variants = {"default": None, f"{threads}_thread": threads}
    children: dict[str, Child] = {}
    out: dict[str, Any] = {}
    try:
        # One child at a time builds (compilation would otherwise share the cores).
        for v, t in variants.items():
            children[v] = Child(names, t)
        out["variants"] = {v: children[v].started for v in children}
        for name in names:
            times: dict[str, list[float]] = {v: [] for v in children}
            steps: dict[str, int] = {}
            order = list(children)
            for i in range(iterations[name]):
                for v in order if i % 2 == 0 else order[::-1]:
                    r = children[v].train(name)
                    times[v].append(r["seconds"])
                    steps[v] = r["env_steps"]
            row: dict[str, Any] = {}
            for v, ts in times.items():
                row[v] = {
                    "iteration_s_median": round(statistics.median(ts), 4),
                    "iteration_s_min": round(min(ts), 4),
                    "env_steps_per_iteration": steps[v],
                    "env_steps_per_s_median": round(steps[v] / statistics.median(ts), 1),
                    "first_iteration_s": round(children[v].started["first_iteration_s"][name], 2),
                }
            default, pinned = (row[v]["iteration_s_median"] for v in children)
            row["speedup_median"] = round(default / pinned, 3)
            out[name] = row
    finally:
        for child in children.values():
            child.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(DEFAULT_CONFIGS))
    parser.add_argument("--threads", type=int, default=1, help="the pinned client's threads")
    parser.add_argument("--iterations", type=int, default=None, help="per config and variant")
    parser.add_argument("--out", default="results")
    parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.worker is not None:
        worker(a.worker)
        return
    names = [n for n in a.configs if available(n)]
    iterations = {n: a.iterations or ITERATIONS[n] for n in names}
    report = {"machine": machine_info(["jax", "jaxlib", "envpool"])}
    report["skipped"] = [n for n in a.configs if n not in names]
    report.update(compare(names, a.threads, iterations))
    save_report(report, a.out, "xla_cpu_threads")


if __name__ == "__main__":
    main()
