"""A prepared device check: the figures that matter on an accelerator, as one JSON object.

Run on a machine with a GPU (and JAX's CUDA wheels) in under 8 minutes on one H200; on a CPU the
same cases run there. Every case trains on the fused path (``num_env_runners=0``: the rollout
and the update in one jitted program) for a fixed number of iterations:

* ``ppo_envpool``: PPO on EnvPool's CartPole-v1, 256 sub-envs x 64 steps per iteration.
* ``appo_envpool``: APPO on EnvPool's CartPole-v1, 256 sub-envs x 32 steps per iteration.
* ``dqn_envpool``: DQN on EnvPool's CartPole-v1, 64 sub-envs, batch 256.
* ``sac_envpool``: SAC on EnvPool's Pendulum-v1, 64 sub-envs, batch 256, 256x256.
* ``ppo_gymnax``: PPO on ``gymnax:CartPole-v1`` (the JAX-env path: env and policy in one
  program), ``ppo_envpool``'s settings; skipped, with the reason, when gymnax is not installed.
* ``ppo_num_learners``: ``ppo_envpool``'s settings with ``num_learners=1`` and with one learner
  per local device (``len(jax.devices())``; each learner takes ``train_batch_size_per_learner``
  rows, as in RLlib); skipped, with the reason, on one device.
* ``ppo_envpool_readme_settings``: the README's first example (16 sub-envs, batch 4000,
  minibatch 128, 6 epochs, 64x64), comparable with the CPU figures in ``benchmarks/README.md``.
* ``ppo_envpool_runner_on_cpu`` (GPU only): the docs' one-GPU setting, ``num_gpus_per_learner=1``
  with ``num_gpus_per_env_runner=0`` (the learner on the GPU, acting on the CPU).
* ``ppo_envpool_all_cpu`` (GPU only): ``ppo_envpool`` with rljax's default placement
  (``num_gpus_per_learner=0``), which keeps everything on the host's CPU even beside a GPU.

On a GPU the other cases set ``num_gpus_per_learner=1`` and ``num_gpus_per_env_runner=1`` (the
whole fused program on the GPU, EnvPool stepped through its GPU custom call); on a CPU both are 0.
Each case records its ``placement``.

Per case: ``env_steps_per_s`` (env steps sampled, learning included, per second of ``train()``
over every iteration but the first), ``first_iteration_s`` (the first ``train()``, which
compiles), ``compile_s`` (what JAX reports spending on tracing, lowering and XLA compilation
during that first iteration; served from the persistent compilation cache when one is set),
``build_s`` (``build_algo()``), ``compiles_after_first_iteration`` (should be 0),
``median_iteration_s``, ``env_steps_per_iteration``, ``updates_per_s`` (DQN, SAC) and the
device memory after the case (``jax.Device.memory_stats()``; None where the backend keeps none,
as the CPU). A case that raises is ``{"status": "failed", "error": ...}`` (traceback to stderr)
and the others still run; cases left when ``--budget-s`` is spent are skipped, saying so. The
order is the list above, most important first.

Top level: ``backend`` (``jax.default_backend()``), ``devices`` (platform and ``device_kind``
each), ``device_memory`` (the first device's ``memory_stats()`` at the end: in-use and peak
bytes over the whole process), the settings of every case and the machine. One JSON object goes
to stdout and to ``OUT/device_check.json``; progress goes to stderr. The exit status is 1 when
a case failed. After each case the cases so far are in ``OUT/device_check.partial.json``, which
a run killed by a time limit leaves behind (the finished run removes it).

Usage::

    python benchmarks/device_check.py                 # on the GPU machine, < 8 minutes
    python benchmarks/device_check.py --quick         # smoke test on a CPU: tiny sizes, < 40 s
    python benchmarks/device_check.py --cases ppo_envpool sac_envpool

``--quick`` runs 3 iterations of tiny configs (4 sub-envs, fcnet [16]) with most of XLA's
optimisations off to compile faster (``common.quick_additions``); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, save_report, set_quick_compilation  # noqa: E402

START = time.perf_counter()
PACKAGES = [
    "rljax",
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda12-pjrt",
    "flax",
    "optax",
    "envpool",
    "gymnax",
]
# JAX's monitoring events for the three stages of building a program.
COMPILE_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace_s",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
    "/jax/core/compile/backend_compile_duration": "backend_compile_s",
}
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"

# Per case: the full run's settings (sized for one GPU) and --quick's (a 2-core CPU).
PPO_FULL = {"num_envs": 256, "batch": 256 * 64, "minibatch": 2048, "epochs": 4, "iterations": 20}
PPO_QUICK = {"num_envs": 4, "batch": 64, "minibatch": 32, "epochs": 1, "iterations": 3}
README_FULL = {"num_envs": 16, "batch": 4000, "minibatch": 128, "epochs": 6, "iterations": 10}
FULL: dict[str, dict[str, Any]] = {
    "ppo": {**PPO_FULL, "env": "CartPole-v1", "fcnet_hiddens": [64, 64]},
    "ppo_readme": {**README_FULL, "env": "CartPole-v1", "fcnet_hiddens": [64, 64]},
    "appo": {
        "env": "CartPole-v1",
        "num_envs": 256,
        "fragment": 32,
        "fcnet_hiddens": [64, 64],
        "iterations": 50,
    },
    "dqn": {
        "env": "CartPole-v1",
        "num_envs": 64,
        "batch": 256,
        "steps_per_iteration": 1024,
        "learning_starts": 256,
        "capacity": 100_000,
        "fcnet_hiddens": [256],
        "iterations": 50,
    },
    "sac": {
        "env": "Pendulum-v1",
        "num_envs": 64,
        "batch": 256,
        "steps_per_iteration": 1024,
        "learning_starts": 256,
        "capacity": 100_000,
        "fcnet_hiddens": [256, 256],
        "iterations": 50,
    },
}
QUICK: dict[str, dict[str, Any]] = {
    "ppo": {**PPO_QUICK, "env": "CartPole-v1", "fcnet_hiddens": [16]},
    "ppo_readme": {**PPO_QUICK, "env": "CartPole-v1", "fcnet_hiddens": [16], "epochs": 2},
    "appo": {
        "env": "CartPole-v1",
        "num_envs": 4,
        "fragment": 16,
        "fcnet_hiddens": [16],
        "iterations": 3,
    },
    "dqn": {
        "env": "CartPole-v1",
        "num_envs": 4,
        "batch": 32,
        "steps_per_iteration": 64,
        "learning_starts": 32,
        "capacity": 1000,
        "fcnet_hiddens": [16],
        "iterations": 3,
    },
    "sac": {
        "env": "Pendulum-v1",
        "num_envs": 4,
        "batch": 32,
        "steps_per_iteration": 64,
        "learning_starts": 32,
        "capacity": 1000,
        "fcnet_hiddens": [16],
        "iterations": 3,
    },
}


# ---------------------------------------------------------------------- measuring
class CompileClock:
    """Sums JAX's compile-time events (trace, lowering, XLA) as they are reported."""

    def __init__(self) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self.backend_compiles = 0

    def __call__(self, event: str, duration: float, **kwargs: Any) -> None:
        if event in COMPILE_EVENTS:
            self.seconds[COMPILE_EVENTS[event]] += duration
            if event == BACKEND_COMPILE:
                self.backend_compiles += 1

    def mark(self) -> tuple[dict[str, float], int]:
        return dict(self.seconds), self.backend_compiles

    def since(self, mark: tuple[dict[str, float], int]) -> dict[str, Any]:
        before, compiles = mark
        parts = {k: self.seconds[k] - before.get(k, 0.0) for k in COMPILE_EVENTS.values()}
        return {
            "compile_s": sum(parts.values()),
            **parts,
            "programs_compiled": self.backend_compiles - compiles,
        }


