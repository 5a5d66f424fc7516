"""PPO on CartPole-v1 at PureJaxRL's settings: rljax's curves beside the single-file baseline's.

PureJaxRL's ``ppo.py`` CartPole defaults: 4 envs x 128 steps per update, 4 epochs of 4
minibatches (128 rows), lr 2.5e-4 annealed linearly to 0, gamma 0.99, lambda 0.95, clip 0.2,
value coefficient 0.5, entropy coefficient 0.01, global-norm clip 0.5, Adam eps 1e-5, separate
64x64 tanh actor and critic with orthogonal init, 5e5 env steps. rljax runs them on EnvPool's
``CartPole-v1`` through ``PPOConfig`` (``VARIANTS``: ``purejaxrl`` is the config that gives
PureJaxRL's behaviour, ``literal`` the same names taken at their face value); the baseline is
``benchmarks/fused_ppo_baseline.py --anneal-lr --orthogonal-init`` on gymnax's CartPole
(PureJaxRL's ``ppo.py`` in one file). ``--ablation`` adds the one-change-at-a-time variants.

Every system is scored the same way, by env steps (not wall time, so the machine's load does
not matter): the mean return of the episodes that finished in each window of ``--window`` env
steps, per seed, and ``final``: that mean over the last window. The baseline also reports
PureJaxRL's own plotted figure (``purejaxrl_plotted_return``: the last finished episode's
return held per env, averaged over each update's steps and envs).

Run: python benchmarks/purejaxrl_parity.py [--seeds 0 1 2] [--ablation] [--baseline-python
PY] (PY: an interpreter with gymnax; gymnax pins gymnasium < 1.4, so it usually lives in
another environment; without it the baseline runs here if gymnax imports, else it is reported
as not installed). ``--quick``: a smoke test (one seed, 10 updates, XLA's fast compile flags).
Output: JSON on stdout and in ``OUT/purejaxrl_parity.json``, the curves in
``OUT/purejaxrl_parity.png``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, quick_env, save_report, set_quick_compilation  # noqa: E402

HERE = Path(__file__).resolve().parent
NUM_ENVS, NUM_STEPS = 4, 128

# Each variant: (what it is, training settings over COMMON_TRAINING, model_config over
# COMMON_MODEL). ``purejaxrl`` is the documented config (docs/algorithms-on-policy.md).
VARIANTS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "purejaxrl": (
        "PureJaxRL's value loss: the prediction clipped to within 0.2 of the sampling one "
        "(vf_clip_mode='prediction', PPO2's), its weight 0.25 (PureJaxRL's 0.5 x its own 1/2); "
        "rljax/tuned_examples/ppo_cartpole_purejaxrl.yaml",
        {"vf_clip_param": 0.2, "vf_clip_mode": "prediction", "vf_loss_coeff": 0.25},
        {},
    ),
    "purejaxrl_no_vf_clip": (
        "the value loss not clipped, its weight 0.25 (the purejaxrl config before rljax had "
        "vf_clip_mode)",
        {"vf_clip_param": None, "vf_loss_coeff": 0.25},
        {},
    ),
    "literal": (
        "the names taken at face value: vf_clip_param=0.2 (PureJaxRL's clip), vf_loss_coeff=0.5",
        {"vf_clip_param": 0.2, "vf_loss_coeff": 0.5},
        {},
    ),
}
# One change at a time from the variant before the "+" (--ablation).
ABLATIONS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "literal+vf_clip_10": ("RLlib's default vf_clip_param=10", {"vf_clip_param": 10.0}, {}),
    "literal+vf_clip_none": ("value loss not clipped", {"vf_clip_param": None}, {}),
    "literal+vf_coeff_0.25": ("vf_loss_coeff=0.25", {"vf_loss_coeff": 0.25}, {}),
    "literal+shared_layers": (
        "RLlib's default vf_share_layers=True",
        {},
        {"vf_share_layers": True},
    ),
    "literal+kl": ("RLlib's default use_kl_loss=True (kl_coeff 0.2)", {"use_kl_loss": True}, {}),
    "literal+constant_lr": ("lr 2.5e-4, not annealed", {"lr": 2.5e-4}, {}),
    "literal+no_entropy": ("entropy_coeff=0", {"entropy_coeff": 0.0}, {}),
    "purejaxrl_no_vf_clip+vf_clip_10": (
        "RLlib's default vf_clip_param=10",
        {"vf_clip_param": 10.0},
        {},
    ),
    "purejaxrl+squared_error": (
        "RLlib's clipping of the squared error at 0.2 instead of the prediction's",
        {"vf_clip_mode": "squared_error"},
        {},
    ),
}


def common_training(total_steps: int) -> dict[str, Any]:
    """PureJaxRL's CartPole settings by RLlib's names (the value loss's are the variants')."""
    return {
        "train_batch_size_per_learner": NUM_ENVS * NUM_STEPS,
        "minibatch_size": NUM_ENVS * NUM_STEPS // 4,
        "num_epochs": 4,
        "lr": [[0, 2.5e-4], [total_steps, 0.0]],
        "gamma": 0.99,
        "lambda_": 0.95,
        "clip_param": 0.2,
        "entropy_coeff": 0.01,
        "grad_clip": 0.5,
        "use_kl_loss": False,
    }


COMMON_MODEL = {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh", "vf_share_layers": False}


def rljax_config(variant: str, seed: int, total_steps: int) -> Any:
    """The ``PPOConfig`` of ``variant`` (a key of ``VARIANTS`` or ``ABLATIONS``)."""
    from rljax.algorithms.ppo import PPOConfig

    table = {**VARIANTS, **ABLATIONS}
    if variant not in table:
        raise ValueError(f"variant={variant!r}; use one of {sorted(table)}")
    training, model = common_training(total_steps), dict(COMMON_MODEL)
    if "+" in variant:
        training.update(VARIANTS[variant.split("+")[0]][1])
    training.update(table[variant][1])
    model.update(table[variant][2])
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=NUM_ENVS)
        .training(**training)
        .rl_module(model_config=model)
        .debugging(seed=seed)
    )


def run_rljax(variant: str, seed: int, total_steps: int) -> dict[str, Any]:
    """Every finished episode's return and the lifetime env steps of its iteration."""
    algo = rljax_config(variant, seed, total_steps).build_algo()
    steps: list[int] = []
    returns: list[float] = []
    t0 = time.perf_counter()
    try:
        while algo.num_env_steps_sampled_lifetime < total_steps:
            result = algo.train()
            # The iteration's finished episodes (its episode_return_mean is their mean).
            finished = list(algo.episodes.returns)
            steps += [result["num_env_steps_sampled_lifetime"]] * len(finished)
            returns += finished
    finally:
        algo.stop()
    return {
        "episode_env_steps": steps,
        "episode_returns": returns,
        "seconds": time.perf_counter() - t0,
    }


