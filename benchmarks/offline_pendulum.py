"""Offline RL on Pendulum-v1 from recorded data: BC, CQL and IQL on the same files, each
evaluated greedily as it trains.

The data: Pendulum-v1 episodes of a scripted controller (full torque along the swing until near
the top, then a PD controller) with Gaussian noise on its torque, recorded by rljax's
``OfflineWriter``. The controller saturates its torque, so many recorded actions sit on the
action bounds. Each variant trains ``--chunks`` times ``--steps-per-chunk`` gradient steps
(``dataset_num_iters_per_learner``) with 64x64 networks and batches of 256 rows, evaluating 5
greedy episodes after each chunk:

- ``bc``: ``BCConfig`` (MARWIL's Gaussian policy), lr 1e-3;
- ``cql``: ``CQLConfig`` with RLlib's defaults (``bc_iters`` 200 here);
- ``iql``: ``IQLConfig`` with RLlib's defaults (``beta`` 0.1, ``expectile`` 0.8, targets copied
  after every step);
- ``iql_paper``: ``beta`` 3, ``expectile`` 0.7, ``tau`` 0.005 (the IQL paper's locomotion
  settings);
- ``iql_cloning``: ``beta`` 1e-6, every weight 1: behaviour cloning through SAC's squashed
  Gaussian (what CQL's and IQL's actors clone with), against ``bc``'s plain Gaussian.

Per variant: the evaluation return after each chunk and the seconds each chunk took (its
compilation in the first). One process, the variants one after another.

Usage::

    python benchmarks/offline_pendulum.py                 # about 3 minutes on 2 cores
    python benchmarks/offline_pendulum.py --quick         # smoke test, seconds
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine_info, save_report  # noqa: E402

EVAL_EPISODES = 5


def controller(obs: np.ndarray) -> np.ndarray:
    """Pump energy (full torque along the swing) until near the top, then hold it upright."""
    cos, sin, speed = obs
    if cos > 0.85:
        torque = -(12.0 * np.arctan2(sin, cos) + 2.5 * speed)
    else:
        torque = 2.0 * np.sign(speed) if 0.5 * speed**2 + 10.0 * (cos - 1.0) < 0 else 0.0
    return np.clip(np.array([torque], np.float32), -2.0, 2.0)


def record(path: str, episodes: int, noise: float, seed: int = 0) -> float:
    """Records the noisy controller's episodes; returns their mean return."""
    import gymnasium as gym

    from rljax.offline import OfflineWriter

    env = gym.make("Pendulum-v1")
    writer = OfflineWriter(path, env.observation_space, env.action_space)
    rng = np.random.default_rng(seed)

    def noisy(o: np.ndarray) -> np.ndarray:
        return np.clip(controller(o) + rng.normal(0.0, noise, 1), -2.0, 2.0).astype(np.float32)

    returns = writer.record_episodes(env, noisy, episodes, seed)
    writer.flush()
    return float(np.mean(returns))


def config_of(name: str, data: str, steps: int, seed: int) -> Any:
    from rljax.algorithms.cql import CQLConfig
    from rljax.algorithms.iql import IQLConfig
    from rljax.algorithms.marwil import BCConfig

    if name == "bc":
        config = BCConfig().training(lr=1e-3, train_batch_size_per_learner=256)
    elif name == "cql":
        config = CQLConfig().training(bc_iters=200, train_batch_size_per_learner=256)
    elif name == "iql":
        config = IQLConfig().training(train_batch_size_per_learner=256)
    elif name == "iql_paper":
        config = IQLConfig().training(
            train_batch_size_per_learner=256, beta=3.0, expectile=0.7, tau=0.005
        )
    elif name == "iql_cloning":
        config = IQLConfig().training(train_batch_size_per_learner=256, beta=1e-6)
    else:
        raise ValueError(f"variant {name!r}: bc, cql, iql, iql_paper or iql_cloning")
    return (
        config.environment("Pendulum-v1")
        .offline_data(input_=data, dataset_num_iters_per_learner=steps)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .evaluation(evaluation_duration=EVAL_EPISODES, evaluation_config={"explore": False})
        .debugging(seed=seed)
    )


def run_variant(name: str, data: str, chunks: int, steps: int, seed: int) -> dict[str, Any]:
    algo = config_of(name, data, steps, seed).build_algo()
    try:
        returns, seconds = [], []
        for _ in range(chunks):
            t0 = time.perf_counter()
            algo.train()
            seconds.append(round(time.perf_counter() - t0, 2))
            returns.append(round(float(algo.evaluate()["env_runners"]["episode_return_mean"]), 1))
        return {
            "gradient_steps": [steps * (i + 1) for i in range(chunks)],
            "evaluation_returns": returns,
            "train_s": seconds,
        }
    finally:
        algo.stop()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--noise", type=float, default=0.3, help="the torque noise's std")
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--steps-per-chunk", type=int, default=2500)
    parser.add_argument(
        "--variants", nargs="+", default=["bc", "cql", "iql", "iql_paper", "iql_cloning"]
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2 episodes, 2 chunks of 20 steps")
    parser.add_argument("--out", default=None, help="also write offline_pendulum.json here")
    args = parser.parse_args(argv)
    if args.quick:
        args.episodes, args.chunks, args.steps_per_chunk = 2, 2, 20
    with tempfile.TemporaryDirectory() as data:
        data_return = record(data, args.episodes, args.noise, args.seed)
        report: dict[str, Any] = {
            "benchmark": "offline_pendulum",
            "machine": machine_info(["jax", "flax", "optax"]),
            "episodes": args.episodes,
            "rows": 200 * args.episodes,
            "noise": args.noise,
            "data_return_mean": round(data_return, 1),
            "variants": {},
        }
        for name in args.variants:
            print(f"{name} ...", file=sys.stderr, flush=True)
            report["variants"][name] = run_variant(
                name, data, args.chunks, args.steps_per_chunk, args.seed
            )
    save_report(report, args.out, "offline_pendulum")
    return report


if __name__ == "__main__":
    main()
