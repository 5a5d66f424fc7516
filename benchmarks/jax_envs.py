"""PPO on a JAX env (gymnax CartPole-v1) against the single-file fused baseline and EnvPool.

``--compare`` prints one JSON line per measurement:

- throughput (``"kind": "throughput"``) at PureJaxRL's defaults (4 envs x 128 steps, 4 epochs,
  4 minibatches) and at 16 x 250: env steps/s of ``train()`` for rljax on the JAX env
  (``--jax-env``: ``gymnax:CartPole-v1`` by default, or rljax's own ``rljax:CartPole-v1``,
  which needs no extra library), rljax on EnvPool's ``CartPole-v1`` with the same settings,
  and ``benchmarks/fused_ppo_baseline.py`` (one call per update, and its whole-training scan;
  it runs on gymnax, so it is left out when gymnax is not installed), with the ratios (JAX env
  / baseline, JAX env / EnvPool);
- several updates per host call (``"kind": "chunked"``), at both settings: rljax's ``train()``
  with ``min_sample_timesteps_per_iteration`` of ``--chunk`` batches (its training steps
  scanned in one program) against the baseline's ``update_step`` scanned ``--chunk`` times in
  one jitted call, timed in turns;
- time to a return of 450 (``"kind": "to_450"``) with rljax's tuned CartPole settings
  (``rljax/tuned_examples/ppo_cartpole.yaml``) for the three, within 5e5 env steps: env steps
  and seconds (after the first iteration, which compiles; ``build_s`` apart);
- MinAtar Breakout (``"kind": "minatar"``, gymnax's ``Breakout-MinAtar``): 64 envs x 128
  steps, 4 epochs of 8 minibatches, lr 5e-4, for ``--minatar-steps`` env steps: rljax's
  default network for its 10x10x4 grids (MinAtar's 3x3 conv, a 128-unit head) and the
  baseline's MLP on the flattened grid (PureJaxRL's ``ppo.py`` shape); env steps/s and the
  mean return of the last 100 episodes along the way.

- a population of ``--members`` (16) trials, seeds 0..15 (``"kind": "population"``): env
  steps/s summed over the members at PureJaxRL's defaults, for rljax's ``Population`` on the
  JAX env (one training step per ``train()``, and ``--chunk`` of them through
  ``min_sample_timesteps_per_iteration``), the same on EnvPool, and the baseline's
  ``update_step`` ``vmap``ped over the members (one call per update, and ``--chunk`` updates
  scanned per call), timed in turns; and (``"kind": "population_to_450"``) each system's
  wall time until every member's return reached 450 with rljax's tuned CartPole settings
  (rljax stops a member when it gets there, as Tune does; the baseline's vmapped program
  trains all of them to the end), within ``--max-steps`` env steps per member;

- brax's ``ant`` (``"kind": "brax_ant"``, with brax installed; ``--brax-backend``, positional
  by default): 64 envs x 64 steps, env steps/s of the vmapped env alone (a scan with random
  actions), of PPO's ``train()`` on ``"brax:ant"`` and on EnvPool's MuJoCo ``Ant-v4`` with the
  same settings, and each one's first call (compilation).

Run: python benchmarks/jax_envs.py --compare [--iters 30] [--jax-env rljax:CartPole-v1]
[--chunk 10] [--members 16] [--minatar-steps 500000] [--brax-backend positional] [--only-brax]
[--only-population] [--only-throughput] [--gpu]

``--gpu`` places rljax's runs on the GPU (``num_gpus_per_learner=1``,
``num_gpus_per_env_runner=1``; rljax's default keeps everything on the CPU even beside a
GPU), where the baseline, plain JAX, runs by default.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import statistics
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from rljax.algorithms.ppo import PPOConfig  # noqa: E402


def load_baseline() -> Any:
    """``benchmarks/fused_ppo_baseline.py`` (it imports gymnax), or None without gymnax."""
    try:
        import fused_ppo_baseline
    except ImportError:
        return None
    return fused_ppo_baseline


TUNED = pathlib.Path(__file__).resolve().parents[1] / "rljax" / "tuned_examples"
SETTINGS = {"purejaxrl": (4, 128), "16x250": (16, 250)}
# --gpu: rljax's runs on the GPU (its default placement is the CPU).
ON_GPU = False


def placed(config: Any) -> Any:
    """``config`` on the GPU with ``--gpu``, else as it is."""
    if not ON_GPU:
        return config
    return config.learners(num_gpus_per_learner=1).env_runners(num_gpus_per_env_runner=1)


def ppo_config(env: str, num_envs: int, num_steps: int, epochs: int = 4, minibatches: int = 4):
    """PPO with PureJaxRL's update settings, ``num_envs`` x ``num_steps`` per iteration."""
    batch = num_envs * num_steps
    return placed(
        PPOConfig()
        .environment(env)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs)
        .training(
            train_batch_size_per_learner=batch,
            minibatch_size=batch // minibatches,
            num_epochs=epochs,
            lr=2.5e-4,
            entropy_coeff=0.01,
            grad_clip=0.5,
            vf_clip_param=0.2,
            gamma=0.99,
            lambda_=0.95,
            clip_param=0.2,
            use_kl_loss=False,  # PureJaxRL's loss has no KL term
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
        .debugging(seed=0)
    )


