"""A population's trials split over devices: env steps/s of one PPO population on 1, 2, ... devices.

rljax's ``Population`` on a JAX env splits its trial axis over the local devices it is given
(``rljax.execution.population``: ``d`` devices each run ``K / d`` trials; the rollout and the
update need no communication between them). This script builds the same population (``--members`` trials of PPO at
PureJaxRL's CartPole settings, 4 envs x 128 steps, 4 epochs of 4 minibatches, 64x64 tanh,
seeds 0 .. K-1) on the first ``d`` devices for each ``d`` of ``--devices``, calls each one's
``train()`` in turns (``--iters`` rounds) and prints one JSON: per layout the env steps/s summed
over the trials (median call), the first call (compilation), and the ratio to the fewest
devices; on one line, and indented in ``OUT/population_devices.json``.

On a CPU the devices are host devices: the script sets
``XLA_FLAGS=--xla_force_host_platform_device_count=<max(--devices)>`` before JAX starts unless
``XLA_FLAGS`` already names a device count (then the run's own). Host devices share the
machine's cores, so the ratio says how much of the cores a one-device program leaves idle; on a
machine with several GPUs the devices are the GPUs (``--backend gpu``).

``--single`` adds what the same devices give one trial (``"single_trial"``): PPO with
``num_learners`` 1 and ``max(--devices)`` (its batch split over the devices, gradients averaged
each minibatch; the same total batch and minibatch) at 4 x 128, 16 x 250 and 64 x 128 envs x
steps, timed in turns.

Run: python benchmarks/population_devices.py [--devices 1 2] [--members 16] [--iters 10]
[--env rljax:CartPole-v1] [--backend cpu] [--single] [--quick] [--out results/population_devices]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

DEVICE_COUNT_FLAG = "xla_force_host_platform_device_count"
# --single: (envs, steps per env) of one trial's batch.
SINGLE_SETTINGS = ((4, 128), (16, 250), (64, 128))


def in_turns(calls: dict[Any, Any], iters: int) -> dict[Any, float]:
    """Each call's median seconds, the calls made in turns ``iters`` times."""
    times: dict[Any, list[float]] = {k: [] for k in calls}
    for _ in range(iters):
        for k, call in calls.items():
            t0 = time.perf_counter()
            call()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def single_trial(env: str, devices: int, iters: int) -> list[dict[str, Any]]:
    """One trial with ``num_learners`` 1 and ``devices`` at each of ``SINGLE_SETTINGS``."""
    from jax_envs import ppo_config

    rows = []
    for num_envs, num_steps in SINGLE_SETTINGS:
        batch = num_envs * num_steps
        algos = {}
        try:
            for learners in (1, devices):
                config = ppo_config(env, num_envs, num_steps).learners(num_learners=learners)
                config = config.training(
                    train_batch_size_per_learner=batch // learners,
                    minibatch_size=batch // 4 // learners,
                )
                algos[learners] = config.build_algo()
                algos[learners].train()  # compiles
            median = in_turns({k: a.train for k, a in algos.items()}, iters)
        finally:
            for a in algos.values():
                a.stop()
        rate = {k: batch / t for k, t in median.items()}
        rows.append(
            {
                "num_envs": num_envs,
                "num_steps": num_steps,
                "env_steps_per_s": {str(k): v for k, v in rate.items()},
                "ratio": rate[devices] / rate[1],
            }
        )
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--devices", type=int, nargs="+", default=[1, 2], help="layouts to time")
    p.add_argument("--members", type=int, default=16, help="trials in the population")
    p.add_argument("--iters", type=int, default=10, help="timed rounds (each layout once)")
    p.add_argument("--env", default="rljax:CartPole-v1", help="a JAX env (rljax:, gymnax:, ...)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    p.add_argument("--single", action="store_true", help="one trial on the devices too")
    p.add_argument("--quick", action="store_true", help="4 trials, 2 rounds: a smoke test")
    p.add_argument("--out", default="results/population_devices")
    args = p.parse_args(argv)
    if args.quick:
        args.members, args.iters = 4, 2
    if min(args.devices) < 1:
        p.error(f"--devices {args.devices}: each layout needs at least one device")
    for d in args.devices:
        if args.members % d:
            p.error(f"--members {args.members} is not a multiple of --devices {d}")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.quick:
        from common import set_quick_compilation

        set_quick_compilation()
    if args.backend == "cpu" and DEVICE_COUNT_FLAG not in os.environ.get("XLA_FLAGS", ""):
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --{DEVICE_COUNT_FLAG}={max(args.devices)}".strip()
    os.environ.setdefault("JAX_PLATFORMS", args.backend if args.backend == "cpu" else "")

    import jax
    from common import machine_info
    from jax_envs import population_configs, ppo_config

    from rljax.execution.population import Population

    available = jax.devices(args.backend)
    if max(args.devices) > len(available):
        raise SystemExit(f"--devices {args.devices}: this machine has {len(available)}")
    num_envs, num_steps = 4, 128
    config = ppo_config(args.env, num_envs, num_steps)
    per_call = args.members * num_envs * num_steps
    pops: dict[int, Any] = {}
    first_s: dict[int, float] = {}
    try:
        for d in args.devices:
            t0 = time.perf_counter()
            pops[d] = Population(
                population_configs(args.env, args.members, config), devices=available[:d]
            )
            assert pops[d].num_devices == d, (pops[d].num_devices, d)
            pops[d].train()
            first_s[d] = time.perf_counter() - t0
        median = in_turns({d: pop.train for d, pop in pops.items()}, args.iters)
    finally:
        for pop in pops.values():
            pop.stop()
    rows = {
        str(d): {
            "devices": d,
            "trials_per_device": args.members // d,
            "env_steps_per_s": per_call / median[d],
            "call_ms": 1000 * median[d],
            "first_call_s": first_s[d],
        }
        for d in args.devices
    }
    base = rows[str(min(args.devices))]["env_steps_per_s"]
    for row in rows.values():
        row["ratio_to_fewest_devices"] = row["env_steps_per_s"] / base
    report = {
        "benchmark": "population_devices",
        "settings": {
            "env": args.env,
            "members": args.members,
            "num_envs": num_envs,
            "num_steps": num_steps,
            "iters": args.iters,
            "backend": args.backend,
            "quick": args.quick,
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
        },
        "machine": machine_info(["rljax", "jax", "jaxlib", "flax"]),
        "layouts": rows,
    }
    if args.single and max(args.devices) > 1:
        report["single_trial"] = single_trial(args.env, max(args.devices), args.iters)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "population_devices.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report), flush=True)  # one line
    return report


if __name__ == "__main__":
    main()
