"""Behaviour cloning on CartPole from recorded data: rljax's BC, and with ``--compare`` Ray
RLlib's BC on the very same files, side by side.

The data: CartPole-v1 episodes of a scripted controller (push the cart toward where the pole
falls; every episode it plays alone lasts 500 steps) taking a random action 10% of the time,
recorded by rljax's ``OfflineWriter`` as Parquet files of env steps (``rljax.offline.data``,
RLlib's column names), which RLlib 2.60's ``BCConfig().offline_data(input_=...)`` reads through
Ray Data as they are.

Both sides run RLlib's tuned BC CartPole settings (``rllib/tuned_examples/bc/cartpole_bc.py``:
lr 0.0008, ``train_batch_size_per_learner=2000``; ``dataset_num_iters_per_learner=10``, which
RLlib requires of a local learner) with an evaluation of 5 greedy episodes in every ``train()``
(``evaluation_interval=1``). With ``--compare`` RLlib's BC runs in a child process started with
``--rllib-python`` (RLlib 2.60 and torch there), its ``train()`` calls taking turns with rljax's
(A B B A ...), so the machine's load weighs on both alike.

Per side: the seconds to build, each ``train()``'s seconds (evaluation included) and evaluation
return, and ``seconds_to_target``: build plus the ``train()`` calls until the evaluation return
first reached ``--target`` (None: not within ``--iterations``).

Usage::

    python benchmarks/offline_bc.py                     # rljax only, under a minute
    python benchmarks/offline_bc.py --compare --rllib-python /path/to/rllib-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import LineWorker, machine_info, save_report  # noqa: E402

LR = 0.0008
BATCH = 2000
ITERS_PER_TRAIN = 10
EVAL_EPISODES = 5


def record_expert(path: str | os.PathLike[str], episodes: int, seed: int = 0) -> tuple[float, int]:
    """Records ``episodes`` CartPole-v1 episodes of the scripted controller with 10% random
    actions into ``path``; returns their mean return and the rows (env steps) written."""
    import gymnasium as gym

    from rljax.offline import OfflineWriter

    env = gym.make("CartPole-v1")
    writer = OfflineWriter(path, env.observation_space, env.action_space)
    rng = np.random.default_rng(seed)

    def noisy_expert(o: np.ndarray) -> int:
        expert = int(o[2] + 0.5 * o[3] + 0.1 * o[1] > 0)
        return expert if rng.random() > 0.1 else int(rng.integers(2))

    returns = writer.record_episodes(env, noisy_expert, episodes, seed)
    writer.flush()
    env.close()
    return float(np.mean(returns)), writer.rows_written


def _evaluation_return(result: dict[str, Any]) -> float | None:
    value = result.get("evaluation", {}).get("env_runners", {}).get("episode_return_mean")
    return None if value is None else float(value)


class RljaxSide:
    """rljax's BC on the files at ``data``."""

    def __init__(self, data: str):
        from rljax.algorithms.marwil import BCConfig

        start = time.perf_counter()
        self.algo = (
            BCConfig()
            .environment("CartPole-v1")
            .offline_data(input_=data, dataset_num_iters_per_learner=ITERS_PER_TRAIN)
            .training(lr=LR, train_batch_size_per_learner=BATCH)
            .evaluation(evaluation_interval=1, evaluation_duration=EVAL_EPISODES)
            .build_algo()
        )
        self.build_s = time.perf_counter() - start

    def train(self) -> float | None:
        return _evaluation_return(self.algo.train())

    def stop(self) -> None:
        self.algo.stop()


class RLlibSide(LineWorker):
    """RLlib's BC in a child process (``rllib_worker``)."""

    def __init__(self, python: str, data: str):
        argv = [python, os.path.abspath(__file__), "--rllib-worker", data]
        super().__init__(argv, what="RLlib child")
        self.build_s = float(self.started["build_s"])
        self.versions = self.started["versions"]

    def train(self) -> float | None:
        value = self.ask("train")["evaluation_return"]
        return None if value is None else float(value)


