"""Scaling out: what running trials through Ray costs (and buys) against rljax on one host.

Part ``ray``: one 4-trial grid (PPO on CartPole-v1, learning rates 1e-3, 5e-4, 3e-4, 1e-4; 8
EnvPool sub-envs, batch 1024, minibatch 256, 4 epochs, fcnet [64, 64], seed 0, N iterations
each), run by

- ``rljax``: ``rljax.tune.Tuner`` in one process (trials that differ only in the learning rate
  train as one population: one vmapped program);
- ``ray``: Ray Tune with ``rljax.tune.ray_trainable("PPO")`` on a one-node local Ray
  (``ray.init(num_cpus=<cores>)``), each trial in its own Ray actor, as many at once as its
  placement group (1 CPU each here) and the cores allow;
- ``ray_2nodes``: the same on a two-node ``ray.cluster_utils.Cluster`` on this machine (half
  the cores each), so that trials are spread over nodes as on a real cluster.

Each variant runs in its own process, one after another; ``wall_s`` counts from that process's
start (imports, Ray's start-up, compilation) to the end of its last trial. Reported per
variant: ``wall_s``, ``trials``, ``env_steps_total`` and ``env_steps_per_s`` (summed over the
trials, over ``wall_s``), each trial's last return, the load average when the variant started
(other work on the machine slows every variant), and for Ray the nodes the trials ran on. On a machine of few cores Ray adds overhead (a process, imports and compilation per
trial, Ray's own processes) and no speed: its gain is trials on more machines than one.

Part ``processes``: learners across local JAX processes against one process, the same run
(PPO on CartPole-v1, fused EnvPool path, 2 learners, 16 sub-envs, 2048-step batches):
``1proc_x_2dev`` (one process, 2 CPU devices) and ``2proc_x_1dev`` (two processes of one
device, ``rljax.distributed.launch_local``, gloo collectives), each in fresh processes, as
``benchmarks/scale_out_processes.py`` runs them (``first_s``, the median ``iteration_s``,
``env_steps_per_s`` after the first iteration); ``two_processes_over_one`` is their ratio.

More parts are added as ``--part NAME`` (see ``PARTS`` and ``PROCESS_VARIANTS``).

Usage::

    python benchmarks/scale_out.py                            # both parts: results/scale_out.json
    python benchmarks/scale_out.py --part ray                 # Ray Tune against rljax.tune
    python benchmarks/scale_out.py --part processes           # 1 process x 2 devices vs 2 x 1
    python benchmarks/scale_out.py --part ray --quick         # smoke test (2 iterations, tiny)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

START = time.time()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine_info, save_report  # noqa: E402

RETURN = "env_runners/episode_return_mean"
STEPS = "num_env_steps_sampled_lifetime"
LRS = [1e-3, 5e-4, 3e-4, 1e-4]
BASE: dict[str, Any] = {
    "env": "CartPole-v1",
    "num_env_runners": 0,
    "num_envs_per_env_runner": 8,
    "train_batch_size_per_learner": 1024,
    "minibatch_size": 256,
    "num_epochs": 4,
    "model_config": {"fcnet_hiddens": [64, 64]},
    "seed": 0,
}
QUICK: dict[str, Any] = {
    **BASE,
    "num_envs_per_env_runner": 2,
    "train_batch_size_per_learner": 64,
    "minibatch_size": 32,
    "num_epochs": 1,
    "model_config": {"fcnet_hiddens": [8]},
}


def _settings(quick: bool) -> dict[str, Any]:
    return dict(QUICK if quick else BASE)


def _trial_summary(metrics: dict[str, Any]) -> dict[str, Any]:
    return {
        "return": metrics.get("env_runners", {}).get("episode_return_mean"),
        "iterations": metrics.get("training_iteration"),
        "env_steps": metrics.get(STEPS),
    }


def run_rljax(iterations: int, quick: bool) -> dict[str, Any]:
    """The grid through rljax's own Tuner, in this process."""
    from rljax import tune
    from rljax.algorithms.ppo import PPOConfig

    with tempfile.TemporaryDirectory() as storage:
        grid = tune.Tuner(
            PPOConfig().update_from_dict(_settings(quick)),
            param_space={"lr": tune.grid_search(LRS)},
            run_config=tune.RunConfig(
                storage_path=storage, stop={"training_iteration": iterations}, verbose=0
            ),
        ).fit()
        trials = [_trial_summary(r.metrics) for r in grid]
        errors = sum(1 for r in grid if r.error)
    return {"trials": trials, "errors": errors, "processes": 1}