CLOCK = CompileClock()


def memory_stats(device: Any) -> dict[str, Any] | None:
    """The device's in-use, peak and limit bytes, or None where the backend keeps none."""
    try:
        stats = device.memory_stats()
    except Exception:  # some backends raise instead of returning None
        return None
    if not stats:
        return None
    keys = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit", "largest_alloc_size")
    return {k: int(stats[k]) for k in keys if k in stats}


def finite_or_none(x: Any) -> float | None:
    """JSON has no NaN: a return before the first finished episode becomes null."""
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def train(algo: Any, iterations: int, name: str) -> dict[str, Any]:
    """``iterations`` calls of ``train()``: throughput after the first, the first's compile."""
    times: list[float] = []
    steps: list[int] = []
    updates: list[float | None] = []
    ret = None
    first: dict[str, Any] = {}
    mark = CLOCK.mark()
    after_first = mark
    for i in range(iterations):
        t0 = time.perf_counter()
        result = algo.train()
        times.append(time.perf_counter() - t0)
        if i == 0:
            first = CLOCK.since(mark)
            after_first = CLOCK.mark()
        steps.append(int(result["num_env_steps_sampled_lifetime"]))
        learner = result.get("learners", {}).get("default_policy", {})
        updates.append(learner.get("num_updates_lifetime"))
        ret = finite_or_none(result.get("env_runners", {}).get("episode_return_mean"))
        print(
            f"{name}: iter {i + 1}/{iterations} {times[-1]:.3f}s env steps {steps[-1]}",
            file=sys.stderr,
            flush=True,
        )
    later_s = sum(times[1:])
    median_s = statistics.median(times[1:]) if iterations > 1 else None
    per_iteration = (
        statistics.median(b - a for a, b in zip(steps, steps[1:], strict=False))
        if iterations > 1
        else steps[0]
    )
    out: dict[str, Any] = {
        "status": "ok",
        "env_steps_per_s": (steps[-1] - steps[0]) / later_s if later_s > 0 else None,
        "first_iteration_s": times[0],
        **first,
        "compiles_after_first_iteration": CLOCK.since(after_first)["programs_compiled"],
        "median_iteration_s": median_s,
        "env_steps_per_s_median": per_iteration / median_s if median_s else None,
        "iterations": iterations,
        "env_steps_per_iteration": per_iteration,
        "env_steps_total": steps[-1],
        "episode_return_mean_last": ret,
    }
    if updates[0] is not None and updates[-1] is not None and later_s > 0:
        out["updates_per_s"] = (updates[-1] - updates[0]) / later_s
    return out


