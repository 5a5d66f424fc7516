"""Run in a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=4 (see the test):
a population of 4 PPO trials on rljax's JAX CartPole, its trial axis on 1, 2 and 4 devices.
Each layout trains two iterations, then PBT's exploit copies trial 0 into trial 3, then a
third iteration; then trials 1-3 stop and the program is rebuilt for trial 0 alone, which
trains a fourth. Prints the largest parameter difference from one device after each stage,
the devices each program used, each run's per-trial results and the compilations; and the same
for 4 multi-agent PPO trials on 1 and 4 devices (two iterations)."""

import json
import sys
from pathlib import Path

import jax
import numpy as np

from rljax.algorithms.ppo import PPOConfig
from rljax.execution.population import Population
from rljax.learners.devices import population_devices


def config(lr: float, seed: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("rljax:CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=32)
        .training(lr=lr, train_batch_size_per_learner=128, minibatch_size=64, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=seed)
    )


def run(devices: int) -> dict:
    configs = [config(lr, seed) for seed, lr in enumerate((1e-3, 3e-3, 1e-2, 3e-2))]
    population = Population(configs, compaction="always", devices=jax.devices()[:devices])
    out: dict = {"num_devices": [population.num_devices], "results": [], "params": []}
    try:
        for iteration in range(4):
            if iteration == 2:
                population.exploit({3: 0}, {3: {"lr": 5e-3}})
                copied = jax.tree.map(
                    lambda a, b: bool(np.array_equal(a, b)),
                    jax.device_get(population.members[3].state.params),
                    jax.device_get(population.members[0].state.params),
                )
                out["exploit_copied"] = all(jax.tree.leaves(copied))
            if iteration == 3:
                # Before the compaction: the programs compiled once through three iterations
                # and an exploit, the stacked state is split over the devices, and each
                # trial's own state lives on one device, its slot's.
                out["cache_sizes"] = [
                    population.loop.sample._cache_size(),
                    population.loop.learn._cache_size(),
                ]
                out["state_devices"] = sorted(
                    {len(x.sharding.device_set) for x in jax.tree.leaves(population.state)}
                )
                out["member_devices"] = [
                    sorted({str(d) for x in jax.tree.leaves(m.state) for d in x.devices()})
                    for m in population.members
                ]
                for trial in (1, 2, 3):
                    population.stop_trial(trial)
                out["num_devices"].append(population.num_devices)
            results = population.train()
            out["results"].append(
                [
                    None
                    if r is None
                    else [
                        r["env_runners"]["num_episodes"],
                        r["env_runners"]["episode_return_mean"],
                        r["learners"]["default_policy"]["policy_loss"],
                    ]
                    for r in results
                ]
            )
            out["params"].append([jax.device_get(m.state.params) for m in population.members])
        state_devices = {len(x.sharding.device_set) for x in jax.tree.leaves(population.state)}
        out["final_state_devices"] = sorted(state_devices)
        out["num_compilations"] = population.num_compilations
    finally:
        population.stop()
    return out


def multi_agent_run(devices: int) -> dict:
    """4 multi-agent PPO trials (two policies, ``test_population_multi_agent._config``'s JAX
    env) on ``devices`` devices, two iterations: per trial its returns and its parameters."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tune"))
    from test_population_multi_agent import _config

    configs = [_config(lr, seed) for seed, lr in enumerate((1e-3, 3e-3, 1e-2, 3e-2))]
    population = Population(configs, devices=jax.devices()[:devices])
    try:
        returns = [
            [r["env_runners"]["episode_return_mean"] for r in population.train()] for _ in range(2)
        ]
        return {
            "num_devices": population.num_devices,
            "returns": returns,
            "params": [jax.device_get([g.params for g in m.state]) for m in population.members],
        }
    finally:
        population.stop()


def largest_difference(a: list, b: list) -> float:
    diffs = jax.tree.map(lambda x, y: float(np.max(np.abs(x - y))), a, b)
    return max(jax.tree.leaves(diffs))


def main() -> None:
    assert len(jax.devices()) == 4, jax.devices()
    runs = {n: run(n) for n in (1, 2, 4)}
    one = runs[1]["params"]
    for seen in runs.values():
        seen["max_abs_diff"] = [
            largest_difference(p, q) for p, q in zip(seen.pop("params"), one, strict=True)
        ]
    default = len(population_devices(0.0))  # where a Population(configs) splits its trials
    ma = {n: multi_agent_run(n) for n in (1, 4)}
    multi_agent = {
        "num_devices": [ma[n]["num_devices"] for n in (1, 4)],
        "returns": [ma[n]["returns"] for n in (1, 4)],
        "max_abs_diff": largest_difference(ma[4]["params"], ma[1]["params"]),
    }
    print(
        json.dumps(
            {
                "runs": {str(n): seen for n, seen in runs.items()},
                "default": default,
                "multi_agent": multi_agent,
            }
        )
    )


if __name__ == "__main__":
    main()
