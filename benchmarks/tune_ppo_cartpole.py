"""Tuning PPO on CartPole-v1: trials as one population vs one after another vs Ray Tune + RLlib.

Part (a): 16 trials differing in learning rate (1e-3, 3e-4), entropy coefficient (0, 0.01) and
seed (0..3), on the tuned CartPole config (16 EnvPool sub-envs, batch 4000, minibatch 128, 6
epochs, separate 64x64 tanh policy and value networks), each stopped at a return of 450 or 200k env steps. Variants:

- ``one``: the first trial alone, through ``tune.Tuner`` (the unit of comparison);
- ``population``: the 16 trials through ``tune.Tuner`` as one population (one vmapped program);
- ``sequential``: the 16 trials through ``tune.Tuner(..., TuneConfig(populations=False))``,
  one after another;
- ``ray`` (``--compare``, when Ray is installed): Ray Tune driving RLlib's PPO on the same
  grid and settings (``num_env_runners=0``), as many trials at once as Ray's CPUs allow.

Part (b): the seed tutorial's grid (section 5.2): ``lr`` grid [1e-3, 5e-4, 1e-4] x
``num_epochs`` choice [3, 5, 10] x ``minibatch_size`` choice [32, 64, 128], 2 env runners,
stopped at a return of 195, through ``tune.run`` with metric and mode; rljax against Ray Tune +
RLlib (``--compare``) with the same draws (the choices are drawn once here and passed as
constants, so both run identical trials); ``rljax_workers3`` runs the three trials at once,
each in a worker process (``tune.run(..., max_concurrent_trials=3)``), as Ray Tune does.

Part (c): 4 trials that cannot share one program (policy and value networks [32], [64], [64, 64],
[128, 128]; part (a)'s other settings, learning rate 1e-3, seed 0, the same stop): one after
another in one process (``sequential``) against ``max_concurrent_trials=2`` and ``4``
(``workers2``, ``workers4``: batches at once, each in a worker process).

Every variant runs in its own process, one after another; its time counts from that process's
start (imports, building and compilation included) to the end of its last trial. Reported per
variant: ``wall_s``, ``trials``, ``reached_target`` (trials whose return reached the target),
``env_steps_total`` and ``env_steps_per_s`` (summed over trials, over the wall time),
``processes`` (how many processes trained the trials), and each
trial's last return, iterations and env steps.

Usage::

    python benchmarks/tune_ppo_cartpole.py                  # parts a, b and c, rljax only
    python benchmarks/tune_ppo_cartpole.py --compare        # plus Ray Tune + RLlib
    python benchmarks/tune_ppo_cartpole.py --parts b --compare \
        --ray-python /path/to/rllib-venv/bin/python         # Ray's side in another venv
    python benchmarks/tune_ppo_cartpole.py --parts a --quick  # smoke test (4 tiny trials)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine_info, quick_env, save_report  # noqa: E402

RETURN = "env_runners/episode_return_mean"
STEPS = "num_env_steps_sampled_lifetime"

BASE = {
    "env": "CartPole-v1",
    "num_env_runners": 0,
    "num_envs_per_env_runner": 16,
    "train_batch_size_per_learner": 4000,
    "minibatch_size": 128,
    "num_epochs": 6,
    "gamma": 0.99,
    "lambda_": 0.95,
    "clip_param": 0.2,
    "vf_clip_param": None,
    "vf_loss_coeff": 0.5,
    "use_kl_loss": False,
    "kl_coeff": 0.0,
    "model_config": {
        "fcnet_hiddens": [64, 64],
        "fcnet_activation": "tanh",
        "vf_share_layers": False,
    },
}
QUICK = {**BASE, "num_envs_per_env_runner": 4, "train_batch_size_per_learner": 256,
         "minibatch_size": 64, "num_epochs": 1}  # fmt: skip


def process_age_s() -> float:
    """Seconds since this process started (``/proc/self/stat``), else since import."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED


_IMPORTED = time.perf_counter()