def rllib_worker(data: str) -> None:
    """The child's side of :class:`RLlibSide` (runs under RLlib's interpreter, no rljax)."""
    import ray
    import torch
    from ray.rllib.algorithms.bc import BCConfig

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    start = time.perf_counter()
    algo = (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=[f"local://{data}"], dataset_num_iters_per_learner=ITERS_PER_TRAIN)
        .training(lr=LR, train_batch_size_per_learner=BATCH)
        .evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=1,
            evaluation_duration=EVAL_EPISODES,
        )
        .build_algo()
    )
    started = {
        "build_s": time.perf_counter() - start,
        "versions": {"ray": ray.__version__, "torch": torch.__version__},
    }
    print("RESULT " + json.dumps(started), flush=True)
    for _ in sys.stdin:
        value = _evaluation_return(algo.train())
        print("RESULT " + json.dumps({"evaluation_return": value}), flush=True)
    algo.stop()
    ray.shutdown()


def summary(side: Any, seconds: list[float], returns: list[float | None], target: float) -> dict:
    """The side's figures (see the module's docstring)."""
    to_target = None
    for i, value in enumerate(returns):
        if value is not None and value >= target:
            to_target = side.build_s + sum(seconds[: i + 1])
            break
    return {
        "build_s": round(side.build_s, 2),
        "train_s": [round(s, 3) for s in seconds],
        "evaluation_returns": returns,
        "seconds_to_target": None if to_target is None else round(to_target, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40, help="recorded expert episodes")
    parser.add_argument("--iterations", type=int, default=10, help="train() calls per side")
    parser.add_argument("--target", type=float, default=450.0, help="evaluation return")
    parser.add_argument("--data", default=None, help="the folder to record in (default: temp)")
    parser.add_argument("--compare", action="store_true", help="also run RLlib's BC")
    parser.add_argument("--rllib-python", default=sys.executable, help="RLlib's interpreter")
    parser.add_argument("--out", default=None, help="also write offline_bc.json here")
    parser.add_argument("--rllib-worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rllib_worker is not None:
        rllib_worker(args.rllib_worker)
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = str(Path(args.data or Path(tmp) / "expert").resolve())
        expert_return, rows = record_expert(data, args.episodes)
        sides: dict[str, Any] = {"rljax": RljaxSide(data)}
        if args.compare:
            sides["rllib"] = RLlibSide(args.rllib_python, data)
        seconds: dict[str, list[float]] = {name: [] for name in sides}
        returns: dict[str, list[float | None]] = {name: [] for name in sides}
        names = list(sides)
        try:
            for i in range(args.iterations):
                for name in names if i % 2 == 0 else names[::-1]:  # A B B A ...
                    start = time.perf_counter()
                    value = sides[name].train()
                    seconds[name].append(time.perf_counter() - start)
                    returns[name].append(value)
        finally:
            for side in sides.values():
                side.stop()
        report: dict[str, Any] = {
            "benchmark": "offline_bc",
            "expert_episodes": args.episodes,
            "expert_return_mean": expert_return,
            "rows": rows,
            "settings": {
                "lr": LR,
                "train_batch_size_per_learner": BATCH,
                "dataset_num_iters_per_learner": ITERS_PER_TRAIN,
                "evaluation_duration": EVAL_EPISODES,
                "target": args.target,
            },
            **{
                name: summary(sides[name], seconds[name], returns[name], args.target)
                for name in sides
            },
            "machine": machine_info(["jax", "ray", "torch", "pyarrow"]),
        }
        if args.compare:
            report["rllib"]["versions"] = sides["rllib"].versions
            a, b = report["rljax"]["seconds_to_target"], report["rllib"]["seconds_to_target"]
            report["speedup_to_target_vs_rllib"] = None if not (a and b) else round(b / a, 1)
        save_report(report, args.out, "offline_bc")


if __name__ == "__main__":
    main()
