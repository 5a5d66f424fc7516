"""What seeing a run costs: episode callbacks and per-iteration logging on the fused PPO
CartPole benchmark, beside the same run without them; and what serving a policy costs:
loading a module for inference and exporting it, beside loading the whole algorithm.

Part (a), training throughput (env steps/s over timed iterations after a warm-up one, the
benchmark's PPO CartPole settings: 16 EnvPool envs, 4,000 steps per iteration, 6 epochs):

- ``baseline``: no callbacks, no logging (the fused program without recorded steps);
- ``on_episode_end``: a callback logging each episode's length (``log_value``), so the
  iteration's steps come back to the host and are replayed;
- ``on_episode_step``: also a hook on every step (a Python call per env step, once per iteration);
- ``tensorboard_csv_json``: no callbacks; every result written to TensorBoard, progress.csv and
  result.json (``rljax train --logdir``'s sinks).

Variants alternate iteration by iteration (``--rounds``), so a slower stretch of the machine
touches all of them alike.

Part (b), serving: seconds to load a checkpoint's policy with ``RLModule.from_checkpoint``
(no env, runner or learner program) beside ``Algorithm.from_checkpoint`` (everything), to
export it (``export_policy``: two StableHLO programs), and the latency of one greedy action for
a batch of 1 and of 1,024 observations through the exported program, ``algo.compute_actions``
and the loaded module.

    python benchmarks/callbacks_and_serving.py [--rounds 5] [--out results]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, save_report  # noqa: E402

VARIANTS = ("baseline", "on_episode_end", "on_episode_step", "tensorboard_csv_json")


def config(variant: str, batch: int = 4000) -> Any:
    from rljax.algorithms.ppo import PPOConfig

    cfg = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=16)
        .training(train_batch_size_per_learner=batch, minibatch_size=128, num_epochs=6, lr=3e-4)
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
        .debugging(seed=0)
    )

    def on_episode_end(*, episode: Any, metrics_logger: Any, **kwargs: Any) -> None:
        metrics_logger.log_value("episode_length", len(episode), window=100)

    def on_episode_step(*, episode: Any, **kwargs: Any) -> None:
        episode.custom_data["steps"] = episode.custom_data.get("steps", 0) + 1

    if variant == "on_episode_end":
        cfg = cfg.callbacks(on_episode_end=on_episode_end)
    elif variant == "on_episode_step":
        cfg = cfg.callbacks(on_episode_end=on_episode_end, on_episode_step=on_episode_step)
    return cfg


def part_a(rounds: int) -> dict[str, Any]:
    from rljax.utils.result_loggers import make_loggers

    algos = {v: config(v).build_algo() for v in VARIANTS}
    logdir = tempfile.mkdtemp(prefix="rljax-bench-logs-")
    sinks = make_loggers(logdir)
    seconds: dict[str, list[float]] = {v: [] for v in VARIANTS}
    steps: dict[str, list[int]] = {v: [] for v in VARIANTS}
    try:
        for algo in algos.values():
            algo.train()  # compiles
        for _ in range(rounds):
            for v, algo in algos.items():
                t0 = time.perf_counter()
                result = algo.train()
                if v == "tensorboard_csv_json":
                    for sink in sinks:
                        sink.log(result)
                seconds[v].append(time.perf_counter() - t0)
                steps[v].append(result["env_runners"]["num_env_steps_sampled"])
    finally:
        for sink in sinks:
            sink.close()
        for algo in algos.values():
            algo.stop()
    base = sum(steps["baseline"]) / sum(seconds["baseline"])
    out = {}
    for v in VARIANTS:
        rate = sum(steps[v]) / sum(seconds[v])
        extra = statistics.median(seconds[v]) - statistics.median(seconds["baseline"])
        out[v] = {
            "env_steps_per_s": round(rate),
            "relative_to_baseline": round(rate / base, 3),
            "median_iteration_s": round(statistics.median(seconds[v]), 4),
            "median_extra_us_per_env_step": round(1e6 * extra / statistics.median(steps[v]), 2),
        }
    return out


def _latency(fn: Any, obs: np.ndarray, repeats: int = 50) -> float:
    fn(obs)
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn(obs)
    return (time.perf_counter() - t0) / repeats


def part_b() -> dict[str, Any]:
    import jax
    from jax import export

    from rljax.algorithms.algorithm import Algorithm
    from rljax.core.rl_module.rl_module import RLModule

    work = Path(tempfile.mkdtemp(prefix="rljax-bench-serve-"))
    algo = config("baseline").build_algo()
    algo.train()
    ckpt = algo.save_to_path(work / "ckpt")
    t0 = time.perf_counter()
    algo.export_policy(work / "exported")
    export_s = time.perf_counter() - t0
    # Each loaded three times, alternating; the median (the first load pays imports).
    module_times, full_times = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        module = RLModule.from_checkpoint(ckpt)
        module_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        full = Algorithm.from_checkpoint(ckpt)
        full_times.append(time.perf_counter() - t0)
        full.stop()
    module_s, full_s = statistics.median(module_times), statistics.median(full_times)
    program = export.deserialize((work / "exported" / "policy_greedy.stablehlo").read_bytes())
    latency = {}
    for batch in (1, 1024):
        obs = np.random.default_rng(batch).uniform(-0.2, 0.2, (batch, 4)).astype(np.float32)
        latency[f"batch_{batch}"] = {
            "exported_ms": round(1e3 * _latency(lambda o: np.asarray(program.call(o)), obs), 4),
            "compute_actions_ms": round(1e3 * _latency(algo.compute_actions, obs), 4),
            "module_forward_inference_ms": round(
                1e3 * _latency(lambda o: module.forward_inference({"obs": o}), obs), 4
            ),
        }
    algo.stop()
    return {
        "rl_module_from_checkpoint_s": round(module_s, 3),
        "algorithm_from_checkpoint_s": round(full_s, 3),
        "export_policy_s": round(export_s, 3),
        "greedy_action_latency": latency,
        "jax_backend": jax.default_backend(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=10, help="timed iterations per variant")
    p.add_argument("--parts", nargs="+", choices=["a", "b"], default=["a", "b"])
    p.add_argument("--out", default="results", help="directory for callbacks_and_serving.json")
    args = p.parse_args()
    report: dict[str, Any] = {"machine": machine_info(["jax", "envpool", "rljax"])}
    if "a" in args.parts:
        report["a_training_throughput"] = part_a(args.rounds)
    if "b" in args.parts:
        report["b_serving"] = part_b()
    save_report(report, args.out, "callbacks_and_serving")


if __name__ == "__main__":
    main()