# ---------------------------------------------------------------------- the experiments
def grid_a(quick: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(constants, grids) of part (a)."""
    if quick:
        return QUICK, {"lr": [1e-3, 3e-4], "seed": [0, 1]}
    return BASE, {"lr": [1e-3, 3e-4], "entropy_coeff": [0.0, 0.01], "seed": [0, 1, 2, 3]}


def stop_a(quick: bool) -> dict[str, Any]:
    return {"training_iteration": 2} if quick else {RETURN: 450.0, STEPS: 200_000}


def seed_grid_b(quick: bool) -> list[dict[str, Any]]:
    """The seed tutorial's three trials, the ``tune.choice`` values drawn once (seeded)."""
    import random

    rng = random.Random(0)
    lrs = [1e-3, 5e-4, 1e-4]
    return [
        {
            "lr": lr,
            "num_epochs": 1 if quick else rng.choice([3, 5, 10]),
            "minibatch_size": 32 if quick else rng.choice([32, 64, 128]),
        }
        for lr in lrs
    ]


def stop_b(quick: bool) -> dict[str, Any]:
    return {"training_iteration": 1} if quick else {RETURN: 195.0, STEPS: 300_000}


def space_c(quick: bool) -> dict[str, Any]:
    """Part (c)'s trials: four network sizes, so four programs."""
    base = QUICK if quick else BASE
    sizes = [[8], [16]] if quick else [[32], [64], [64, 64], [128, 128]]
    return {
        **base,
        "lr": 1e-3,
        "seed": 0,
        "model_config": {**base["model_config"], "fcnet_hiddens": {"grid": sizes}},
    }


def summarize(results: list[dict[str, Any]], target: float, wall_s: float) -> dict[str, Any]:
    def ret(m: dict[str, Any]) -> float:
        return float(m.get("env_runners", {}).get("episode_return_mean", float("nan")))

    steps = sum(int(m.get(STEPS, 0)) for m in results)
    return {
        "wall_s": wall_s,
        "trials": len(results),
        "reached_target": sum(1 for m in results if ret(m) >= target),
        "env_steps_total": steps,
        "env_steps_per_s": steps / wall_s if wall_s > 0 else float("nan"),
        "processes": len({m.get("pid") for m in results}),  # that trained the trials
        "per_trial": [
            {
                "return": ret(m),
                "iterations": int(m.get("training_iteration", 0)),
                "env_steps": int(m.get(STEPS, 0)),
            }
            for m in results
        ],
    }


def run_rljax(part: str, variant: str, quick: bool, storage: str) -> dict[str, Any]:
    from rljax import tune

    if part == "c":
        space = space_c(quick)
        model = dict(space["model_config"])
        model["fcnet_hiddens"] = tune.grid_search(model["fcnet_hiddens"]["grid"])
        cap = {"sequential": None, "workers2": 2, "workers4": 4}[variant]
        grid = tune.Tuner(
            "PPO",
            param_space={**space, "model_config": model},
            tune_config=tune.TuneConfig(metric=RETURN, mode="max", max_concurrent_trials=cap),
            run_config=tune.RunConfig(
                name=f"c_{variant}", storage_path=storage, stop=stop_a(quick), verbose=0
            ),
        ).fit()
        return summarize([r.metrics for r in grid], 450.0, process_age_s())
    if part == "a":
        constants, grids = grid_a(quick)
        if variant == "one":
            grids = {k: v[:1] for k, v in grids.items()}
        space = {**constants, **{k: tune.grid_search(v) for k, v in grids.items()}}
        grid = tune.Tuner(
            "PPO",
            param_space=space,
            tune_config=tune.TuneConfig(
                metric=RETURN, mode="max", populations=variant != "sequential"
            ),
            run_config=tune.RunConfig(
                name=f"a_{variant}", storage_path=storage, stop=stop_a(quick), verbose=0
            ),
        ).fit()
        results, target = [r.metrics for r in grid], 450.0
    else:
        trials = seed_grid_b(quick)
        config = {
            "env": "CartPole-v1",
            "num_env_runners": 2,
            "lr": tune.grid_search([t["lr"] for t in trials]),
            # one trial per lr, with its drawn epochs and minibatch size
            "num_epochs": tune.sample_from(
                lambda spec: {t["lr"]: t["num_epochs"] for t in trials}[spec.config.lr]
            ),
            "minibatch_size": tune.sample_from(
                lambda spec: {t["lr"]: t["minibatch_size"] for t in trials}[spec.config.lr]
            ),
        }
        analysis = tune.run(
            "PPO",
            config=config,
            stop=stop_b(quick),
            num_samples=1,
            metric=RETURN,
            mode="max",
            storage_path=storage,
            name=f"b_{variant}",
            verbose=0,
            # rljax_workers3: the three trials at once, each in a worker process, as Ray Tune
            # runs them; rljax: one after another in this process (the default).
            max_concurrent_trials=3 if variant == "rljax_workers3" else None,
        )
        results, target = [r.metrics for r in analysis.trials], 195.0
    return summarize(results, target, process_age_s())


def run_ray(part: str, quick: bool, storage: str) -> dict[str, Any]:
    import ray
    from ray import tune as ray_tune
    from ray.rllib.algorithms.ppo import PPOConfig

    # Part (b)'s trials ask for 3 CPUs each (a driver and 2 env runners): Ray is told there are
    # at least 3, or it would wait for resources forever on a 2-core machine.
    cpus = os.cpu_count() or 1
    ray.init(
        include_dashboard=False, log_to_driver=False, num_cpus=cpus if part == "a" else max(cpus, 3)
    )
    if part == "a":
        constants, grids = grid_a(quick)
        config = PPOConfig().environment(constants["env"])
        config.env_runners(
            num_env_runners=0, num_envs_per_env_runner=constants["num_envs_per_env_runner"]
        )
        config.training(
            train_batch_size_per_learner=constants["train_batch_size_per_learner"],
            minibatch_size=constants["minibatch_size"],
            num_epochs=constants["num_epochs"],
            gamma=constants["gamma"],
            lambda_=constants["lambda_"],
            clip_param=constants["clip_param"],
            vf_clip_param=float("inf"),  # RLlib has no None: unclipped
            vf_loss_coeff=constants["vf_loss_coeff"],
            use_kl_loss=False,
            kl_coeff=0.0,
            lr=ray_tune.grid_search(grids["lr"]),
            entropy_coeff=ray_tune.grid_search(grids.get("entropy_coeff", [0.0])),
        )
        config.rl_module(model_config=constants["model_config"])
        config.debugging(seed=ray_tune.grid_search(grids["seed"]))
        stop, target = stop_a(quick), 450.0
    else:
        trials = seed_grid_b(quick)
        config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2)
        config.training(
            lr=ray_tune.grid_search([t["lr"] for t in trials]),
            num_epochs=ray_tune.sample_from(
                lambda spec: {t["lr"]: t["num_epochs"] for t in trials}[spec.config.lr]
            ),
            minibatch_size=ray_tune.sample_from(
                lambda spec: {t["lr"]: t["minibatch_size"] for t in trials}[spec.config.lr]
            ),
        )
        stop, target = stop_b(quick), 195.0
    grid = ray_tune.Tuner(
        "PPO",
        param_space=config,
        tune_config=ray_tune.TuneConfig(metric=RETURN, mode="max"),
        run_config=ray_tune.RunConfig(
            name=f"{part}_ray", storage_path=storage, stop=stop, verbose=0
        ),
    ).fit()
    results = [r.metrics for r in grid]
    ray.shutdown()
    return summarize(results, target, process_age_s())