def run_case(
    name: str, build: Callable[[], Any], iterations: int, placement: dict[str, Any]
) -> dict[str, Any]:
    """Builds, trains and stops one algorithm; device memory while it still holds its state."""
    print(f"== {name}", file=sys.stderr, flush=True)
    mark = CLOCK.mark()
    t0 = time.perf_counter()
    algo = build()
    built = {"build_s": time.perf_counter() - t0, "build_compile_s": CLOCK.since(mark)["compile_s"]}
    try:
        out = train(algo, iterations, name)
        devices = sorted({*algo.learner_devices, algo.runner_device}, key=str)
        out["learner_devices"] = [str(d) for d in algo.learner_devices]
        out["runner_device"] = str(algo.runner_device)
        out["device_memory"] = {str(d): memory_stats(d) for d in devices}
    finally:
        algo.stop()
    return {**out, **built, "placement": placement}


# ---------------------------------------------------------------------- configs
def placement_for(backend: str, where: str = "accelerator") -> dict[str, Any]:
    """``num_gpus_per_learner`` and ``num_gpus_per_env_runner`` for a case.

    ``accelerator``: the whole fused program on the GPU when there is one (else the CPU);
    ``runner_on_cpu``: the learner on the GPU, acting on the CPU; ``cpu``: rljax's defaults."""
    on_gpu = backend == "gpu"
    learner = 1 if on_gpu and where in ("accelerator", "runner_on_cpu") else 0
    runner = 1 if on_gpu and where == "accelerator" else 0
    return {"num_gpus_per_learner": learner, "num_gpus_per_env_runner": runner}


def ppo_config(s: dict[str, Any], placement: dict[str, Any], num_learners: int = 1) -> Any:
    from rljax.algorithms.ppo import PPOConfig

    return (
        PPOConfig()
        .environment(s["env"])
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=s["num_envs"],
            num_gpus_per_env_runner=placement["num_gpus_per_env_runner"],
        )
        .learners(num_learners=num_learners, num_gpus_per_learner=placement["num_gpus_per_learner"])
        .training(
            train_batch_size_per_learner=s["batch"],
            minibatch_size=s["minibatch"],
            num_epochs=s["epochs"],
            lr=3e-4,
        )
        .rl_module(model_config={"fcnet_hiddens": s["fcnet_hiddens"], "fcnet_activation": "tanh"})
        .debugging(seed=0)
    )


