"""SYNC vs ASYNC env vectorization: env steps per second with rljax's runner knobs.

Three experiments, run one after another in this process (the sub-env processes that ASYNC
gymnasium envs need are the only other processes):

(a) RLlib's async-vectorization experiment. ``CartPole-v1`` from gymnasium, wrapped so that every
    observation costs ``step_cost_s`` = 5 ms (``time.sleep`` in ``step`` and ``reset``), registered
    with ``rljax.register_env``; 6 sub-envs on one runner (``num_env_runners=1``,
    ``num_envs_per_env_runner=6``); PPO trains on 600 env steps per iteration (100 x 6), fcnet [32],
    4 epochs. Modes: ``SYNC`` (gymnasium ``SyncVectorEnv``: sub-envs step one after another, ideal
    6 / (6 x 5 ms) = 200 env steps/s) and ``ASYNC`` (``AsyncVectorEnv``: a process per sub-env,
    lock-step, ideal 6 / 5 ms = 1,200 env steps/s), the latter with ``sample_async=False`` (sample,
    then update) and ``sample_async=True`` (the runner samples the next fragment while the learner
    updates). The full run adds ASYNC with ``async_batch_size=3`` (first-ready batches of 3, so the
    runner acts on one half of the sub-envs while the other half sleeps, and a sub-env that
    resets delays no other), with and without ``sample_async``, and ``async_batch_size=1``
    (the runner acts on each sub-env as soon as its result arrives), and measures each vector
    env alone, built as the runner builds it and stepped with random actions and no policy
    (``vector_env_only``): the ceiling the vector env itself sets on this machine. Each run's
    ``per_vector_step`` says where the time goes, in ms per vector step: the vector env's
    ``step`` (sending the actions, waiting for the sub-envs), acting (the jitted policy step
    until the actions are on the host), the rest of the runner's loop, and the time outside
    sampling (post-processing, the update). Throughput is ``algo.train()``'s sampled real env steps
    (``result["env_runners"]["num_env_steps_sampled"]``) summed over the timed iterations, divided
    by their wall time (learning included), after one warm-up iteration (it compiles) or, with
    ``sample_async=True``, two (the second drains the fragment the runner sampled while the first
    one compiled, which would otherwise count as sampled in no time). PPO's runners reset
    same-step, as RLlib's do: a step that ends an episode also resets the sub-env (its 5 ms
    reset inside that step, in the sub-env's process with first-ready batches), so every
    sub-env result is an env step (``env_calls_per_s`` equals ``env_steps_per_s``). The resets
    are not in the ideal: an episode of L steps costs L + 1 sleeps, and a lock-step vector step
    waits for any sub-env that resets. The target is >= 90% of the ideal; RLlib's figures are
    constants (``rllib_reference``), measured earlier by the project on this kind of machine, not
    by this script.

(b) EnvPool Atari (``Pong-v5``, frame skip 4: one env step is 4 frames) with the default Nature-CNN
    policy, SYNC (``batch_size == num_envs``) vs ASYNC (``batch_size = num_envs // 2``), over
    ``num_env_runners`` x ``num_envs_per_env_runner``. Sampling only, measured through the runner
    group (``algo._runners``) rather than ``train()``, so that the CNN update does not hide the
    sampling: the config sets ``sample_async=True`` so runner threads never wait for weights,
    the same weights are re-published after every fragment, and throughput is the real env steps
    of every fragment after ``warmup_fragments`` divided by the time between the arrival of the
    last warm-up fragment and the last fragment (the runners sample back to back, so arrivals
    are production times). No ideal: this is CPU-bound.

(c) Sub-envs of uneven cost: the same wrapped CartPole where sub-envs whose ``vector_index`` is in
    ``slow_vector_indices`` sleep 20 ms per observation and the rest 2 ms; 8 sub-envs on one
    runner. Lock-step ASYNC (``AsyncVectorEnv``: every step waits for the slowest sub-env, ideal
    8 / 20 ms = 400) against first-ready batches (``async_batch_size=4``: each batch holds the
    first 4 sub-envs with a result, ideal = the sum of the sub-envs' rates, 7 / 2 ms + 1 / 20 ms =
    3,550, which two cores cannot reach) and, in the full run, SYNC (ideal 8 / 34 ms = 235).
    Sampling only, measured as in (b).

The script prints a table to stderr and one JSON object to stdout, and writes
``OUT/sync_vs_async.json``, ``OUT/sync_vs_async.csv`` (one row per measurement) and
``OUT/sync_vs_async.png`` (bars per mode against the ideal). ``OUT`` is ``--out``,
``results/sync_vs_async`` by default.

Usage::

    python benchmarks/sync_vs_async.py           # all three parts, about 4 minutes on 2 cores
    python benchmarks/sync_vs_async.py --quick   # smoke test, < 60 s: fewer modes, shorter timing
    python benchmarks/sync_vs_async.py --parts a c --out results/ac

``--quick`` keeps only what the test checks (part a: SYNC and lock-step ASYNC with and without
``sample_async``; part b: 1 runner x 4 sub-envs; part c: lock-step vs first-ready) and times each
for about 1 s, so its figures are rough. From Python (a notebook): ``run(parse_args([...]))``
returns the report and ``format_table(report)`` the table.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from common import machine_info

import rljax

PARTS = ("a", "b", "c")
PART_KEYS = {"a": "a_cartpole_5ms", "b": "b_envpool_atari", "c": "c_uneven_sub_envs"}
SLOW_ENV = "SyncVsAsyncSlowCartPole"
# Measured earlier by the project on this kind of machine (2 cores) with Ray RLlib, same
# experiment; not measured by this script.
RLLIB_REFERENCE = {
    "source": "measured earlier by the project on this kind of machine (2 CPU cores), "
    "not by this script",
    "rllib_version": "2.60",
    "env_steps_per_s": {"SYNC": 152.0, "ASYNC": 772.0},
}
TARGET_FRACTION = 0.9


# ---------------------------------------------------------------------- settings
@dataclass(frozen=True)
class ModeA:
    """One part (a) run: vectorize mode, first-ready batch (None: lock-step), sample_async."""

    key: str
    mode: str
    async_batch_size: int | None = None
    sample_async: bool = False


@dataclass(frozen=True)
class PartA:
    step_cost_s: float = 0.005
    num_envs: int = 6
    train_batch_size: int = (
        600  # 100 env steps x 6 sub-envs (200 x 3 with first-ready batches of 3)
    )
    minibatch_size: int = 150
    num_epochs: int = 4
    lr: float = 3e-4
    fcnet_hiddens: tuple[int, ...] = (32,)
    warmup_iterations: int = 1  # plus one with sample_async (see warmup_iterations())
    min_timed_iterations: int = 2
    measure_s: float = 12.0
    vector_env_only_s: float | None = 3.0  # None: skip the no-policy ceiling
    modes: tuple[ModeA, ...] = (
        ModeA("SYNC", "SYNC"),
        ModeA("ASYNC", "ASYNC"),
        ModeA("ASYNC_sample_async", "ASYNC", sample_async=True),
        ModeA("ASYNC_first_ready_3", "ASYNC", 3),
        ModeA("ASYNC_first_ready_3_sample_async", "ASYNC", 3, True),
        ModeA("ASYNC_first_ready_1", "ASYNC", 1),
    )


@dataclass(frozen=True)
class PartB:
    env: str = "Pong-v5"
    frame_skip: int = 4  # EnvPool's Atari default: one env step = 4 frames
    num_env_runners: tuple[int, ...] = (1, 2)
    num_envs_per_env_runner: tuple[int, ...] = (4, 8)
    modes: tuple[str, ...] = ("SYNC", "ASYNC")
    rows_per_fragment: int = 512  # sub-env results per fragment, over all runners
    warmup_fragments: int = 2
    min_timed_fragments: int = 3
    measure_s: float = 5.0


@dataclass(frozen=True)
class PartC:
    num_envs: int = 8
    slow_vector_indices: tuple[int, ...] = (0,)
    fast_cost_s: float = 0.002
    slow_cost_s: float = 0.020
    async_batch_size: int = 4
    fcnet_hiddens: tuple[int, ...] = (32,)
    modes: tuple[str, ...] = ("SYNC", "ASYNC_lock_step", "ASYNC_first_ready")
    rows_per_fragment: int = 400
    warmup_fragments: int = 2
    min_timed_fragments: int = 3
    measure_s: float = 8.0


@dataclass(frozen=True)
class Settings:
    seed: int = 0
    a: PartA = field(default_factory=PartA)
    b: PartB = field(default_factory=PartB)
    c: PartC = field(default_factory=PartC)


def quick_settings(s: Settings) -> Settings:
    """``--quick``: what the test checks, timed for about 1 s each (part a: at least one
    iteration, 1.5 s with SYNC; parts b and c: at least 3 fragments, 1.2 s for lock-step c)."""
    return replace(
        s,
        a=replace(
            s.a,
            train_batch_size=300,
            min_timed_iterations=1,
            measure_s=1.0,
            vector_env_only_s=None,
            modes=s.a.modes[:3],
        ),
        b=replace(
            s.b,
            num_env_runners=(1,),
            num_envs_per_env_runner=(4,),
            rows_per_fragment=128,
            measure_s=0.5,
        ),
        c=replace(s.c, modes=s.c.modes[1:], rows_per_fragment=160, measure_s=0.75),
    )


# ---------------------------------------------------------------------- environments
class SlowCartPole(gym.Wrapper):
    """gymnasium's CartPole-v1 where every observation (``step`` and ``reset``) costs a sleep.

    ``env_config``: ``step_cost_s`` for every sub-env, or ``fast_cost_s`` / ``slow_cost_s`` with
    ``slow_vector_indices``: sub-envs whose ``vector_index`` is listed sleep ``slow_cost_s``.
    """

    def __init__(self, env_config: dict[str, Any]):
        super().__init__(gym.make("CartPole-v1"))
        vector_index = getattr(env_config, "vector_index", 0)
        if vector_index in env_config.get("slow_vector_indices", ()):
            self.cost_s = float(env_config["slow_cost_s"])
        else:
            self.cost_s = float(env_config.get("fast_cost_s", env_config.get("step_cost_s", 0.0)))

    def reset(self, **kwargs):
        time.sleep(self.cost_s)
        return self.env.reset(**kwargs)

    def step(self, action):
        time.sleep(self.cost_s)
        return self.env.step(action)


def register_envs() -> None:
    """Registers ``SlowCartPole``; sub-env processes get the class by value (cloudpickle)."""
    if __name__ != "__main__":  # imported (a notebook): the children need not import this file
        import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    rljax.register_env(SLOW_ENV, SlowCartPole)


# ---------------------------------------------------------------------- helpers
def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def finite_or_none(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _failed(e: BaseException) -> dict[str, Any]:
    return {
        "status": "failed",
        "error": f"{type(e).__name__}: {e}",
        "traceback": traceback.format_exc()[-3000:],
    }


def measure_sampling(algo: Any, warmup: int, min_fragments: int, measure_s: float) -> dict:
    """Env steps/s of the runner group alone; the config must set ``sample_async=True``."""
    group = algo._runners
    params = algo._runner_params()
    t = time.perf_counter()
    for _ in range(warmup):  # the first fragment compiles the policy step
        group.sample()
        group.publish(params)
    t0 = time.perf_counter()
    warmup_s = t0 - t
    steps = calls = fragments = 0
    while fragments < min_fragments or time.perf_counter() - t0 < measure_s:
        sample = group.sample()
        group.publish(params)
        valid = np.asarray(sample.traj.valid)
        steps += int(valid.sum())
        calls += int(valid.size)
        fragments += 1
    elapsed = time.perf_counter() - t0
    ids = np.asarray(sample.traj.env_id).ravel()
    num_envs = algo.config.num_envs_per_env_runner * max(1, algo.config.num_env_runners)
    return {
        "env_steps_per_s": steps / elapsed,
        "env_calls_per_s": calls / elapsed,
        "timed_env_steps": steps,
        "timed_s": elapsed,
        "timed_fragments": fragments,
        "warmup_s": warmup_s,
        "fragment_shape_T_K": list(sample.traj.valid.shape),
        "last_fragment_rows_per_sub_env": np.bincount(ids, minlength=num_envs).tolist(),
    }


# ---------------------------------------------------------------------- part (a)
def ideal_a(p: PartA, m: ModeA) -> float:
    if m.mode == "SYNC":
        return p.num_envs / (p.num_envs * p.step_cost_s)
    return p.num_envs / p.step_cost_s


def config_a(p: PartA, m: ModeA, seed: int) -> Any:
    from rljax.algorithms.ppo import PPOConfig

    return (
        PPOConfig()
        .environment(SLOW_ENV, env_config={"step_cost_s": p.step_cost_s})
        .env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=p.num_envs,
            gym_env_vectorize_mode=m.mode,
            async_batch_size=m.async_batch_size,
            sample_async=m.sample_async,
        )
        .training(
            train_batch_size_per_learner=p.train_batch_size,
            minibatch_size=p.minibatch_size,
            num_epochs=p.num_epochs,
            lr=p.lr,
        )
        .rl_module(model_config={"fcnet_hiddens": list(p.fcnet_hiddens)})
        .debugging(seed=seed)
    )


def warmup_iterations(p: PartA, m: ModeA) -> int:
    """The first iteration compiles; with ``sample_async`` the second drains the fragment that
    the runner sampled meanwhile, which would otherwise count as sampled in no time."""
    return p.warmup_iterations + int(m.sample_async)


class StepClock:
    """Where the runner's time goes per vector step: wraps its vector env's ``step`` (sending the
    actions and waiting for the sub-envs' results) and its jitted acting step (the policy, until
    the actions are on the host). Installed on the runner object, read by the benchmark only."""

    def __init__(self, runner: Any):
        import jax

        self.env_s = self.act_s = 0.0
        self.vector_steps = 0
        env_step, act = runner.env.step, runner._step

        def timed_env_step(*args: Any) -> Any:
            t = time.perf_counter()
            out = env_step(*args)
            self.env_s += time.perf_counter() - t
            self.vector_steps += 1
            return out

        def timed_act(*args: Any) -> Any:
            t = time.perf_counter()
            out = act(*args)
            jax.block_until_ready(out[0])  # the runner waits for the actions next anyway
            self.act_s += time.perf_counter() - t
            return out

        runner.env.step, runner._step = timed_env_step, timed_act

    def reset(self) -> None:
        self.env_s = self.act_s = 0.0
        self.vector_steps = 0

    def per_vector_step(self, elapsed: float, sampling_s: float) -> dict[str, Any] | None:
        """Milliseconds per vector step: the wall time, the env, acting, the rest of the
        runner's loop, and the time outside sampling (post-processing, the update, results).
        None when the clocked runner took no step in the timed iterations (it was replaced:
        see ``num_env_runner_restarts``)."""
        if self.vector_steps == 0:
            return None
        n = self.vector_steps
        env, act = 1e3 * self.env_s / n, 1e3 * self.act_s / n
        sampling = 1e3 * sampling_s / n
        return {
            "vector_steps": self.vector_steps,
            "wall_ms": 1e3 * elapsed / n,
            "env_step_ms": env,
            "act_ms": act,
            "runner_loop_rest_ms": max(0.0, sampling - env - act),
            "outside_sampling_ms": max(0.0, 1e3 * elapsed / n - sampling),
        }


def run_mode_a(p: PartA, m: ModeA, seed: int) -> dict[str, Any]:
    config = config_a(p, m, seed)
    t = time.perf_counter()
    algo = config.build_algo()
    build_s = time.perf_counter() - t
    try:
        clock = StepClock(algo._runners.runners[0])
        t = time.perf_counter()
        for _ in range(warmup_iterations(p, m)):
            algo.train()
        warmup_s = time.perf_counter() - t
        results = []
        clock.reset()
        t0 = time.perf_counter()
        while len(results) < p.min_timed_iterations or time.perf_counter() - t0 < p.measure_s:
            results.append(algo.train())
        elapsed = time.perf_counter() - t0
    finally:
        algo.stop()
    steps = sum(r["env_runners"]["num_env_steps_sampled"] for r in results)
    calls = len(results) * config.sampled_batch_size
    timer = lambda name: float(np.mean([r["timers"].get(name, math.nan) for r in results]))  # noqa: E731
    runner_rates = [
        r["env_runners"]["per_runner"]["1"]["env_steps_per_s"]
        for r in results
        if "per_runner" in r["env_runners"]
    ]
    ideal = ideal_a(p, m)
    rate = steps / elapsed
    last = results[-1]["env_runners"]
    return {
        "status": "ok",
        "gym_env_vectorize_mode": m.mode,
        "async_batch_size": m.async_batch_size,
        "sample_async": m.sample_async,
        "rollout_fragment_length": config.get_rollout_fragment_length(),
        "env_steps_per_s": rate,
        "ideal_env_steps_per_s": ideal,
        "fraction_of_ideal": rate / ideal,
        "meets_target": rate / ideal >= TARGET_FRACTION,
        "env_calls_per_s": calls / elapsed,
        "env_calls_fraction_of_ideal": calls / elapsed / ideal,
        "warmup_iterations": warmup_iterations(p, m),
        "timed_iterations": len(results),
        "timed_env_steps": steps,
        "timed_s": elapsed,
        "build_s": build_s,
        "warmup_s": warmup_s,
        "mean_iteration_s": elapsed / len(results),
        "mean_sampling_timer_s": timer("env_runner_sampling_timer"),
        "mean_learner_update_timer_s": timer("learner_update_timer"),
        "runner_env_steps_per_s_while_sampling": float(np.mean(runner_rates))
        if runner_rates
        else None,
        "policy_lag_max": max(r["env_runners"].get("policy_lag_max", 0) for r in results),
        "num_env_runner_restarts": results[-1]
        .get("fault_tolerance", {})
        .get("num_env_runner_restarts"),
        # With sample_async the runner also samples while the learner updates: its sampling
        # time is then the learner's wait, not the runner's own (see learner_wait_s).
        "per_vector_step": clock.per_vector_step(
            elapsed, sum(r["timers"].get("env_runner_sampling_timer", 0.0) for r in results)
        ),
        "episode_return_mean_at_end": finite_or_none(last.get("episode_return_mean", math.nan)),
    }


def vector_env_only(p: PartA, m: ModeA, seed: int, seconds: float) -> dict[str, Any]:
    """The runner's vector env stepped with random actions, no policy: the env steps/s ceiling.
    Built as PPO's runner builds it (same-step auto-reset: every sub-env result is an env step,
    and a step that ends an episode also pays for the reset)."""
    from rljax.env.vector import make_host_env, resolve_env

    spec = resolve_env(SLOW_ENV, {"step_cost_s": p.step_cost_s})
    env = make_host_env(
        spec, p.num_envs, m.mode, seed, m.async_batch_size, worker_index=1, same_step=True
    )
    rng = np.random.default_rng(seed)
    try:
        result = env.reset()
        for _ in range(10):
            result = env.step(rng.integers(0, 2, len(result.env_id)), result.env_id)
        calls = steps = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            result = env.step(rng.integers(0, 2, len(result.env_id)), result.env_id)
            calls += 1
            steps += len(result.env_id)
        elapsed = time.perf_counter() - t0
    finally:
        env.close()
    ideal = ideal_a(p, m)
    return {
        "status": "ok",
        "gym_env_vectorize_mode": m.mode,
        "async_batch_size": m.async_batch_size,
        "auto_reset": "same-step",
        "env_steps_per_s": steps / elapsed,
        "env_calls_per_s": steps / elapsed,  # same-step: every sub-env result is an env step
        "fraction_of_ideal": steps / elapsed / ideal,
        "ideal_env_steps_per_s": ideal,
        "ms_per_vector_step": 1e3 * elapsed / max(1, calls),
    }


def run_part_a(p: PartA, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": "ok",
        "what": "PPO training, CartPole-v1 (gymnasium) with a sleep per observation, 1 runner",
        "step_cost_s": p.step_cost_s,
        "num_env_runners": 1,
        "num_envs_per_env_runner": p.num_envs,
        "target_fraction_of_ideal": TARGET_FRACTION,
        "rllib_reference": RLLIB_REFERENCE,
        "runs": {},
    }
    # What one observation's sleep really takes here (the OS wakes a sleeper late), and the
    # ASYNC rate it allows: a ceiling below the nominal ideal that no vectorization can pass.
    t0 = time.perf_counter()
    for _ in range(100):
        time.sleep(p.step_cost_s)
    measured = (time.perf_counter() - t0) / 100
    out["measured_step_cost_s"] = measured
    out["async_ceiling_at_measured_step_cost"] = p.num_envs / measured
    for m in p.modes:
        log(f"== (a) {m.key}")
        try:
            res = run_mode_a(p, m, seed)
            log(
                f"   {res['env_steps_per_s']:.0f} env steps/s = "
                f"{100 * res['fraction_of_ideal']:.0f}% of {res['ideal_env_steps_per_s']:.0f} "
                f"({res['timed_iterations']} iterations, {res['timed_s']:.1f} s)"
            )
        except Exception as e:
            res = _failed(e)
            log(f"   failed: {res['error']}")
        out["runs"][m.key] = res
    if p.vector_env_only_s:
        out["vector_env_only"] = {}
        for m in p.modes:
            key = m.key.replace("_sample_async", "")
            if key in out["vector_env_only"]:
                continue
            log(f"== (a) vector env only: {key}")
            try:
                out["vector_env_only"][key] = vector_env_only(p, m, seed, p.vector_env_only_s)
            except Exception as e:
                out["vector_env_only"][key] = _failed(e)
        for key, res in out["runs"].items():
            ceiling = out["vector_env_only"].get(key.replace("_sample_async", ""), {})
            if res.get("status") == "ok" and ceiling.get("status") == "ok":
                # How close training comes to what the vector env alone allows on the machine.
                res["fraction_of_vector_env_only"] = (
                    res["env_steps_per_s"] / ceiling["env_steps_per_s"]
                )
    if any(r.get("status") == "failed" for r in out["runs"].values()):
        out["status"] = "failed"
    return out


# ---------------------------------------------------------------------- part (b)
def run_part_b(p: PartB, seed: int) -> dict[str, Any]:
    from rljax.algorithms.ppo import PPOConfig

    out: dict[str, Any] = {
        "status": "ok",
        "what": f"sampling only, EnvPool {p.env}, default CNN policy, through the runner group",
        "env": p.env,
        "frame_skip": p.frame_skip,
        "runs": {},
    }
    for runners in p.num_env_runners:
        for envs in p.num_envs_per_env_runner:
            for mode in p.modes:
                key = f"{mode}_{runners}x{envs}"
                log(f"== (b) {key}")
                try:
                    config = (
                        PPOConfig()
                        .environment(p.env)
                        .env_runners(
                            num_env_runners=runners,
                            num_envs_per_env_runner=envs,
                            gym_env_vectorize_mode=mode,
                            sample_async=True,
                        )
                        .training(
                            train_batch_size_per_learner=p.rows_per_fragment,
                            minibatch_size=min(128, p.rows_per_fragment),
                            num_epochs=1,
                        )
                        .debugging(seed=seed)
                    )
                    t = time.perf_counter()
                    algo = config.build_algo()
                    build_s = time.perf_counter() - t
                    try:
                        res = measure_sampling(
                            algo, p.warmup_fragments, p.min_timed_fragments, p.measure_s
                        )
                    finally:
                        algo.stop()
                    res = {
                        "status": "ok",
                        "gym_env_vectorize_mode": mode,
                        "num_env_runners": runners,
                        "num_envs_per_env_runner": envs,
                        "envpool_batch_size": config.envs_per_step // runners,
                        "rollout_fragment_length": config.get_rollout_fragment_length(),
                        **res,
                        "frames_per_s": res["env_steps_per_s"] * p.frame_skip,
                        "build_s": build_s,
                    }
                    log(f"   {res['env_steps_per_s']:.0f} env steps/s")
                except Exception as e:
                    res = _failed(e)
                    log(f"   failed: {res['error']}")
                out["runs"][key] = res
    if any(r.get("status") == "failed" for r in out["runs"].values()):
        out["status"] = "failed"
    return out


# ---------------------------------------------------------------------- part (c)
def ideal_c(p: PartC, mode: str) -> float:
    costs = [
        p.slow_cost_s if i in p.slow_vector_indices else p.fast_cost_s for i in range(p.num_envs)
    ]
    if mode == "SYNC":
        return p.num_envs / sum(costs)
    if mode == "ASYNC_lock_step":
        return p.num_envs / max(costs)
    return sum(1.0 / c for c in costs)  # first-ready: every sub-env at its own pace


def run_part_c(p: PartC, seed: int) -> dict[str, Any]:
    from rljax.algorithms.ppo import PPOConfig

    env_config = {
        "slow_vector_indices": list(p.slow_vector_indices),
        "fast_cost_s": p.fast_cost_s,
        "slow_cost_s": p.slow_cost_s,
    }
    out: dict[str, Any] = {
        "status": "ok",
        "what": "sampling only, CartPole-v1 (gymnasium), sub-envs of uneven cost, 1 runner",
        "num_envs_per_env_runner": p.num_envs,
        **env_config,
        "runs": {},
    }
    for mode in p.modes:
        log(f"== (c) {mode}")
        try:
            config = (
                PPOConfig()
                .environment(SLOW_ENV, env_config=env_config)
                .env_runners(
                    num_env_runners=1,
                    num_envs_per_env_runner=p.num_envs,
                    gym_env_vectorize_mode="SYNC" if mode == "SYNC" else "ASYNC",
                    async_batch_size=p.async_batch_size if mode == "ASYNC_first_ready" else None,
                    sample_async=True,
                )
                .training(
                    train_batch_size_per_learner=p.rows_per_fragment,
                    minibatch_size=min(128, p.rows_per_fragment),
                    num_epochs=1,
                )
                .rl_module(model_config={"fcnet_hiddens": list(p.fcnet_hiddens)})
                .debugging(seed=seed)
            )
            t = time.perf_counter()
            algo = config.build_algo()
            build_s = time.perf_counter() - t
            try:
                res = measure_sampling(algo, p.warmup_fragments, p.min_timed_fragments, p.measure_s)
            finally:
                algo.stop()
            ideal = ideal_c(p, mode)
            res = {
                "status": "ok",
                "gym_env_vectorize_mode": config.gym_env_vectorize_mode,
                "async_batch_size": config.async_batch_size,
                "rollout_fragment_length": config.get_rollout_fragment_length(),
                **res,
                "ideal_env_steps_per_s": ideal,
                "fraction_of_ideal": res["env_steps_per_s"] / ideal,
                "build_s": build_s,
            }
            log(f"   {res['env_steps_per_s']:.0f} env steps/s (ideal {ideal:.0f})")
        except Exception as e:
            res = _failed(e)
            log(f"   failed: {res['error']}")
        out["runs"][mode] = res
    runs = out["runs"]
    if all(runs.get(k, {}).get("status") == "ok" for k in ("ASYNC_first_ready", "ASYNC_lock_step")):
        out["first_ready_speedup_over_lock_step"] = (
            runs["ASYNC_first_ready"]["env_steps_per_s"]
            / runs["ASYNC_lock_step"]["env_steps_per_s"]
        )
    if any(r.get("status") == "failed" for r in runs.values()):
        out["status"] = "failed"
    return out


# ---------------------------------------------------------------------- report
def table_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per measurement (the CSV and the table)."""
    rows = []
    results = report["results"]
    a = results.get(PART_KEYS["a"])
    if a:
        for key, r in a["runs"].items():
            rows.append(
                {
                    "part": "a",
                    "run": key,
                    "mode": r.get("gym_env_vectorize_mode"),
                    "runners_x_envs": f"1x{a['num_envs_per_env_runner']}",
                    "async_batch_size": r.get("async_batch_size"),
                    "sample_async": r.get("sample_async"),
                    "env_steps_per_s": r.get("env_steps_per_s"),
                    "ideal_env_steps_per_s": r.get("ideal_env_steps_per_s"),
                    "fraction_of_ideal": r.get("fraction_of_ideal"),
                    "env_calls_per_s": r.get("env_calls_per_s"),
                    "status": r.get("status"),
                }
            )
        for key, r in a.get("vector_env_only", {}).items():
            rows.append(
                {
                    "part": "a",
                    "run": f"{key}_vector_env_only",
                    "mode": r.get("gym_env_vectorize_mode"),
                    "runners_x_envs": f"1x{a['num_envs_per_env_runner']}",
                    "async_batch_size": r.get("async_batch_size"),
                    "sample_async": None,
                    "env_steps_per_s": None,
                    "ideal_env_steps_per_s": r.get("ideal_env_steps_per_s"),
                    "fraction_of_ideal": r.get("fraction_of_ideal"),
                    "env_calls_per_s": r.get("env_calls_per_s"),
                    "status": r.get("status", "ok"),
                }
            )
    for part in ("b", "c"):
        res = results.get(PART_KEYS[part])
        if not res:
            continue
        for key, r in res["runs"].items():
            rows.append(
                {
                    "part": part,
                    "run": key,
                    "mode": r.get("gym_env_vectorize_mode"),
                    "runners_x_envs": f"{r.get('num_env_runners', 1)}x"
                    f"{r.get('num_envs_per_env_runner', res.get('num_envs_per_env_runner'))}",
                    "async_batch_size": r.get("async_batch_size", r.get("envpool_batch_size")),
                    "sample_async": None,
                    "env_steps_per_s": r.get("env_steps_per_s"),
                    "ideal_env_steps_per_s": r.get("ideal_env_steps_per_s"),
                    "fraction_of_ideal": r.get("fraction_of_ideal"),
                    "env_calls_per_s": r.get("env_calls_per_s"),
                    "status": r.get("status"),
                }
            )
    return rows