# ---------------------------------------------------------------------- driver
def child(args: argparse.Namespace) -> None:
    part, variant = args.variant.split(":")
    with tempfile.TemporaryDirectory() as storage:
        if variant == "ray":
            out = run_ray(part, args.quick, storage)
        else:
            out = run_rljax(part, variant, args.quick, storage)
    print(json.dumps(out))


def run_variant(
    part: str, variant: str, quick: bool, python: str = sys.executable
) -> dict[str, Any]:
    cmd = [python, os.path.abspath(__file__), "--variant", f"{part}:{variant}"]
    if quick:
        cmd.append("--quick")
    print(f"[{part}:{variant}] running ...", file=sys.stderr, flush=True)
    # --quick compiles with most of XLA's optimisations off (its figures mean nothing).
    env = quick_env() if quick else None
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"status": "failed", "returncode": proc.returncode, "tail": proc.stderr[-3000:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"[{part}:{variant}] {out['wall_s']:.1f} s", file=sys.stderr, flush=True)
    return {"status": "ok", **out}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", nargs="+", choices=["a", "b", "c"], default=["a", "b", "c"])
    p.add_argument("--compare", action="store_true", help="add Ray Tune + RLlib if installed")
    p.add_argument(
        "--ray-python",
        default=None,
        help="the interpreter with ray[rllib] and torch for --compare (default: this one)",
    )
    p.add_argument("--quick", action="store_true", help="tiny trials: a smoke test")
    p.add_argument("--out", default="results", help="directory for tune_ppo_cartpole.json")
    p.add_argument("--variant", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.variant:
        child(args)
        return 0
    import importlib.util

    have_ray = args.ray_python is not None or (
        importlib.util.find_spec("ray") is not None
        and importlib.util.find_spec("torch") is not None
    )
    report: dict[str, Any] = {
        "machine": machine_info(["rljax", "jax", "envpool", "ray", "torch"]),
        "quick": args.quick,
        "results": {},
    }
    failed = False
    for part in args.parts:
        variants = {
            "a": ["one", "population", "sequential"],
            "b": ["rljax", "rljax_workers3"],
            # --quick has two trials in part (c), so four workers would be two again.
            "c": ["sequential", "workers2"]
            if args.quick
            else ["sequential", "workers2", "workers4"],
        }[part]
        if args.compare and part != "c":
            variants.append("ray")
        for variant in variants:
            if variant == "ray" and not have_ray:
                report["results"][f"{part}_{variant}"] = {"status": "not installed"}
                continue
            python = args.ray_python if variant == "ray" and args.ray_python else sys.executable
            res = run_variant(part, variant, args.quick, python)
            failed |= res["status"] == "failed"
            report["results"][f"{part}_{variant}"] = res
    r = report["results"]

    def ratio(a: str, b: str) -> float | None:
        if r.get(a, {}).get("status") == "ok" and r.get(b, {}).get("status") == "ok":
            return r[a]["wall_s"] / r[b]["wall_s"]
        return None

    report["ratios"] = {
        "a_population_over_one": ratio("a_population", "a_one"),
        "a_sequential_over_population": ratio("a_sequential", "a_population"),
        "a_ray_over_population": ratio("a_ray", "a_population"),
        "b_rljax_over_ray": ratio("b_rljax", "b_ray"),
        "b_rljax_workers3_over_rljax": ratio("b_rljax_workers3", "b_rljax"),
        "c_workers2_over_sequential": ratio("c_workers2", "c_sequential"),
        "c_workers4_over_sequential": ratio("c_workers4", "c_sequential"),
    }
    save_report(report, args.out, "tune_ppo_cartpole")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