def throughput(
    num_envs: int, num_steps: int, iters: int, jax_env: str, baseline: Any
) -> list[dict[str, Any]]:
    """Env steps/s of rljax's ``train()`` on the JAX env and on EnvPool and of the baseline's
    update calls (``baseline``: None leaves it out), with the same settings, timed in turns
    (each round calls every system once) so that all see the same load on this machine's
    shared cores; medians, with means beside. ``program_ms``: rljax's iteration program alone
    (``train()`` less its Python)."""
    algos = {}
    build_s = {}
    for env in (jax_env, "CartPole-v1"):
        t0 = time.perf_counter()
        algos[env] = ppo_config(env, num_envs, num_steps).build_algo()
        algos[env].train()
        algos[env].train()
        build_s[env] = time.perf_counter() - t0
    if baseline is not None:
        init, update_step = baseline.make(baseline.Config("CartPole-v1", num_envs, num_steps))
        step = jax.jit(update_step, donate_argnums=0)
        runner, _ = step(jax.jit(init)(jax.random.PRNGKey(0)))
        jax.block_until_ready(runner)
    times: dict[str, list[float]] = {k: [] for k in [*algos, "program", "baseline"]}
    steps = dict.fromkeys(algos, 0)
    try:
        for _ in range(iters):
            for env, algo in algos.items():
                t0 = time.perf_counter()
                steps[env] += algo.train()["env_runners"]["num_env_steps_sampled"]
                times[env].append(time.perf_counter() - t0)
            algo = algos[jax_env]
            t0 = time.perf_counter()
            # Its outputs after the two states: the packed metrics and episodes (one tuple).
            out = algo._loop.train_step(algo.state, algo.runner_state)
            algo.state, algo.runner_state = out[:2]
            jax.block_until_ready(out[2:])
            times["program"].append(time.perf_counter() - t0)
            if baseline is not None:
                t0 = time.perf_counter()
                runner, (ep_ret, ep_done) = step(runner)
                np.asarray(ep_ret), np.asarray(ep_done)
                times["baseline"].append(time.perf_counter() - t0)
    finally:
        for algo in algos.values():
            algo.stop()
    per = num_envs * num_steps
    rows = []
    for env in algos:
        assert steps[env] == per * iters, (env, steps[env])
        row = {
            "system": f"rljax {env}",
            "env_steps_per_s": per / statistics.median(times[env]),
            "env_steps_per_s_mean": per * iters / sum(times[env]),
            "iteration_ms": 1000 * statistics.median(times[env]),
            "build_and_first_iterations_s": build_s[env],
        }
        if env == jax_env:
            row["program_ms"] = 1000 * statistics.median(times["program"])
        rows.append(row)
    if baseline is not None:
        rows.append(
            {
                "system": "baseline",
                "env_steps_per_s": per / statistics.median(times["baseline"]),
                "env_steps_per_s_mean": per * iters / sum(times["baseline"]),
                "iteration_ms": 1000 * statistics.median(times["baseline"]),
            }
        )
    return [{"num_envs": num_envs, "num_steps": num_steps, **row} for row in rows]


