"""Multi-agent PPO on a multi-agent JAX env: the fused program against host stepping.

The same config twice, side by side in one process: with ``num_env_runners=0`` the envs' rollout,
GAE and every policy's update are one jitted program per iteration
(``rljax.algorithms.ppo.multi_agent_fused``); with one runner thread the same JAX env is
stepped from the host (``JaxMultiAgentGymEnv``, a jitted call per env step) as any
``MultiAgentEnv`` is. Prints JSON: env and agent steps/s over the timed iterations (after
``--warmup`` untimed ones, which compile), and the summed episode return of the first and the
last iterations.

``--population K`` also trains K trials of the fused config (seeds ``seed`` to ``seed + K -
1``, learning rates spread from 3e-4 to 3e-3) as one population, one vmapped program
(``rljax.execution.population``), against the same K trials one after another, each its own
program: per side the wall time from building to the last iteration (compilation included),
env steps/s summed over the trials in the timed iterations, and each trial's last return.

``--env`` is a JaxMARL id (``pip install "rljax[jaxmarl]"``) or ``two_poles`` (two CartPoles
written in JAX, one per agent, no extra library); ``--env-config`` its ``env_config`` as JSON.

Usage::

    python benchmarks/multi_agent_jax_env.py
    python benchmarks/multi_agent_jax_env.py --env two_poles --iters 5
    python benchmarks/multi_agent_jax_env.py --population 8 --iters 10
    python benchmarks/multi_agent_jax_env.py --env jaxmarl:HeuristicEnemySMAX \
        --env-config '{"scenario": "3m"}' --fragment 64 --iters 40
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
from common import save_report

from rljax.algorithms.ppo import PPOConfig
from rljax.env.jax_adapters import classic
from rljax.env.jax_multi_agent import JaxMultiAgentEnv


class TwoPoles(JaxMultiAgentEnv):
    """Two CartPoles stepped together, one per agent; both episodes end when either pole falls
    (or after 500 steps)."""

    def __init__(self, config: Any = None):
        self.env = classic.make("CartPole-v1", {})
        self.agents = ["a", "b"]
        self.observation_spaces = {a: self.env.observation_space for a in self.agents}
        self.action_spaces = {a: self.env.action_space for a in self.agents}

    def reset(self, key: jax.Array) -> tuple[Any, dict[str, Any]]:
        k1, k2 = jax.random.split(key)
        (s1, o1), (s2, o2) = self.env.reset(k1), self.env.reset(k2)
        return (s1, s2, jnp.zeros((), jnp.int32)), {"a": o1, "b": o2}

    def step(self, state: Any, actions: dict[str, Any], key: jax.Array) -> tuple[Any, ...]:
        k1, k2 = jax.random.split(key)
        s1, o1, r1, te1, _, _ = self.env.step(state[0], actions["a"], k1)
        s2, o2, r2, te2, _, _ = self.env.step(state[1], actions["b"], k2)
        t = state[2] + 1
        end = te1 | te2
        trunc = (t >= 500) & ~end
        obs, rewards = {"a": o1, "b": o2}, {"a": r1, "b": r2}
        return (s1, s2, t), obs, rewards, {"a": end, "b": end}, {"a": trunc, "b": trunc}, {}


def config(
    env: Any,
    runners: int,
    num_envs: int,
    fragment: int,
    seed: int,
    env_config: dict[str, Any] | None = None,
) -> PPOConfig:
    """PPO with one shared policy, at settings that learn MPE (docs/jax-envs.md)."""
    return (
        PPOConfig()
        .environment(env, env_config=env_config or {})
        .env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=num_envs,
            rollout_fragment_length=fragment,
        )
        .training(
            train_batch_size=num_envs * fragment,
            minibatch_size=num_envs * fragment // 4,
            num_epochs=4,
            lr=1e-3,
            lambda_=0.95,
            entropy_coeff=0.01,
            vf_clip_param=None,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda aid, ep, **kw: "shared")
        .debugging(seed=seed)
    )


def measure(cfg: PPOConfig, warmup: int, iters: int) -> dict[str, Any]:
    """Steps/s over ``iters`` timed iterations after ``warmup`` untimed ones."""
    algo = cfg.build_algo()
    try:
        returns = []
        for _ in range(warmup):
            returns.append(algo.train()["env_runners"]["episode_return_mean"])
        env_steps = agent_steps = 0
        t0 = time.perf_counter()
        for _ in range(iters):
            runners = algo.train()["env_runners"]
            env_steps += runners["num_env_steps_sampled"]
            agent_steps += sum(runners["num_agent_steps_sampled"].values())
            returns.append(runners["episode_return_mean"])
        seconds = time.perf_counter() - t0
        fused = getattr(algo, "_fused_env", None) is not None
    finally:
        algo.stop()
    return {
        "fused": fused,
        "env_steps_per_s": env_steps / seconds,
        "agent_steps_per_s": agent_steps / seconds,
        "timed_seconds": seconds,
        "return_first": returns[0],
        "return_last": returns[-1],
    }


def measure_population(cfgs: list[PPOConfig], warmup: int, iters: int) -> dict[str, Any]:
    """The trials as one population: wall time from building to the last iteration, env
    steps/s summed over the trials in the ``iters`` timed iterations."""
    from rljax.execution.population import Population

    t0 = time.perf_counter()
    population = Population(cfgs)
    try:
        for _ in range(warmup):
            population.train()
        t1 = time.perf_counter()
        env_steps, last = 0, []
        for _ in range(iters):
            results = population.train()
            env_steps += sum(r["env_runners"]["num_env_steps_sampled"] for r in results if r)
            last = [r["env_runners"]["episode_return_mean"] for r in results if r]
        t2 = time.perf_counter()
        compilations = population.num_compilations
    finally:
        population.stop()
    return {
        "trials": len(cfgs),
        "wall_s": t2 - t0,
        "env_steps_per_s": env_steps / (t2 - t1),
        "returns_last": last,
        "num_compilations": compilations,
    }


def measure_sequential(cfgs: list[PPOConfig], warmup: int, iters: int) -> dict[str, Any]:
    """The trials one after another, each its own program (``measure``): wall time of them
    all, env steps/s summed over their timed iterations."""
    t0 = time.perf_counter()
    runs = [measure(c, warmup, iters) for c in cfgs]
    timed = sum(r["timed_seconds"] for r in runs)
    env_steps = sum(r["env_steps_per_s"] * r["timed_seconds"] for r in runs)
    return {
        "trials": len(cfgs),
        "wall_s": time.perf_counter() - t0,
        "env_steps_per_s": env_steps / timed,
        "returns_last": [r["return_last"] for r in runs],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="jaxmarl:MPE_simple_spread_v3")
    p.add_argument("--env-config", type=json.loads, default={}, help="the env_config, as JSON")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--fragment", type=int, default=104)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="a folder for multi_agent_jax_env.json")
    p.add_argument(
        "--population",
        type=int,
        default=0,
        metavar="K",
        help="also train K trials as one population against one after another (0: not)",
    )
    args = p.parse_args(argv)
    env: Any = TwoPoles if args.env == "two_poles" else args.env
    sides = {}
    for name, runners in (("fused", 0), ("host_runner", 1)):
        cfg = config(env, runners, args.num_envs, args.fragment, args.seed, args.env_config)
        sides[name] = measure(cfg, args.warmup, args.iters)
    out = {
        "benchmark": "multi_agent_jax_env",
        "env": args.env,
        "settings": vars(args),
        "cpu_count": os.cpu_count(),
        "results": sides,
        "fused_over_host": sides["fused"]["env_steps_per_s"]
        / sides["host_runner"]["env_steps_per_s"],
    }
    if args.population:
        k = args.population
        rates = [3e-4 * 10 ** (i / max(k - 1, 1)) for i in range(k)]
        cfgs = [
            config(env, 0, args.num_envs, args.fragment, args.seed + i, args.env_config).training(
                lr=rates[i]
            )
            for i in range(k)
        ]
        population = measure_population(cfgs, args.warmup, args.iters)
        sequential = measure_sequential(cfgs, args.warmup, args.iters)
        out["population"] = {
            "population": population,
            "sequential": sequential,
            "wall_ratio": sequential["wall_s"] / population["wall_s"],
            "throughput_ratio": population["env_steps_per_s"] / sequential["env_steps_per_s"],
        }
    save_report(out, args.out, "multi_agent_jax_env")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