def _ray_fit(iterations: int, quick: bool, storage: str) -> tuple[list[dict[str, Any]], int]:
    from ray import tune as ray_tune

    from rljax.tune import ray_trainable

    grid = ray_tune.Tuner(
        ray_trainable("PPO"),
        param_space={**_settings(quick), "lr": ray_tune.grid_search(LRS)},
        tune_config=ray_tune.TuneConfig(reuse_actors=True),
        run_config=ray_tune.RunConfig(
            storage_path=storage, stop={"training_iteration": iterations}, verbose=0
        ),
    ).fit()
    trials = [{**_trial_summary(r.metrics), "node_id": r.metrics.get("node_id")} for r in grid]
    return trials, len(grid.errors)


def run_ray(iterations: int, quick: bool) -> dict[str, Any]:
    """The grid through Ray Tune on a one-node local Ray."""
    import ray

    cores = os.cpu_count() or 1
    # A local instance of its own, never another run's cluster that ray.init() would find.
    ray.init(address="local", num_cpus=cores, include_dashboard=False, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as storage:
            trials, errors = _ray_fit(iterations, quick, storage)
    finally:
        ray.shutdown()
    return {"trials": trials, "errors": errors, "ray_cpus": cores, "nodes": 1}


def run_ray_2nodes(iterations: int, quick: bool) -> dict[str, Any]:
    """The grid through Ray Tune on a two-node cluster on this machine."""
    import ray
    from ray.cluster_utils import Cluster

    cores = max(2, os.cpu_count() or 1)
    per_node = cores // 2
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": per_node, "include_dashboard": False}
    )
    cluster.add_node(num_cpus=per_node)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    try:
        with tempfile.TemporaryDirectory() as storage:
            trials, errors = _ray_fit(iterations, quick, storage)
    finally:
        ray.shutdown()
        cluster.shutdown()
    nodes = len({t["node_id"] for t in trials})
    return {"trials": trials, "errors": errors, "ray_cpus": 2 * per_node, "nodes_used": nodes}


# part -> variant -> function running it (in a fresh process, see main).
PARTS: dict[str, dict[str, Callable[[int, bool], dict[str, Any]]]] = {
    "ray": {"rljax": run_rljax, "ray": run_ray, "ray_2nodes": run_ray_2nodes},
}


# Part ``processes``: its variants run by scale_out_processes.run_variant (a process tree each).
PROCESS_VARIANTS = ("1proc_x_2dev", "2proc_x_1dev")


def _run_processes_part(iterations: int, variants: list[str]) -> dict[str, Any]:
    import scale_out_processes  # beside this script

    part: dict[str, Any] = {
        v: scale_out_processes.run_variant(v, max(iterations, 2)) for v in variants
    }
    if set(PROCESS_VARIANTS) <= set(part):
        one, two = (part[v]["env_steps_per_s"] for v in PROCESS_VARIANTS)
        part["two_processes_over_one"] = round(two / one, 3)
    return part


def _child(part: str, variant: str, iterations: int, quick: bool) -> None:
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    out = PARTS[part][variant](iterations, quick)
    out["load_average_at_start"] = load
    out["wall_s"] = round(time.time() - START, 2)
    steps = sum(t["env_steps"] or 0 for t in out["trials"])
    out["env_steps_total"] = steps
    out["env_steps_per_s"] = round(steps / out["wall_s"], 1)
    print("RESULT " + json.dumps(out))


def _run_variant(part: str, variant: str, iterations: int, quick: bool) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", f"{part}:{variant}"]
    cmd += ["--iterations", str(iterations)] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {"failed": True, "returncode": proc.returncode, "stderr_tail": proc.stderr[-2000:]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parts = sorted([*PARTS, "processes"])
    p.add_argument("--part", action="append", choices=parts, help="repeatable; all")
    p.add_argument("--variants", default=None, help="comma-separated, of the part's variants")
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="2 iterations of a tiny config")
    p.add_argument("--out", default="results", help="directory for scale_out.json")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    iterations = 2 if args.quick else args.iterations
    if args.child:
        part, variant = args.child.split(":")
        _child(part, variant, iterations, args.quick)
        return
    report: dict[str, Any] = {
        "machine": machine_info(["jax", "jaxlib", "envpool", "ray"]),
        "iterations": iterations,
        "quick": args.quick,
        "grid": {"lr": LRS},
        "settings": _settings(args.quick),
    }
    for part in args.part or parts:
        names = list(PROCESS_VARIANTS) if part == "processes" else list(PARTS[part])
        variants = [v for v in args.variants.split(",") if v in names] if args.variants else names
        if part == "processes":
            report[part] = _run_processes_part(iterations, variants)
            continue
        report[part] = {v: _run_variant(part, v, iterations, args.quick) for v in variants}
        base = report[part].get("rljax", {}).get("wall_s")
        for result in report[part].values():
            if base and "wall_s" in result:
                result["wall_vs_rljax"] = round(result["wall_s"] / base, 2)
    save_report(report, args.out, "scale_out")


if __name__ == "__main__":
    main()