def chunked(
    num_envs: int, num_steps: int, chunk: int, iters: int, jax_env: str, baseline: Any
) -> list[dict[str, Any]]:
    """Env steps/s with ``chunk`` updates per host call: rljax's ``train()`` with
    ``min_sample_timesteps_per_iteration`` (one scanned program) and the baseline's
    ``update_step`` scanned ``chunk`` times in one jitted call; medians of interleaved calls."""
    per_call = chunk * num_envs * num_steps
    config = ppo_config(jax_env, num_envs, num_steps)
    algo = config.reporting(min_sample_timesteps_per_iteration=per_call).build_algo()
    algo.train()
    times: dict[str, list[float]] = {"rljax": [], "baseline": []}
    if baseline is not None:
        init, update_step = baseline.make(baseline.Config("CartPole-v1", num_envs, num_steps))
        # Not donated: on 2 cores the baseline's scanned updates ran at 0.7x with the runner
        # donated (107k against 152k env steps/s at 4 x 128), rljax's program alike both ways.
        scan = jax.jit(lambda r: jax.lax.scan(lambda c, _: update_step(c), r, None, length=chunk))
        runner, _ = scan(jax.jit(init)(jax.random.PRNGKey(0)))
        jax.block_until_ready(runner)
    try:
        for _ in range(iters):
            t0 = time.perf_counter()
            assert algo.train()["env_runners"]["num_env_steps_sampled"] == per_call
            times["rljax"].append(time.perf_counter() - t0)
            if baseline is not None:
                t0 = time.perf_counter()
                runner, out = scan(runner)
                jax.block_until_ready(out)
                times["baseline"].append(time.perf_counter() - t0)
    finally:
        algo.stop()
    return [
        {
            "system": f"rljax {jax_env}" if name == "rljax" else "baseline",
            "num_envs": num_envs,
            "num_steps": num_steps,
            "updates_per_call": chunk,
            "env_steps_per_s": per_call / statistics.median(ts),
        }
        for name, ts in times.items()
        if ts
    ]