def baseline_python(given: str | None) -> str | None:
    """The interpreter that runs the baseline: ``given``, else this one if gymnax imports."""
    if given:
        return given
    return sys.executable if importlib.util.find_spec("gymnax") else None


def run_baseline(
    python: str, seed: int, total_steps: int, quick: bool, extra: list[str] | None = None
) -> dict[str, Any]:
    """``fused_ppo_baseline.py --curve`` at PureJaxRL's settings, in its own process;
    ``extra``: more of its flags (``--adv-norm batch``: RLlib's advantage normalisation,
    ``--no-value-clip``: no PPO2-style value clipping)."""
    cmd = [
        python,
        str(HERE / "fused_ppo_baseline.py"),
        "--curve",
        "--anneal-lr",
        "--orthogonal-init",
        "--seed",
        str(seed),
        "--total-steps",
        str(total_steps),
        *(extra or []),
    ]
    env = quick_env() if quick else None
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"status": "failed", "stderr_tail": proc.stderr[-2000:]}
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["seconds"] = time.perf_counter() - t0
    return out


def windows(run: dict[str, Any], total_steps: int, window: int) -> dict[str, Any]:
    """Mean return of the episodes finished in each window of env steps (None: none did).
    The last window takes everything after its start (rljax's last iteration ends past
    ``total_steps``)."""
    edges = list(range(0, total_steps, window))
    curve = []
    for lo in edges:
        hi = math.inf if lo == edges[-1] else lo + window
        rets = [
            r
            for s, r in zip(run["episode_env_steps"], run["episode_returns"], strict=True)
            if lo < s <= hi
        ]
        curve.append(sum(rets) / len(rets) if rets else None)
    return {"window_end_env_steps": [lo + window for lo in edges], "return_mean": curve}


def summarize(run: dict[str, Any], total_steps: int, window: int) -> dict[str, Any]:
    """A run's curve and final figure; the raw episodes are dropped."""
    curve = windows(run, total_steps, window)
    out = {
        "final": curve["return_mean"][-1],
        "num_episodes": len(run["episode_returns"]),
        "curve": curve,
        "seconds": round(run["seconds"], 1),
    }
    if "purejaxrl_plotted_return" in run:
        plotted = run["purejaxrl_plotted_return"]
        out["purejaxrl_plotted_final"] = plotted[-1]
        out["purejaxrl_plotted_return"] = [round(x, 1) for x in plotted]
    return out