def format_table(report: dict[str, Any]) -> str:
    def num(x: Any, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    header = (
        f"{'part':4} {'run':38} {'n x envs':8} {'batch':>5} {'env steps/s':>11} "
        f"{'ideal':>6} {'% ideal':>7} {'env calls/s':>11}"
    )
    lines = [header, "-" * len(header)]
    for r in table_rows(report):
        if r["status"] == "failed":
            lines.append(f"{r['part']:4} {r['run']:38} FAILED")
            continue
        pct = None if r["fraction_of_ideal"] is None else 100 * r["fraction_of_ideal"]
        lines.append(
            f"{r['part']:4} {r['run']:38} {r['runners_x_envs']:8} "
            f"{num(r['async_batch_size'], 'd'):>5} {num(r['env_steps_per_s'], '.0f'):>11} "
            f"{num(r['ideal_env_steps_per_s'], '.0f'):>6} {num(pct, '.0f'):>7} "
            f"{num(r['env_calls_per_s'], '.0f'):>11}"
        )
    a = report["results"].get(PART_KEYS["a"])
    if a:
        ref = a["rllib_reference"]
        lines.append(
            f"(a) RLlib {ref['rllib_version']} reference ({ref['source']}): "
            + ", ".join(f"{k} {v:.0f}" for k, v in ref["env_steps_per_s"].items())
        )
    return "\n".join(lines)


def write_csv(report: dict[str, Any], path: Path) -> None:
    rows = table_rows(report)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["part"])
        writer.writeheader()
        writer.writerows(rows)