def minatar(total_steps: int, baseline: Any) -> list[dict[str, Any]]:
    """rljax and the baseline on gymnax's Breakout-MinAtar with the same PPO settings."""
    n, t, epochs, minibatches, lr = 64, 128, 4, 8, 5e-4
    batch = n * t
    config = (
        ppo_config("gymnax:Breakout-MinAtar", n, t, epochs, minibatches)
        .training(lr=lr, use_kl_loss=False)
        .rl_module(model_config={})
    )
    rows = []
    algo = config.build_algo()
    try:
        r = algo.train()
        curve = [(r["num_env_steps_sampled_lifetime"], r["env_runners"]["episode_return_mean"])]
        t0 = time.perf_counter()
        while r["num_env_steps_sampled_lifetime"] < total_steps:
            r = algo.train()
            steps = r["num_env_steps_sampled_lifetime"]
            curve.append((steps, r["env_runners"]["episode_return_mean"]))
        seconds = time.perf_counter() - t0
    finally:
        algo.stop()
    rows.append(
        {
            "system": "rljax gymnax:Breakout-MinAtar",
            "network": "3x3 conv (16), head 128",
            "env_steps_per_s": (curve[-1][0] - curve[0][0]) / seconds,
            "curve": curve[:: max(1, len(curve) // 10)] + curve[-1:],
        }
    )
    if baseline is not None:
        cfg = baseline.Config("Breakout-MinAtar", n, t, epochs, minibatches, lr)
        out = baseline.run(cfg, total_steps, target=5.0, scan=False)
        rows.append(
            {
                "system": "baseline",
                "network": "MLP 64x64 on the flattened grid",
                "env_steps_per_s": out["per_update_env_steps_per_s_mean"],
                "steps_to_5": out["steps_to_target"],
                "final_return_mean": out["final_return_mean"],
            }
        )
    return [{"kind": "minatar", "batch": batch, **row} for row in rows]


def brax_ant(num_envs: int, num_steps: int, iters: int, backend: str) -> list[dict[str, Any]]:
    """brax's ``ant`` (``backend``): the vmapped env alone (``lax.scan`` of ``num_steps``
    steps of ``num_envs`` envs with random actions, one jitted call), PPO's ``train()`` on
    ``"brax:ant"`` and on EnvPool's MuJoCo ``Ant-v4`` with the same settings; env steps/s,
    medians of calls timed in turns, and each side's first calls (compilation) apart."""
    from rljax.env.jax_env import batched_reset, batched_step, jax_env_of
    from rljax.env.vector import resolve_env

    env_config = {"backend": backend}
    env = jax_env_of(resolve_env("brax:ant", env_config))
    low, high = env.action_space.low, env.action_space.high

    def scan_env(states: Any, key: jax.Array) -> tuple[Any, jax.Array]:
        def body(carry: Any, k: jax.Array) -> tuple[Any, jax.Array]:
            ka, ks = jax.random.split(k)
            actions = jax.random.uniform(ka, (num_envs, *low.shape), minval=low, maxval=high)
            carry, out = batched_step(env, carry, actions, ks)
            return carry, out.reward

        return jax.lax.scan(body, states, jax.random.split(key, num_steps))

    t0 = time.perf_counter()
    states, _ = jax.jit(lambda k: batched_reset(env, k, num_envs))(jax.random.PRNGKey(0))
    env_only = jax.jit(scan_env, donate_argnums=0)
    states, rewards = env_only(states, jax.random.PRNGKey(1))
    jax.block_until_ready(rewards)
    first = {"env alone": time.perf_counter() - t0}
    algos = {}
    for name, env_id in (("rljax brax:ant", "brax:ant"), ("rljax EnvPool Ant-v4", "Ant-v4")):
        t0 = time.perf_counter()
        config = ppo_config(env_id, num_envs, num_steps).rl_module(model_config={})
        if env_id == "brax:ant":
            config = config.environment(env_id, env_config=env_config)
        algos[name] = config.build_algo()
        algos[name].train()
        first[name] = time.perf_counter() - t0
    times: dict[str, list[float]] = {k: [] for k in first}
    try:
        for i in range(iters):
            t0 = time.perf_counter()
            states, rewards = env_only(states, jax.random.PRNGKey(2 + i))
            jax.block_until_ready(rewards)
            times["env alone"].append(time.perf_counter() - t0)
            for name, algo in algos.items():
                t0 = time.perf_counter()
                algo.train()
                times[name].append(time.perf_counter() - t0)
    finally:
        for algo in algos.values():
            algo.stop()
    per = num_envs * num_steps
    return [
        {
            "kind": "brax_ant",
            "system": name,
            "backend": backend if name != "rljax EnvPool Ant-v4" else "mujoco (EnvPool)",
            "num_envs": num_envs,
            "num_steps": num_steps,
            "env_steps_per_s": per / statistics.median(ts),
            "first_call_s": first[name],
        }
        for name, ts in times.items()
    ]


def tuned_config(env: str) -> Any:
    """rljax's tuned CartPole example (``ppo_cartpole.yaml``) on ``env``, placed."""
    return placed(PPOConfig.from_yaml(TUNED / "ppo_cartpole.yaml").environment(env))


def tuned_baseline_config(baseline: Any) -> Any:
    """The baseline with rljax's tuned settings: 16 x 250, 6 epochs of 125-row minibatches
    (rljax's are 128, the last one short), lr 3e-4, no entropy bonus."""
    return baseline.Config("CartPole-v1", 16, 250, 6, 32, 3e-4, ent_coef=0.0)


def population_configs(env: str, members: int, config: Any) -> list[Any]:
    """``members`` copies of ``config`` on ``env``, seeds 0 .. members - 1."""
    return [config.copy().environment(env).debugging(seed=s) for s in range(members)]


def baseline_population(baseline: Any, cfg: Any, members: int) -> tuple[Any, Any]:
    """``(runners, step)``: the baseline's runners of seeds 0 .. members - 1 stacked, and its
    ``update_step`` ``vmap``ped over them, jitted (runners donated)."""
    init, update_step = baseline.make(cfg)
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(members)])
    return jax.jit(jax.vmap(init))(keys), jax.jit(jax.vmap(update_step), donate_argnums=0)