def appo_config(s: dict[str, Any], placement: dict[str, Any]) -> Any:
    from rljax.algorithms.appo import APPOConfig

    return (
        APPOConfig()
        .environment(s["env"])
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=s["num_envs"],
            rollout_fragment_length=s["fragment"],
            num_gpus_per_env_runner=placement["num_gpus_per_env_runner"],
        )
        .learners(num_learners=1, num_gpus_per_learner=placement["num_gpus_per_learner"])
        .training(lr=1e-3, vf_loss_coeff=0.05, entropy_coeff=0.0)
        .rl_module(model_config={"fcnet_hiddens": s["fcnet_hiddens"]})
        .debugging(seed=0)
    )


def off_policy_config(config_class: type, s: dict[str, Any], placement: dict[str, Any]) -> Any:
    """DQN or SAC: learning from ``learning_starts`` env steps, within the first iteration."""
    return (
        config_class()
        .environment(s["env"])
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=s["num_envs"],
            num_gpus_per_env_runner=placement["num_gpus_per_env_runner"],
        )
        .learners(num_learners=1, num_gpus_per_learner=placement["num_gpus_per_learner"])
        .training(
            train_batch_size_per_learner=s["batch"],
            num_steps_sampled_before_learning_starts=s["learning_starts"],
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": s["capacity"]},
        )
        .rl_module(model_config={"fcnet_hiddens": s["fcnet_hiddens"]})
        .reporting(min_sample_timesteps_per_iteration=s["steps_per_iteration"])
        .debugging(seed=0)
    )


# ---------------------------------------------------------------------- cases
def skipped(why: str) -> dict[str, Any]:
    return {"status": "skipped", "why": why}


