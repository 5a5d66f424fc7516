"""PPO on CartPole-v1: rljax's training throughput and time to solve, optionally vs RLlib and SB3.

Every variant trains the same PPO (batch 4000 = 16 envs x 250 steps, minibatch 128, 6 epochs,
lr 3e-4, gamma 0.99, GAE lambda 0.95, clip 0.2, vf coeff 0.5, no entropy bonus, no KL term, no
value clipping, no gradient clipping, separate 64x64 tanh policy and value MLPs) in its own
subprocess, so that each one pays for, and measures, its own interpreter start, imports and
compilation:

* ``rljax_fused``: rljax with ``num_env_runners=0``; EnvPool is stepped through its XLA custom call
  inside one jitted function that does the rollout and all PPO epochs (the fused path).
* ``rljax_host``: the same config with ``num_env_runners=1``; a runner thread samples each
  fragment in one jitted call (EnvPool's XLA step in a scan), then the jitted update runs.
  This is the in-project baseline for the fused path.
* ``rllib`` / ``sb3`` (``--compare`` only): Ray RLlib's new API stack (``num_env_runners=0``) and
  Stable-Baselines3 with the same hyper-parameters, when importable; otherwise reported as
  ``{"status": "not installed"}``. The script never installs anything.

Measured per variant:

1. ``throughput_env_steps_per_s``: env steps sampled (and trained on) per second of ``train()``
   wall time, over every iteration after the first (the first one includes compilation).
2. ``time_to_target_s``: wall time from the *creation of the process* to the end of the first
   iteration whose return (RLlib's ``episode_return_mean``: the mean over the episodes finished
   in that iteration, at most the last 100; Stable-Baselines3 keeps a rolling window of its last
   100 episodes across iterations, which lags) is >= 450. The process creation time is read from ``starttime`` in
   ``/proc/self/stat`` against ``/proc/uptime`` (same kernel clock, 10 ms ticks); when ``/proc`` is
   missing it falls back to ``psutil.Process().create_time()`` (up to 1 s off: Linux's boot time
   is whole seconds), then to ``time.time()`` taken at the top of this script after the standard
   library imports (heavy imports are deferred). ``process_start_source`` names which was used.
3. ``env_steps_to_target``: the framework's own lifetime count of sampled env steps at that
   iteration (rljax resets an ended sub-env in the step that ended it, as RLlib does: each
   iteration samples exactly 4000).
4. ``first_iteration_s``: the first ``train()`` call, which for rljax is mostly XLA compilation;
   ``build_s`` (``build_algo()``) and ``ready_s`` (process start to the first ``train()`` call)
   are reported beside it.

Every variant runs ``ceil(max_timesteps / 4000)`` iterations (the same number of updates for all;
it does not stop at the target). The script
prints one JSON object (settings, machine, results with per-iteration curves) to stdout, writes it
to ``OUT/ppo_cartpole.json`` and plots the smoothed return against wall time since process start
and against env steps to ``OUT/ppo_cartpole.png``. Progress goes to stderr.

Usage::

    python benchmarks/ppo_cartpole.py                  # rljax fused and host, 300k env steps
    python benchmarks/ppo_cartpole.py --compare        # plus RLlib and SB3 when installed
    python benchmarks/ppo_cartpole.py --quick          # smoke test: 2 iterations, < 30 s

``--quick`` runs the variants concurrently, with most of XLA's optimisations off to compile
faster (``common.quick_additions``), to stay short; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import importlib.metadata
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from common import machine_info, quick_additions, quick_env

# Fallback process start time, taken before any heavy import (jax, envpool, ray, torch).
SCRIPT_START = time.time()

RLJAX_VARIANTS = ("fused", "host")
COMPARE_VARIANTS = ("rllib", "sb3")
RESULT_KEYS = {"fused": "rljax_fused", "host": "rljax_host", "rllib": "rllib", "sb3": "sb3"}
# Top-level modules each comparison needs; checked with find_spec, which imports nothing.
COMPARE_REQUIREMENTS = {"rllib": ("ray", "torch"), "sb3": ("stable_baselines3", "torch")}
QUICK_ITERATIONS = 2  # the first compiles; throughput from the second
_STDERR_LOCK = threading.Lock()

# One training iteration: returns (lifetime env steps sampled, smoothed episode return).
StepFn = Callable[[], tuple[int, float]]


@dataclass(frozen=True)
class Settings:
    """Hyper-parameters shared by every variant (RLlib's names)."""

    seed: int = 0
    max_timesteps: int = 300_000
    num_envs_per_env_runner: int = 16
    minibatch_size: int = 128
    num_epochs: int = 6
    train_batch_size: int = 4000
    lr: float = 3e-4
    gamma: float = 0.99
    lambda_: float = 0.95
    clip_param: float = 0.2
    vf_loss_coeff: float = 0.5
    entropy_coeff: float = 0.0
    fcnet_hiddens: tuple[int, ...] = (64, 64)
    fcnet_activation: str = "tanh"
    target_return: float = 450.0
    smoothing_window: int = 100
    env: str = "CartPole-v1"
    profile_rounds: int = 10  # the fused variant's profile (ppo_profile.py); 0: none


# ---------------------------------------------------------------------- timing helpers
def process_start_time() -> tuple[float, str]:
    """The wall-clock time this process was created, and how it was found."""
    try:
        with open("/proc/self/stat") as f:
            # Fields after the ")" that closes the command name start at field 3 (state);
            # starttime is field 22, in clock ticks since boot.
            fields = f.read().rpartition(")")[2].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return time.time() - age, "/proc/self/stat starttime vs /proc/uptime"
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return psutil.Process().create_time(), "psutil.Process().create_time()"
    except Exception:
        return SCRIPT_START, "time.time() at the top of the script"


def finite_or_none(x: float) -> float | None:
    """JSON has no NaN: a return mean before the first finished episode becomes null."""
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def lifetime_steps(result: dict[str, Any]) -> int:
    """``num_env_steps_sampled_lifetime`` from an RLlib-style result (top level or env_runners)."""
    for where in (result, result.get("env_runners", {})):
        if "num_env_steps_sampled_lifetime" in where:
            return int(where["num_env_steps_sampled_lifetime"])
    raise KeyError("num_env_steps_sampled_lifetime not in the result dict")


def run_training(
    name: str, build: Callable[[Settings], tuple[StepFn, Callable[[], None]]], s: Settings
) -> dict[str, Any]:
    """Builds a variant, trains it to ``max_timesteps`` and summarizes the timings."""
    process_start, source = process_start_time()
    t0 = time.perf_counter()
    step, close = build(s)
    build_s = time.perf_counter() - t0
    ready_s = time.time() - process_start
    curve: list[dict[str, Any]] = []
    num_iterations = math.ceil(s.max_timesteps / s.train_batch_size)
    profiled: dict[str, Any] | None = None
    try:
        for _ in range(num_iterations):
            t0 = time.perf_counter()
            steps, ret = step()
            iter_s = time.perf_counter() - t0
            point = {
                "iteration": len(curve) + 1,
                "wall_s": time.time() - process_start,
                "iter_s": iter_s,
                "env_steps": steps,
                "episode_return_mean": finite_or_none(ret),
            }
            curve.append(point)
            if len(curve) in (1, num_iterations) or len(curve) % 10 == 0:
                ret_text = "n/a" if point["episode_return_mean"] is None else f"{ret:.1f}"
                print(
                    f"{name}: iter {len(curve)} steps {steps} return {ret_text} "
                    f"wall {point['wall_s']:.1f}s iter {iter_s:.3f}s",
                    file=sys.stderr,
                    flush=True,
                )
        profile = getattr(step, "profile", None)
        profiled = profile(s.profile_rounds) if profile is not None and s.profile_rounds else None
    finally:
        close()
    summary = summarize(curve, s, source, build_s, ready_s, SCRIPT_START - process_start)
    if profiled is not None:
        summary["profile"] = profiled
    return summary


def summarize(
    curve: list[dict[str, Any]],
    s: Settings,
    source: str,
    build_s: float,
    ready_s: float,
    interpreter_start_s: float,
) -> dict[str, Any]:
    """Throughput after the first iteration, time and steps to the target, and the curve."""
    later = curve[1:]
    later_s = sum(p["iter_s"] for p in later)
    later_steps = curve[-1]["env_steps"] - curve[0]["env_steps"] if later else 0
    hit = next(
        (
            p
            for p in curve
            if p["episode_return_mean"] is not None and p["episode_return_mean"] >= s.target_return
        ),
        None,
    )
    iter_times = sorted(p["iter_s"] for p in later)
    return {
        "status": "ok",
        "process_start_source": source,
        "interpreter_start_s": interpreter_start_s,
        "build_s": build_s,
        "ready_s": ready_s,
        "first_iteration_s": curve[0]["iter_s"],
        "throughput_env_steps_per_s": later_steps / later_s if later_s > 0 else None,
        "median_iteration_s": iter_times[len(iter_times) // 2] if iter_times else None,
        "iterations": len(curve),
        "env_steps_total": curve[-1]["env_steps"],
        "train_wall_s": sum(p["iter_s"] for p in curve),
        "total_wall_s": curve[-1]["wall_s"],
        "reached_target": hit is not None,
        "time_to_target_s": hit["wall_s"] if hit else None,
        "env_steps_to_target": hit["env_steps"] if hit else None,
        "iterations_to_target": hit["iteration"] if hit else None,
        "final_episode_return_mean": curve[-1]["episode_return_mean"],
        "curve": curve,
    }


# ---------------------------------------------------------------------- variants
def ppo_config(config_class: type, s: Settings, num_env_runners: int, vf_clip_param: Any) -> Any:
    """The same chained config for rljax and RLlib: only the import differs (and RLlib needs a
    number for ``vf_clip_param``: it always clamps the value loss, so ``inf`` means no clip)."""
    return (
        config_class()
        .environment(s.env)
        .env_runners(
            num_env_runners=num_env_runners, num_envs_per_env_runner=s.num_envs_per_env_runner
        )
        .training(
            lr=s.lr,
            num_epochs=s.num_epochs,
            minibatch_size=s.minibatch_size,
            train_batch_size_per_learner=s.train_batch_size,
            gamma=s.gamma,
            lambda_=s.lambda_,
            vf_loss_coeff=s.vf_loss_coeff,
            entropy_coeff=s.entropy_coeff,
            vf_clip_param=vf_clip_param,
            use_kl_loss=False,
            kl_coeff=0.0,
            clip_param=s.clip_param,
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": list(s.fcnet_hiddens),
                "fcnet_activation": s.fcnet_activation,
                "vf_share_layers": False,
            }
        )
        .reporting(metrics_num_episodes_for_smoothing=s.smoothing_window)
        .debugging(seed=s.seed)
    )


def build_rljax(s: Settings, num_env_runners: int) -> tuple[StepFn, Callable[[], None]]:
    """rljax's PPO; ``num_env_runners=0`` is the fused path, 1 the Python-stepped host runner."""
    warnings.filterwarnings("ignore", message=".*precision lowered.*")
    from rljax.algorithms.ppo import PPOConfig

    algo = ppo_config(PPOConfig, s, num_env_runners, vf_clip_param=None).build_algo()

    def step() -> tuple[int, float]:
        result = algo.train()
        return lifetime_steps(result), result["env_runners"]["episode_return_mean"]

    if num_env_runners == 0:  # the fused path: where its iteration's time goes
        from ppo_profile import profile_fused

        step.profile = lambda rounds: profile_fused(algo, rounds)  # type: ignore[attr-defined]
    return step, algo.stop


def build_rllib(s: Settings) -> tuple[StepFn, Callable[[], None]]:
    """Ray RLlib's PPO on the new API stack, sampling in the driver (``num_env_runners=0``)."""
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    config = ppo_config(PPOConfig, s, 0, vf_clip_param=float("inf"))
    algo = config.build_algo() if hasattr(config, "build_algo") else config.build()

    def step() -> tuple[int, float]:
        result = algo.train()
        return lifetime_steps(result), result["env_runners"].get("episode_return_mean", math.nan)

    def close() -> None:
        algo.stop()
        ray.shutdown()

    return step, close


def build_sb3(s: Settings) -> tuple[StepFn, Callable[[], None]]:
    """Stable-Baselines3's PPO on a DummyVecEnv; one ``learn()`` call per 4000-step rollout."""
    import numpy as np
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env(s.env, n_envs=s.num_envs_per_env_runner, seed=s.seed)
    n_steps = s.train_batch_size // s.num_envs_per_env_runner
    hiddens = list(s.fcnet_hiddens)
    model = PPO(
        "MlpPolicy",
        env,
        learning_rate=s.lr,
        n_steps=n_steps,
        batch_size=s.minibatch_size,
        n_epochs=s.num_epochs,
        gamma=s.gamma,
        gae_lambda=s.lambda_,
        clip_range=s.clip_param,
        clip_range_vf=None,
        ent_coef=s.entropy_coeff,
        vf_coef=s.vf_loss_coeff,
        max_grad_norm=float("inf"),  # SB3 always clips; inf = no clip, as in the others
        stats_window_size=s.smoothing_window,
        policy_kwargs={
            "net_arch": {"pi": hiddens, "vf": hiddens},
            "activation_fn": {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[s.fcnet_activation],
        },
        seed=s.seed,
        device="cpu",
        verbose=0,
    )

    def step() -> tuple[int, float]:
        # reset_num_timesteps=False continues the same episodes and counters across calls.
        model.learn(total_timesteps=n_steps * s.num_envs_per_env_runner, reset_num_timesteps=False)
        returns = [info["r"] for info in model.ep_info_buffer]
        return int(model.num_timesteps), float(np.mean(returns)) if returns else math.nan

    return step, env.close


def variant_builder(variant: str) -> Callable[[Settings], tuple[StepFn, Callable[[], None]]]:
    if variant == "fused":
        return lambda s: build_rljax(s, num_env_runners=0)
    if variant == "host":
        return lambda s: build_rljax(s, num_env_runners=1)
    return {"rllib": build_rllib, "sb3": build_sb3}[variant]


def variant_info(variant: str) -> dict[str, Any]:
    """Versions and a one-line description, from inside the variant's process."""
    info: dict[str, Any] = {
        "fused": {"description": "rljax, num_env_runners=0: rollout + update in one jit call"},
        "host": {"description": "rljax, num_env_runners=1: a runner thread"},
        "rllib": {"description": "Ray RLlib PPO, new API stack, num_env_runners=0, torch"},
        "sb3": {"description": "Stable-Baselines3 PPO, DummyVecEnv, torch on CPU"},
    }[variant]
    if variant in RLJAX_VARIANTS:
        import jax

        info["jax_backend"] = jax.default_backend()
        info["jax_devices"] = [str(d) for d in jax.devices()]
    elif variant == "sb3":
        info["note"] = (
            "SB3 normalizes advantages per minibatch, uses Adam eps 1e-5 and orthogonal init; "
            "rljax and RLlib normalize per batch with Adam eps 1e-8"
        )
    return info


def run_variant(variant: str, s: Settings, result_file: Path) -> None:
    """Child-process entry: trains one variant and writes its results as JSON."""
    result = run_training(RESULT_KEYS[variant], variant_builder(variant), s)
    result.update(variant_info(variant))
    result_file.write_text(json.dumps(result))


# ---------------------------------------------------------------------- orchestration
def ppo_machine_info(compare: bool) -> dict[str, Any]:
    packages = ["rljax", "jax", "jaxlib", "flax", "optax", "envpool", "gymnasium", "numpy"]
    if compare:
        packages += ["ray", "stable-baselines3", "torch"]
    return machine_info(packages)


# ``--compare-python``: the interpreter of the comparisons (a venv with RLlib or SB3 and
# torch), when they are not installed beside rljax.
COMPARE_PYTHON: str | None = None


def missing_modules(variant: str) -> list[str]:
    return [m for m in COMPARE_REQUIREMENTS.get(variant, ()) if importlib.util.find_spec(m) is None]


def spawn_variant(variant: str, s: Settings, quick: bool) -> dict[str, Any]:
    """Runs ``--variant`` in a fresh interpreter; its output is relayed to stderr."""
    other = COMPARE_PYTHON if variant in COMPARE_VARIANTS else None
    missing = [] if other else missing_modules(variant)
    if missing:
        return {"status": "not installed", "missing": missing}
    with tempfile.TemporaryDirectory() as tmp:
        result_file = Path(tmp) / "result.json"
        cmd = [
            other or sys.executable,
            os.path.abspath(__file__),
            "--variant",
            variant,
            "--result-file",
            str(result_file),
            *settings_to_args(s),
        ]
        print(f"== {RESULT_KEYS[variant]}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
        env = quick_env() if quick else dict(os.environ)
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=env
        )
        tail: collections.deque[str] = collections.deque(maxlen=30)
        assert proc.stdout is not None
        for line in proc.stdout:
            with _STDERR_LOCK:
                sys.stderr.write(line)
            tail.append(line.rstrip())
        returncode = proc.wait()
        if returncode != 0 or not result_file.exists():
            return {"status": "failed", "returncode": returncode, "output_tail": list(tail)}
        return json.loads(result_file.read_text())


def spawn_variants(variants: tuple[str, ...], s: Settings, quick: bool) -> dict[str, Any]:
    """Runs the variants one after another, or all at once for ``--quick``."""
    with concurrent.futures.ThreadPoolExecutor(len(variants) if quick else 1) as pool:
        results = pool.map(lambda v: spawn_variant(v, s, quick), variants)
        return {RESULT_KEYS[v]: r for v, r in zip(variants, results, strict=True)}


def settings_to_args(s: Settings) -> list[str]:
    return [
        f"--seed={s.seed}",
        f"--max-timesteps={s.max_timesteps}",
        f"--num-envs-per-env-runner={s.num_envs_per_env_runner}",
        f"--minibatch-size={s.minibatch_size}",
        f"--num-epochs={s.num_epochs}",
        f"--target-return={s.target_return}",
        f"--profile-rounds={s.profile_rounds}",
    ]


def plot(results: dict[str, dict[str, Any]], s: Settings, path: Path) -> None:
    """Smoothed return vs wall time since process start, and vs env steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_time, ax_steps) = plt.subplots(1, 2, figsize=(12, 4.5))
    plotted = [key for key, res in results.items() if res.get("status") == "ok"]
    for key in plotted:
        res = results[key]
        points = [p for p in res["curve"] if p["episode_return_mean"] is not None]
        returns = [p["episode_return_mean"] for p in points]
        ax_time.plot([p["wall_s"] for p in points], returns, label=key)
        ax_steps.plot([p["env_steps"] for p in points], returns, label=key)
    for ax, xlabel in (
        (ax_time, "wall time since process start [s]"),
        (ax_steps, "env steps sampled"),
    ):
        ax.axhline(s.target_return, color="grey", linestyle="--", linewidth=1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"episode return (mean of last {s.smoothing_window})")
        ax.grid(alpha=0.3)
        if plotted:
            ax.legend()
    fig.suptitle(
        f"PPO {s.env}: batch {s.train_batch_size}, minibatch {s.minibatch_size}, "
        f"{s.num_epochs} epochs, {s.num_envs_per_env_runner} envs, seed {s.seed}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-timesteps", type=int, default=300_000)
    p.add_argument("--num-envs-per-env-runner", type=int, default=16)
    p.add_argument("--minibatch-size", type=int, default=128)
    p.add_argument("--num-epochs", type=int, default=6)
    p.add_argument("--target-return", type=float, default=450.0)
    p.add_argument(
        "--profile-rounds",
        type=int,
        default=10,
        help="rounds of the fused variant's profile after training (ppo_profile.py; 0: none; "
        "--quick: 1)",
    )
    p.add_argument("--out", type=Path, default=Path("results"))
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: {QUICK_ITERATIONS} iterations per variant, run concurrently, with "
        "XLA's optimizations off (figures not meaningful)",
    )
    p.add_argument(
        "--compare", action="store_true", help="also run RLlib and SB3 when they are importable"
    )
    p.add_argument(
        "--compare-python",
        default=None,
        help="the interpreter for --compare's RLlib and SB3 runs (a venv with them and torch)",
    )
    p.add_argument("--variant", choices=RLJAX_VARIANTS + COMPARE_VARIANTS, help=argparse.SUPPRESS)
    p.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    s = Settings(
        seed=args.seed,
        max_timesteps=args.max_timesteps,
        num_envs_per_env_runner=args.num_envs_per_env_runner,
        minibatch_size=args.minibatch_size,
        num_epochs=args.num_epochs,
        target_return=args.target_return,
        profile_rounds=args.profile_rounds,
    )
    if args.variant:
        if args.result_file is None:
            raise SystemExit("--variant needs --result-file")
        run_variant(args.variant, s, args.result_file)
        return
    global COMPARE_PYTHON
    COMPARE_PYTHON = args.compare_python
    if args.quick:
        s = replace(
            s,
            max_timesteps=QUICK_ITERATIONS * s.train_batch_size,
            profile_rounds=min(s.profile_rounds, 1),
        )
    machine = ppo_machine_info(args.compare)
    variants = RLJAX_VARIANTS + (COMPARE_VARIANTS if args.compare else ())
    results = spawn_variants(variants, s, quick=args.quick)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "ppo_cartpole.json"
    png_path = args.out / "ppo_cartpole.png"
    report = {
        "benchmark": "ppo_cartpole",
        "quick": args.quick,
        "child_env_added": quick_additions(os.environ) if args.quick else None,
        "settings": asdict(s),
        "machine": machine,
        "results": results,
        "files": {"json": str(json_path), "plot": str(png_path)},
    }
    plot(results, s, png_path)
    text = json.dumps(report, indent=2)
    json_path.write_text(text + "\n")
    print(text)
    if any(r.get("status") == "failed" for r in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