def population_throughput(
    members: int,
    num_envs: int,
    num_steps: int,
    chunk: int,
    iters: int,
    jax_env: str,
    baseline: Any,
) -> list[dict[str, Any]]:
    """Env steps/s, summed over ``members`` trials, of rljax's ``Population`` on the JAX env
    (one training step per ``train()``, and ``chunk``), on EnvPool, and of the baseline
    ``vmap``ped over the members (per update, and ``chunk`` updates scanned per call); every
    system called once per round, medians."""
    from rljax.execution.population import Population

    per = members * num_envs * num_steps
    calls: dict[str, tuple[Any, int]] = {}  # name -> (call, env steps per call)
    first_s: dict[str, float] = {}
    pops = []
    variants = [
        (f"rljax population {jax_env}", jax_env, 1),
        (f"rljax population {jax_env}, {chunk} updates per call", jax_env, chunk),
        ("rljax population EnvPool CartPole-v1", "CartPole-v1", 1),
    ]
    try:
        for name, env, updates in variants:
            config = ppo_config(env, num_envs, num_steps)
            if updates > 1:
                config = config.reporting(
                    min_sample_timesteps_per_iteration=updates * num_envs * num_steps
                )
            t0 = time.perf_counter()
            pop = Population(population_configs(env, members, config))
            pops.append(pop)
            pop.train()
            first_s[name] = time.perf_counter() - t0
            calls[name] = (pop.train, updates * per)
        if baseline is not None:
            cfg = baseline.Config("CartPole-v1", num_envs, num_steps)
            t0 = time.perf_counter()
            runners, step = baseline_population(baseline, cfg, members)
            state = {"one": step(runners)[0]}
            jax.block_until_ready(state["one"])
            first_s["baseline vmapped"] = time.perf_counter() - t0
            scan = jax.jit(lambda r: jax.lax.scan(lambda c, _: step(c), r, None, length=chunk))
            t0 = time.perf_counter()
            state["scan"] = scan(baseline_population(baseline, cfg, members)[0])[0]
            jax.block_until_ready(state["scan"])
            name = f"baseline vmapped, {chunk} updates per call"
            first_s[name] = time.perf_counter() - t0

            def one() -> None:
                state["one"], out = step(state["one"])
                np.asarray(out[0]), np.asarray(out[1])

            def scanned() -> None:
                state["scan"], out = scan(state["scan"])
                np.asarray(out[0]), np.asarray(out[1])

            calls["baseline vmapped"] = (one, per)
            calls[name] = (scanned, chunk * per)
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(iters):
            for name, (call, _) in calls.items():
                t0 = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t0)
    finally:
        for pop in pops:
            pop.stop()
    return [
        {
            "kind": "population",
            "system": name,
            "members": members,
            "num_envs": num_envs,
            "num_steps": num_steps,
            "env_steps_per_call": steps,
            "env_steps_per_s": steps / statistics.median(times[name]),
            "call_ms": 1000 * statistics.median(times[name]),
            "first_call_s": first_s[name],
        }
        for name, (_, steps) in calls.items()
    ]


def population_to_target(members: int, env: str, target: float, max_steps: int) -> dict[str, Any]:
    """rljax's ``Population`` of ``members`` tuned CartPole trials on ``env``, each stopped
    when its return reaches ``target`` (or after ``max_steps`` env steps): the wall time until
    the last one stopped, after the first (compiling) iteration, and each member's env steps."""
    from rljax.execution.population import Population

    t0 = time.perf_counter()
    pop = Population(population_configs(env, members, tuned_config(env)))
    steps: list[int | None] = [None] * members
    try:
        results = pop.train()
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        while any(pop.active):
            for i, r in enumerate(results):
                if r is None:
                    continue
                done = r["num_env_steps_sampled_lifetime"]
                if r["env_runners"]["episode_return_mean"] >= target:
                    steps[i] = done
                    pop.stop_trial(i)
                elif done >= max_steps:
                    pop.stop_trial(i)
            if any(pop.active):
                results = pop.train()
        seconds = time.perf_counter() - t0
        compilations = pop.num_compilations
    finally:
        pop.stop()
    return {
        "kind": "population_to_450",
        "system": f"rljax population {env}",
        "members": members,
        "reached": sum(s is not None for s in steps),
        "steps_per_member": steps,
        "seconds_after_first_iteration": seconds,
        "build_and_first_iteration_s": build_s,
        "compilations": compilations,
    }