def plot(report: dict[str, Any], path: Path) -> None:
    """Measured env steps/s per mode (filled) against the ideal (outline), one panel per part."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = report["results"]
    panels = [p for p in PARTS if p in results_parts(results)]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(5.5 * max(1, len(panels)), 4.8))
    axes = np.atleast_1d(axes)
    for ax, part in zip(axes, panels, strict=False):
        res = results[PART_KEYS[part]]
        runs = {k: r for k, r in res["runs"].items() if r.get("status") == "ok"}
        labels = list(runs)
        x = np.arange(len(labels))
        measured = [runs[k]["env_steps_per_s"] for k in labels]
        ideal = [runs[k].get("ideal_env_steps_per_s") for k in labels]
        colors = [
            "tab:blue" if runs[k]["gym_env_vectorize_mode"] == "SYNC" else "tab:orange"
            for k in labels
        ]
        if any(i is not None for i in ideal):
            ax.bar(
                x,
                [i or 0 for i in ideal],
                width=0.8,
                fill=False,
                edgecolor="grey",
                linestyle="--",
                label="ideal",
            )
        bars = ax.bar(x, measured, width=0.6, color=colors)
        for bar, k in zip(bars, labels, strict=True):
            frac = runs[k].get("fraction_of_ideal")
            text = f"{runs[k]['env_steps_per_s']:.0f}" + (f"\n{100 * frac:.0f}%" if frac else "")
            ax.annotate(
                text,
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=7,
            )
        if part == "a":
            ref = res["rllib_reference"]["env_steps_per_s"]
            for i, k in enumerate(labels):
                mode = runs[k]["gym_env_vectorize_mode"]
                if mode in ref and runs[k]["async_batch_size"] is None:
                    ax.plot(
                        i,
                        ref[mode],
                        "kx",
                        markersize=8,
                        label="RLlib (earlier, not this run)" if i == 0 else None,
                    )
            only = res.get("vector_env_only", {})
            label = "vector env alone (env calls/s)"
            for i, k in enumerate(labels):
                ceiling = only.get(k.replace("_sample_async", ""), {}).get("env_calls_per_s")
                if ceiling:
                    ax.hlines(ceiling, i - 0.35, i + 0.35, colors="black", label=label)
                    label = None
            envs = res["num_envs_per_env_runner"]
            cost_ms = res["step_cost_s"] * 1e3
            ax.set_title(f"(a) CartPole, {cost_ms:.0f} ms/obs, 1x{envs}, PPO training", fontsize=9)
        elif part == "b":
            ax.set_title(f"(b) EnvPool {res['env']}, CNN, sampling only", fontsize=9)
        else:
            ax.set_title(
                f"(c) {res['num_envs_per_env_runner']} sub-envs, {res['slow_cost_s'] * 1e3:.0f} vs "
                f"{res['fast_cost_s'] * 1e3:.0f} ms/obs, sampling only",
                fontsize=9,
            )
        ax.set_xticks(x)
        ax.set_xticklabels([tick_label(k) for k in labels], fontsize=7)
        top = max([v for v in measured + ideal if v] + [1.0])
        ax.set_ylim(0, 1.3 * top)
        ax.set_ylabel("env steps / s")
        ax.grid(axis="y", alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        if handles:
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("rljax: SYNC (blue) vs ASYNC (orange) env vectorization", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def tick_label(key: str) -> str:
    """``ASYNC_first_ready_3_sample_async`` -> ``ASYNC`` / ``first-ready 3`` / ``sample_async``."""
    mode, _, rest = key.partition("_")
    rest = re.sub(r"first_ready_(\d+)", r"first-ready \1", rest)
    for long, short in (("first_ready", "first-ready"), ("lock_step", "lock-step")):
        rest = rest.replace(long, short)
    rest = rest.replace("_sample_async", "\nsample_async")
    return f"{mode}\n{rest}" if rest else mode


def results_parts(results: dict[str, Any]) -> list[str]:
    return [p for p in PARTS if results.get(PART_KEYS[p], {}).get("runs")]


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    """The headline figures: env steps/s (and fraction of ideal) per run and part."""
    summary: dict[str, Any] = {}
    for part in PARTS:
        res = results.get(PART_KEYS[part])
        if not res:
            continue
        summary[PART_KEYS[part]] = {
            key: {
                "env_steps_per_s": run.get("env_steps_per_s"),
                "fraction_of_ideal": run.get("fraction_of_ideal"),
                **(
                    {"fraction_of_vector_env_only": run["fraction_of_vector_env_only"]}
                    if "fraction_of_vector_env_only" in run
                    else {}
                ),
            }
            for key, run in res["runs"].items()
            if run.get("status") == "ok"
        }
    a = results.get(PART_KEYS["a"], {}).get("runs", {})
    ok = {k: r for k, r in a.items() if r.get("status") == "ok"}
    if "SYNC" in ok and "ASYNC" in ok:
        summary["a_async_over_sync"] = (
            ok["ASYNC"]["env_steps_per_s"] / ok["SYNC"]["env_steps_per_s"]
        )
    if ok:
        summary["a_all_meet_target"] = all(r["meets_target"] for r in ok.values())
    c = results.get(PART_KEYS["c"], {})
    if "first_ready_speedup_over_lock_step" in c:
        summary["c_first_ready_over_lock_step"] = c["first_ready_speedup_over_lock_step"]
    return summary


# ---------------------------------------------------------------------- entry points
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke test, < 60 s; rough figures")
    p.add_argument("--out", type=Path, default=Path("results") / "sync_vs_async")
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Runs the chosen parts, writes JSON, CSV and PNG to ``args.out``, returns the report."""
    register_envs()
    s = Settings(seed=args.seed)
    if args.quick:
        s = quick_settings(s)
    machine = machine_info(["rljax", "jax", "jaxlib", "flax", "envpool", "gymnasium", "numpy"])
    started = time.perf_counter()
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "a": lambda: run_part_a(s.a, s.seed),
        "b": lambda: run_part_b(s.b, s.seed),
        "c": lambda: run_part_c(s.c, s.seed),
    }
    results: dict[str, Any] = {}
    for part in PARTS:
        if part in args.parts:
            try:
                results[PART_KEYS[part]] = runners[part]()
            except Exception as e:
                results[PART_KEYS[part]] = {**_failed(e), "runs": {}}
    args.out.mkdir(parents=True, exist_ok=True)
    files = {
        "json": str(args.out / "sync_vs_async.json"),
        "csv": str(args.out / "sync_vs_async.csv"),
        "plot": str(args.out / "sync_vs_async.png"),
    }
    report = {
        "benchmark": "sync_vs_async",
        "quick": args.quick,
        "summary": summarize(results),
        "settings": asdict(s),
        "machine": machine,
        "wall_s": time.perf_counter() - started,
        "results": results,
        "files": files,
    }
    plot(report, Path(files["plot"]))
    write_csv(report, Path(files["csv"]))
    Path(files["json"]).write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    report = run(parse_args(argv))
    log(format_table(report))
    print(json.dumps(report, indent=2))
    if any(r.get("status") == "failed" for r in report["results"].values()):
        sys.exit(1)
    return report


if __name__ == "__main__":
    main()