def across_seeds(per_seed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Mean, min and max of the seeds' final figures."""
    finals = [r["final"] for r in per_seed.values() if r.get("final") is not None]
    if not finals:
        return {"final_mean": None}
    return {
        "final_mean": sum(finals) / len(finals),
        "final_min": min(finals),
        "final_max": max(finals),
    }


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = {k: v for k, v in report["results"].items() if "per_seed" in v}
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, res) in enumerate(systems.items()):
        for j, run in enumerate(res["per_seed"].values()):
            c = run["curve"]
            ax.plot(
                c["window_end_env_steps"],
                [math.nan if y is None else y for y in c["return_mean"]],
                color=colors[i % len(colors)],
                alpha=0.8,
                label=name if j == 0 else None,
            )
    ax.set_xlabel("env steps")
    ax.set_ylabel("mean return of the episodes finished in the window")
    ax.set_title("PPO on CartPole-v1 at PureJaxRL's settings (one line per seed)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--total-steps", type=int, default=500_000)
    p.add_argument("--window", type=int, default=25_000, help="env steps per curve point")
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), help="rljax variants")
    p.add_argument("--ablation", action="store_true", help="add the one-change variants")
    p.add_argument("--baseline-python", default=None, help="an interpreter with gymnax")
    p.add_argument("--no-baseline", action="store_true")
    p.add_argument(
        "--baseline-args",
        default="",
        help="more flags for fused_ppo_baseline.py, e.g. '--adv-norm batch' or '--no-value-clip'",
    )
    p.add_argument("--quick", action="store_true", help="smoke test: 1 seed, 10 updates")
    p.add_argument("--out", default="results")
    a = p.parse_args()
    if a.quick:
        set_quick_compilation()
        a.seeds, a.total_steps, a.window = a.seeds[:1], 10 * NUM_ENVS * NUM_STEPS, 1024
    variants = list(a.variants) + (list(ABLATIONS) if a.ablation else [])
    for v in variants:
        if v not in VARIANTS and v not in ABLATIONS:
            p.error(f"--variants {v!r}; use any of {sorted({**VARIANTS, **ABLATIONS})}")
    report: dict[str, Any] = {
        "machine": machine_info(["jax", "flax", "optax", "envpool"]),
        "settings": {
            "num_envs": NUM_ENVS,
            "num_steps": NUM_STEPS,
            "total_steps": a.total_steps,
            "window": a.window,
            "seeds": a.seeds,
            "common_training": common_training(a.total_steps),
            "model_config": COMMON_MODEL,
        },
        "results": {},
    }
    for v in variants:
        what, training, model = {**VARIANTS, **ABLATIONS}[v]
        per_seed = {}
        for seed in a.seeds:
            print(f"rljax {v} seed {seed}", file=sys.stderr, flush=True)
            per_seed[str(seed)] = summarize(
                run_rljax(v, seed, a.total_steps), a.total_steps, a.window
            )
        report["results"][f"rljax_{v}"] = {
            "what": what,
            "changes": {**training, **({"model_config": model} if model else {})},
            **across_seeds(per_seed),
            "per_seed": per_seed,
        }
    python = None if a.no_baseline else baseline_python(a.baseline_python)
    if python is None:
        report["results"]["baseline"] = {
            "status": "not installed" if not a.no_baseline else "skipped",
            "why": "gymnax does not import here; pass --baseline-python",
        }
    else:
        per_seed, failed = {}, None
        for seed in a.seeds:
            print(f"baseline seed {seed}", file=sys.stderr, flush=True)
            run = run_baseline(python, seed, a.total_steps, a.quick, shlex.split(a.baseline_args))
            if run.get("status") == "failed":
                failed = run
                break
            per_seed[str(seed)] = summarize(run, a.total_steps, a.window)
        report["results"]["baseline"] = failed or {
            "what": "fused_ppo_baseline.py --anneal-lr --orthogonal-init "
            f"{a.baseline_args} (gymnax CartPole-v1)".replace("  ", " "),
            **across_seeds(per_seed),
            "per_seed": per_seed,
        }
    out = Path(a.out)
    save_report(report, out, "purejaxrl_parity")
    plot(report, out / "purejaxrl_parity.png")
    if report["results"].get("baseline", {}).get("status") == "failed":
        sys.exit(1)


if __name__ == "__main__":
    main()