def baseline_population_to_target(
    baseline: Any, members: int, target: float, max_steps: int
) -> dict[str, Any]:
    """The baseline with the tuned settings (``baseline_to_target``'s) ``vmap``ped over
    ``members`` seeds, one call per update, until every member's mean return over its last 100
    episodes reached ``target`` (or ``max_steps`` env steps each): wall time after the first
    (compiling) call, and each member's env steps."""
    cfg = tuned_baseline_config(baseline)
    rows = cfg.num_envs * cfg.num_steps
    t0 = time.perf_counter()
    runners, step = baseline_population(baseline, cfg, members)
    runners, out = step(runners)
    recent = [collections.deque(maxlen=100) for _ in range(members)]
    steps: list[int | None] = [None] * members
    done = rows
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    while True:
        ep_ret, ep_done = np.asarray(out[0]), np.asarray(out[1])
        for i in range(members):
            recent[i].extend(ep_ret[i][ep_done[i]].tolist())
            if steps[i] is None and recent[i] and np.mean(recent[i]) >= target:
                steps[i] = done
        if all(s is not None for s in steps) or done >= max_steps:
            break
        runners, out = step(runners)
        done += rows
    return {
        "kind": "population_to_450",
        "system": "baseline vmapped",
        "members": members,
        "reached": sum(s is not None for s in steps),
        "steps_per_member": steps,
        "seconds_after_first_iteration": time.perf_counter() - t0,
        "build_and_first_iteration_s": build_s,
    }


def population(
    members: int, iters: int, max_steps: int, jax_env: str, chunk: int, baseline: Any
) -> None:
    """Prints the population rows: throughput at PureJaxRL's defaults, and time to 450."""
    n, t = SETTINGS["purejaxrl"]
    rows = population_throughput(members, n, t, chunk, iters, jax_env, baseline)
    for row in rows:
        print(json.dumps({"settings": "purejaxrl", **row}), flush=True)
    rate = {row["system"]: row["env_steps_per_s"] for row in rows}
    one, envpool = rate[f"rljax population {jax_env}"], rate["rljax population EnvPool CartPole-v1"]
    ratios = {"jax_env_over_envpool": one / envpool}
    if baseline is not None:
        ratios["jax_env_over_baseline"] = one / rate["baseline vmapped"]
        ratios["chunked_jax_env_over_baseline_chunked"] = (
            rate[f"rljax population {jax_env}, {chunk} updates per call"]
            / rate[f"baseline vmapped, {chunk} updates per call"]
        )
    print(json.dumps({"kind": "population_ratios", "settings": "purejaxrl", **ratios}), flush=True)
    for env in (jax_env, "CartPole-v1"):
        print(json.dumps(population_to_target(members, env, 450.0, max_steps)), flush=True)
    if baseline is not None:
        row = baseline_population_to_target(baseline, members, 450.0, max_steps)
        print(json.dumps(row), flush=True)