def run_ppo(name: str, s: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    """``run_case`` of fused PPO with sizes ``s`` and placement ``p``."""
    return run_case(name, lambda: ppo_config(s, p).build_algo(), s["iterations"], p)


def case_ppo(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    return run_ppo("ppo_envpool", sizes["ppo"], placement_for(backend))


def case_appo(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    p = placement_for(backend)
    s = sizes["appo"]
    return run_case("appo_envpool", lambda: appo_config(s, p).build_algo(), s["iterations"], p)


def case_dqn(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    from rljax.algorithms.dqn import DQNConfig

    p = placement_for(backend)
    s = sizes["dqn"]
    build = lambda: off_policy_config(DQNConfig, s, p).build_algo()  # noqa: E731
    return run_case("dqn_envpool", build, s["iterations"], p)


def case_sac(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    from rljax.algorithms.sac import SACConfig

    p = placement_for(backend)
    s = sizes["sac"]
    build = lambda: off_policy_config(SACConfig, s, p).build_algo()  # noqa: E731
    return run_case("sac_envpool", build, s["iterations"], p)


def case_gymnax(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    if importlib.util.find_spec("gymnax") is None:
        return skipped("gymnax not installed")
    s = {**sizes["ppo"], "env": "gymnax:CartPole-v1"}
    return run_ppo("ppo_gymnax", s, placement_for(backend))


def case_num_learners(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    import jax

    devices = jax.devices()
    if len(devices) < 2:
        return skipped(
            f"one device ({devices[0]}): nothing to compare num_learners=1 with "
            "(on a CPU, XLA_FLAGS=--xla_force_host_platform_device_count=N makes N devices)"
        )
    p = placement_for(backend)
    s = sizes["ppo"]
    out: dict[str, Any] = {"status": "ok", "num_devices": len(devices)}
    for n in (1, len(devices)):
        key = f"num_learners_{n}"
        try:
            out[key] = run_case(
                f"ppo_num_learners={n}",
                lambda n=n: ppo_config(s, p, num_learners=n).build_algo(),
                s["iterations"],
                p,
            )
            out[key]["env_steps_per_iteration_expected"] = s["batch"] * n
        except Exception as e:  # one side failing still reports the other
            out[key] = failed(e)
            out["status"] = "failed"
    one, many = out["num_learners_1"], out[f"num_learners_{len(devices)}"]
    if one.get("env_steps_per_s") and many.get("env_steps_per_s"):
        out["env_steps_per_s_ratio"] = many["env_steps_per_s"] / one["env_steps_per_s"]
    return out


def case_ppo_readme(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    return run_ppo("ppo_envpool_readme_settings", sizes["ppo_readme"], placement_for(backend))


def case_runner_on_cpu(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    if backend != "gpu":
        return skipped(f"the default backend is {backend}: no GPU to put the learner on")
    p = placement_for(backend, "runner_on_cpu")
    return run_ppo("ppo_envpool_runner_on_cpu", sizes["ppo"], p)


def case_all_cpu(sizes: dict[str, Any], backend: str) -> dict[str, Any]:
    if backend != "gpu":
        return skipped(f"the default backend is {backend}: ppo_envpool already ran there")
    return run_ppo("ppo_envpool_all_cpu", sizes["ppo"], placement_for(backend, "cpu"))


CASES: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "ppo_envpool": case_ppo,
    "appo_envpool": case_appo,
    "dqn_envpool": case_dqn,
    "sac_envpool": case_sac,
    "ppo_gymnax": case_gymnax,
    "ppo_num_learners": case_num_learners,
    "ppo_envpool_readme_settings": case_ppo_readme,
    "ppo_envpool_runner_on_cpu": case_runner_on_cpu,
    "ppo_envpool_all_cpu": case_all_cpu,
}


def failed(e: BaseException) -> dict[str, Any]:
    traceback.print_exc(file=sys.stderr)
    return {"status": "failed", "error": f"{type(e).__name__}: {e}"[:2000]}


def device_info() -> dict[str, Any]:
    import jax

    return {
        "backend": jax.default_backend(),
        "devices": [
            {"id": d.id, "platform": d.platform, "device_kind": d.device_kind}
            for d in jax.devices()
        ],
        "device_kinds": sorted({d.device_kind for d in jax.devices()}),
        "local_device_count": jax.local_device_count(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick", action="store_true", help="tiny sizes, 3 iterations: a CPU smoke test"
    )
    p.add_argument("--cases", nargs="+", choices=list(CASES), help="a subset (default: all)")
    p.add_argument(
        "--budget-s",
        type=float,
        default=420.0,
        help="skip the cases left once this many seconds have passed (default 420)",
    )
    p.add_argument(
        "--iterations", type=int, default=None, help="every case's iterations (default: its own)"
    )
    p.add_argument("--out", default="results", help="directory for device_check.json")
    args = p.parse_args()
    if args.iterations is not None and args.iterations < 2:
        p.error("--iterations: at least 2 (the first one compiles)")
    if args.quick:
        set_quick_compilation()
    import jax
    from jax import monitoring

    # Imported before the cases so that no case's build_s holds an import.
    import rljax.algorithms.appo
    import rljax.algorithms.dqn
    import rljax.algorithms.ppo
    import rljax.algorithms.sac  # noqa: F401

    import_s = time.perf_counter() - START
    monitoring.register_event_duration_secs_listener(CLOCK)
    sizes = QUICK if args.quick else FULL
    if args.iterations is not None:
        sizes = {k: {**v, "iterations": args.iterations} for k, v in sizes.items()}
    info = device_info()
    backend = info["backend"]
    print(f"backend {backend}, devices {info['devices']}", file=sys.stderr, flush=True)
    cases: dict[str, Any] = {}
    partial = Path(args.out) / "device_check.partial.json"
    for name in args.cases or list(CASES):
        elapsed = time.perf_counter() - START
        if elapsed > args.budget_s:
            cases[name] = skipped(
                f"the budget of {args.budget_s:.0f} s was spent ({elapsed:.0f} s)"
            )
            continue
        t0 = time.perf_counter()
        try:
            cases[name] = CASES[name](sizes, backend)
        except Exception as e:
            cases[name] = failed(e)
        cases[name]["case_wall_s"] = time.perf_counter() - t0
        print(f"== {name}: {cases[name]['status']}", file=sys.stderr, flush=True)
        # What a run killed by a time limit leaves behind; replaced by the report at the end.
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps({**info, "cases": cases}, indent=2) + "\n")
    first = jax.devices()[0]
    memory = memory_stats(first)
    report: dict[str, Any] = {
        "benchmark": "device_check",
        "quick": args.quick,
        **info,
        "device_memory": {
            "device": str(first),
            "stats": memory,
            "note": "in-use and peak bytes over the whole process, at the end"
            if memory
            else f"the {first.platform} backend keeps no memory statistics (memory_stats() is None)",
        },
        "cases": cases,
        "wall_s": time.perf_counter() - START,
        "import_s": import_s,
        "settings": sizes,
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "compilation_cache": os.environ.get("RLJAX_COMPILATION_CACHE"),
        "machine": machine_info(PACKAGES),
    }
    save_report(report, args.out, "device_check")
    partial.unlink(missing_ok=True)
    if any(c["status"] == "failed" for c in cases.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
