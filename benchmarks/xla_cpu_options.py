"""Which XLA CPU options speed up a PPO-sized update, and whether ``jax.jit`` honours them per
program (``compiler_options``) on the CPU backend.

Two update programs are measured: a PPO-sized one (256x256 tanh MLP with policy and value
heads, minibatch 128, Adam, a ``lax.scan`` of 30 minibatch steps) and the same with a 64x64
MLP. Each option set is compiled once per program with ``jax.jit(f, compiler_options=...)``,
all in this one process, and the variants are timed interleaved (one call of each in turn,
``--rounds`` times), so a load on the machine that changes over time weighs on all alike.

Per program and option set: ``min_ms`` and ``median_ms`` per gradient step, and
``hlo_changed`` (whether the optimized HLO differs from the default program's, the option
reaching the compiler). Per option: ``per_program`` says whether it was accepted per program
(``rejected`` with the error if not), and ``default_unchanged`` whether the default program,
timed beside it, kept its speed (its own min over the rounds against the first half's min).
The ``one_core`` reference runs the default program with every thread of this process pinned
to one core for its calls (process-wide; not an option).

The synthetic programs do not show what rljax's own PPO update does under XLA's defaults, so
the ``rljax`` part times that too: PPO at RLlib's defaults (3 epochs instead of 30, to keep it
short) on the fused CartPole path, its whole training step compiled per option set
(``rljax_ppo_*``: min and median seconds of the step, and the min over its gradient steps).

Usage::

    python benchmarks/xla_cpu_options.py                # about 5 minutes on 2 cores
    python benchmarks/xla_cpu_options.py --parts rljax --rljax-rounds 3 --sizes 256
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine_info, save_report  # noqa: E402

OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "no_fusion_emitters": {"xla_cpu_use_fusion_emitters": False},
    "no_multi_thread_eigen": {"xla_cpu_multi_thread_eigen": False},
    "no_xnnpack": {"xla_cpu_use_xnnpack": False},
    "no_fusion_emitters+no_multi_thread_eigen": {
        "xla_cpu_use_fusion_emitters": False,
        "xla_cpu_multi_thread_eigen": False,
    },
    "no_fusion_emitters+no_xnnpack": {
        "xla_cpu_use_fusion_emitters": False,
        "xla_cpu_use_xnnpack": False,
    },
    "parallel_codegen_split_count=1": {"xla_cpu_parallel_codegen_split_count": 1},
    "concurrency_optimized_scheduler": {"xla_cpu_enable_concurrency_optimized_scheduler": True},
    "no_thunk_runtime": {"xla_cpu_use_thunk_runtime": False},
}
STEPS = 30
MINIBATCH = 128
OBS = 4


def make_update(hidden: int, rljax_adam: bool = True) -> tuple[Any, Any]:
    """A PPO-like update: 30 Adam steps over minibatches, in one scan; and its inputs."""
    import jax
    import jax.numpy as jnp
    import optax

    from rljax.algorithms.ppo.learner import make_optimizer

    sizes = [OBS, hidden, hidden]
    keys = jax.random.split(jax.random.key(0), 4)
    params: dict[str, Any] = {
        f"w{i}": jax.random.normal(keys[i], (a, b)) / jnp.sqrt(a)
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True))
    }
    params["pi"] = jnp.zeros((hidden, 2))
    params["vf"] = jnp.zeros((hidden, 1))
    tx = make_optimizer(3e-4, None) if rljax_adam else optax.adam(3e-4)
    state = (params, tx.init(params))

    def loss(p: Any, batch: Any) -> Any:
        obs, act, adv, ret = batch
        h = obs
        for i in range(len(sizes) - 1):
            h = jnp.tanh(h @ p[f"w{i}"])
        logp = jax.nn.log_softmax(h @ p["pi"])
        chosen = jnp.take_along_axis(logp, act[:, None], axis=1)[:, 0]
        ratio = jnp.exp(chosen - jax.lax.stop_gradient(chosen))
        pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 0.8, 1.2) * adv).mean()
        vf = ((h @ p["vf"])[:, 0] - ret) ** 2
        return pg + 0.5 * vf.mean()

    def update(state: Any, data: Any) -> Any:
        def step(state: Any, batch: Any) -> Any:
            p, opt = state
            value, grads = jax.value_and_grad(loss)(p, batch)
            updates, opt = tx.update(grads, opt, p)
            return (optax.apply_updates(p, updates), opt), value

        return jax.lax.scan(step, state, data)

    k = jax.random.split(jax.random.key(1), 4)
    data = (
        jax.random.normal(k[0], (STEPS, MINIBATCH, OBS)),
        jax.random.randint(k[1], (STEPS, MINIBATCH), 0, 2),
        jax.random.normal(k[2], (STEPS, MINIBATCH)),
        jax.random.normal(k[3], (STEPS, MINIBATCH)),
    )
    return update, (state, data)


class OneCore:
    """Pins every thread of this process to one core while in the block (reference only)."""

    def __enter__(self) -> None:
        self.saved = os.sched_getaffinity(0)
        self.cpu = min(self.saved)
        self._set({self.cpu})

    def __exit__(self, *exc: object) -> None:
        self._set(self.saved)

    @staticmethod
    def _set(cpus: set[int]) -> None:
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                os.sched_setaffinity(int(tid), cpus)


def measure(hidden: int, rounds: int) -> dict[str, Any]:
    import jax

    update, args = make_update(hidden)
    compiled: dict[str, Any] = {}
    results: dict[str, Any] = {}
    hlo: dict[str, str] = {}
    for name, options in OPTION_SETS.items():
        try:
            fn = jax.jit(update, compiler_options=options or None)
            start = time.perf_counter()
            exe = fn.lower(*args).compile()
            compile_s = time.perf_counter() - start
        except Exception as e:  # an option the CPU compiler does not take per program
            results[name] = {"per_program": "rejected", "error": f"{type(e).__name__}: {e}"[:300]}
            continue
        hlo[name] = exe.as_text() or ""
        compiled[name] = exe
        results[name] = {"per_program": "accepted", "compile_s": round(compile_s, 3)}
    variants = [*compiled, "one_core"]
    times: dict[str, list[float]] = {name: [] for name in variants}
    for exe in compiled.values():  # warm-up
        jax.block_until_ready(exe(*args))
    for _ in range(rounds):
        for name in variants:
            exe = compiled["default" if name == "one_core" else name]
            if name == "one_core":
                with OneCore():
                    start = time.perf_counter()
                    jax.block_until_ready(exe(*args))
                    times[name].append(time.perf_counter() - start)
            else:
                start = time.perf_counter()
                jax.block_until_ready(exe(*args))
                times[name].append(time.perf_counter() - start)
    results["one_core"] = {"per_program": "process-wide reference"}
    for name in variants:
        ms = [1e3 * t / STEPS for t in times[name]]
        results[name]["min_ms"] = round(min(ms), 4)
        results[name]["median_ms"] = round(statistics.median(ms), 4)
        if name in hlo and name != "default":
            results[name]["hlo_changed"] = hlo[name] != hlo["default"]
    return results


RLJAX_OPTION_SETS = (
    "default",
    "no_fusion_emitters",
    "no_xnnpack",
    "no_fusion_emitters+no_xnnpack",
)


def measure_rljax(rounds: int, hidden: int, epochs: int = 3) -> dict[str, Any]:
    """rljax's own PPO training step (RLlib's defaults on the fused CartPole path: a rollout of
    4,000 env steps, GAE and ``epochs`` epochs of minibatch 128; ``hidden`` x ``hidden``
    shared layers), compiled once per option set (``lowered.compile(compiler_options=...)``,
    the algorithm built with ``xla_cpu_options=None``), the calls interleaved."""
    import jax
    import jax.numpy as jnp

    from rljax.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .training(num_epochs=epochs)
        .debugging(seed=0, xla_cpu_options=None)
        .update_from_dict({"model_config": {"fcnet_hiddens": [hidden, hidden]}})
    )
    algo = config.build_algo()
    steps = epochs * algo.hp.num_minibatches
    args = (algo.state, algo.runner_state)
    lowered = algo._train_step.lower(*args)
    exes = {n: lowered.compile(compiler_options=OPTION_SETS[n] or None) for n in RLJAX_OPTION_SETS}

    def fresh(tree: Any) -> Any:  # the program donates its inputs
        return jax.tree.map(lambda x: jnp.copy(x) if isinstance(x, jax.Array) else x, tree)

    times: dict[str, list[float]] = {k: [] for k in exes}
    for exe in exes.values():  # warm-up
        jax.block_until_ready(exe(*fresh(args)))
    for _ in range(rounds):
        for name, exe in exes.items():
            inputs = jax.block_until_ready(fresh(args))
            start = time.perf_counter()
            jax.block_until_ready(exe(*inputs))
            times[name].append(time.perf_counter() - start)
    algo.stop()
    results: dict[str, Any] = {"gradient_steps": steps, "env_steps": 4000}
    for name, ts in times.items():
        results[name] = {
            "train_step_min_s": round(min(ts), 4),
            "train_step_median_s": round(statistics.median(ts), 4),
            # The whole step over its gradient steps: an upper bound of one step's cost.
            "per_gradient_step_ms_min": round(1e3 * min(ts) / steps, 3),
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 64])
    parser.add_argument("--rljax-rounds", type=int, default=5)
    parser.add_argument(
        "--parts", nargs="+", default=["synthetic", "rljax"], choices=["synthetic", "rljax"]
    )
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    if os.environ.get("XLA_FLAGS"):
        print(
            f"note: XLA_FLAGS={os.environ['XLA_FLAGS']!r} applies to every variant", file=sys.stderr
        )
    report: dict[str, Any] = {
        "machine": machine_info(["jax", "jaxlib", "optax"]),
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "rounds": args.rounds,
        "steps_per_call": STEPS,
        "minibatch": MINIBATCH,
    }
    if "synthetic" in args.parts:
        for hidden in args.sizes:
            print(f"{hidden}x{hidden} ...", file=sys.stderr)
            report[f"mlp_{hidden}x{hidden}"] = measure(hidden, args.rounds)
    if "rljax" in args.parts:
        for hidden in args.sizes:
            print(f"rljax PPO {hidden}x{hidden} ...", file=sys.stderr)
            report[f"rljax_ppo_{hidden}x{hidden}"] = measure_rljax(args.rljax_rounds, hidden)
    save_report(report, args.out, "xla_cpu_options")


if __name__ == "__main__":
    main()