def rljax_to_target(env: str, target: float, max_steps: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    algo = tuned_config(env).build_algo()
    try:
        r = algo.train()
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        while (
            r["env_runners"]["episode_return_mean"] < target
            and r["num_env_steps_sampled_lifetime"] < max_steps
        ):
            r = algo.train()
        seconds = time.perf_counter() - t0
    finally:
        algo.stop()
    return {
        "kind": "to_450",
        "system": f"rljax {env}",
        "steps": r["num_env_steps_sampled_lifetime"],
        "return": r["env_runners"]["episode_return_mean"],
        "seconds_after_first_iteration": seconds,
        "build_s": build_s,
    }


def baseline_to_target(baseline: Any, target: float, max_steps: int) -> dict[str, Any]:
    out = baseline.run(tuned_baseline_config(baseline), max_steps, target, scan=False)
    return {
        "kind": "to_450",
        "system": "baseline",
        "steps": out["steps_to_target"],
        "return": out["final_return_mean"],
        "seconds_after_first_iteration": out["seconds_to_target"],
    }


def compare(
    iters: int,
    max_steps: int,
    jax_env: str,
    chunk: int,
    minatar_steps: int,
    brax_backend: str,
    members: int = 16,
) -> None:
    baseline = load_baseline()
    for name, (n, t) in SETTINGS.items():
        rows = throughput(n, t, iters, jax_env, baseline)
        g, e = (row["env_steps_per_s"] for row in rows[:2])
        ratios = {"jax_env_over_envpool": g / e}
        if baseline is not None:
            # The single-file limit against EnvPool's path bounds the 5x target.
            ratios["baseline_over_envpool"] = rows[2]["env_steps_per_s"] / e
            # PureJaxRL's way: the whole training as one program (no host between updates).
            config = baseline.Config("CartPole-v1", n, t)
            scan = baseline.run(config, iters * n * t, per_update=False)
            ratios["jax_env_over_baseline"] = g / rows[2]["env_steps_per_s"]
            ratios["jax_env_over_baseline_scan"] = g / scan["scan_env_steps_per_s"]
            rows.append({**scan, "system": "baseline scan"})
        for row in rows:
            print(json.dumps({"kind": "throughput", "settings": name, **row}), flush=True)
        print(json.dumps({"kind": "ratios", "settings": name, **ratios}), flush=True)
        for row in chunked(n, t, chunk, max(3, iters // 3), jax_env, baseline):
            print(json.dumps({"kind": "chunked", "settings": name, **row}), flush=True)
    for env in (jax_env, "CartPole-v1"):
        print(json.dumps(rljax_to_target(env, 450.0, max_steps)), flush=True)
    if baseline is not None:
        print(json.dumps(baseline_to_target(baseline, 450.0, max_steps)), flush=True)
    else:
        print(json.dumps({"kind": "baseline", "status": "not installed (gymnax)"}), flush=True)
    if members:
        population(members, max(3, iters // 3), max_steps, jax_env, chunk, baseline)
    if minatar_steps and jax_env.startswith("gymnax:"):
        for row in minatar(minatar_steps, baseline):
            print(json.dumps(row), flush=True)
    if brax_backend:
        try:
            import brax  # noqa: F401
        except ImportError:
            print(json.dumps({"kind": "brax_ant", "status": "not installed (brax)"}), flush=True)
        else:
            for row in brax_ant(64, 64, max(3, iters // 3), brax_backend):
                print(json.dumps(row), flush=True)


def only_throughput(iters: int, jax_env: str) -> None:
    """The throughput rows of both settings, then one summary object (env steps/s per system
    and settings, and the ratios; what ``benchmarks/revisions.py`` compares)."""
    baseline = load_baseline()
    summary: dict[str, dict[str, float]] = {}
    for name, (n, t) in SETTINGS.items():
        rows = throughput(n, t, iters, jax_env, baseline)
        for row in rows:
            print(json.dumps({"kind": "throughput", "settings": name, **row}), flush=True)
        keys = ["jax_env", "envpool", "baseline"]
        figures = {
            f"{k}_env_steps_per_s": r["env_steps_per_s"] for k, r in zip(keys, rows, strict=False)
        }
        figures["jax_env_over_envpool"] = rows[0]["env_steps_per_s"] / rows[1]["env_steps_per_s"]
        if baseline is not None:
            figures["jax_env_over_baseline"] = (
                rows[0]["env_steps_per_s"] / rows[2]["env_steps_per_s"]
            )
        summary[name] = figures
    print(json.dumps({"kind": "summary", "jax_env": jax_env, **summary}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--compare", action="store_true", help="run every measurement")
    p.add_argument("--iters", type=int, default=30, help="timed iterations per throughput row")
    p.add_argument("--max-steps", type=int, default=500_000)
    p.add_argument("--jax-env", default="gymnax:CartPole-v1", help="the JAX env's id")
    p.add_argument("--chunk", type=int, default=10, help="updates per host call (chunked)")
    p.add_argument(
        "--minatar-steps", type=int, default=500_000, help="MinAtar Breakout's run (0: none)"
    )
    p.add_argument(
        "--brax-backend",
        default="positional",
        help="brax ant's physics pipeline (positional, generalized, spring, mjx; '' : no ant)",
    )
    p.add_argument(
        "--only-brax", action="store_true", help="measure brax ant alone (with --compare)"
    )
    p.add_argument(
        "--members", type=int, default=16, help="the population's trials (0: no population)"
    )
    p.add_argument(
        "--only-population",
        action="store_true",
        help="measure the population alone (with --compare)",
    )
    p.add_argument(
        "--only-throughput",
        action="store_true",
        help="the throughput rows alone (with --compare), then a summary object",
    )
    p.add_argument("--gpu", action="store_true", help="rljax's runs on the GPU")
    a = p.parse_args()
    global ON_GPU
    ON_GPU = a.gpu
    if not a.compare:
        p.error("nothing to do: pass --compare")
    if a.only_brax:
        for row in brax_ant(64, 64, max(3, a.iters // 3), a.brax_backend):
            print(json.dumps(row), flush=True)
        return
    if a.only_throughput:
        only_throughput(a.iters, a.jax_env)
        return
    if a.only_population:
        baseline = load_baseline()
        population(a.members, max(3, a.iters // 3), a.max_steps, a.jax_env, a.chunk, baseline)
        return
    compare(a.iters, a.max_steps, a.jax_env, a.chunk, a.minatar_steps, a.brax_backend, a.members)


if __name__ == "__main__":
    main()
