"""PPO on CartPole-v1 end to end, with rljax's XLA CPU options (``"auto"``) and without (None).

Three configs, each built twice in this one process (``.debugging(xla_cpu_options="auto")`` and
``.debugging(xla_cpu_options=None)``), their ``train()`` calls alternating (in the order
A B B A ...), so a load on the machine that changes over time weighs on both alike:

- ``rllib_defaults``: ``PPOConfig().environment("CartPole-v1")``, RLlib's defaults (batch
  4,000, 30 epochs of minibatch 128, 256x256 shared layers; rljax's default of no runner
  threads: the fused EnvPool path, one program per iteration);
- ``rllib_defaults_2_runners``: the same with RLlib's 2 runners (``num_env_runners=2``): each
  runner thread samples its fragment in one jitted call (EnvPool's XLA step in a scan), then
  the jitted update;
- ``tuned``: ``rljax/tuned_examples/ppo_cartpole.yaml`` (16 envs, 6 epochs of minibatch 128,
  separate 64x64 tanh networks).

With ``--compare`` the ``rllib_defaults`` config gets a third variant, ``rllib``: Ray RLlib's own
``PPOConfig().environment("CartPole-v1")`` (RLlib 2.60's defaults: 2 env runners as Ray actors,
batch 4,000, 30 epochs of minibatch 128, 256x256, torch on the CPU), in a child process started
with ``--rllib-python`` (default: this interpreter) that trains one iteration per line it reads
on stdin. Its ``train()`` calls take their turn in the same A B C C B A order as rljax's, so the
three share the machine's load alike; ``speedup_vs_rllib`` is the ratio of median iteration times
(both sample 4,000 env steps per iteration).

The other algorithms' configs (``--configs``, not run by default), each built twice, with
``xla_cpu_options=LARGE_OPTIONS`` given as a dict (``options``, whatever ``"auto"`` would
choose for it) and with None (``off``): ``dqn`` (``DQNConfig().environment("CartPole-v1")``,
fused), ``dqn_1_runner`` (one runner thread: the act step and the update cycle), ``sac`` and
``td3`` (Pendulum-v1), ``impala`` and ``appo`` (CartPole-v1), ``multi_agent`` (two CartPole
agents, a policy each, RLlib's default network: the stacked update and the act step), and
populations of ``POPULATION_TRIALS`` trials as Tune trains them (``population_rllib_defaults``:
256x256, 10 epochs; ``population_tuned``: ``ppo_cartpole.yaml``); ``auto_chooses`` says what
``"auto"`` would give an unstacked program of that size.

Per config and variant: the options the programs got, ``first_iteration_s`` (compilation
included), and over the other iterations the env steps per second (``env_steps_per_s_median``
from the median iteration, ``env_steps_per_s_best`` from the fastest) and the iteration times.
The user's ``XLA_FLAGS`` apply to both variants (a flag set there is never overridden), so run
it without them.

Usage::

    python benchmarks/rllib_defaults.py                       # about 6 minutes on 2 cores
    python benchmarks/rllib_defaults.py --iterations 3 --tuned-iterations 10
    python benchmarks/rllib_defaults.py --configs rllib_defaults --compare \
        --rllib-python /path/to/rllib-venv/bin/python         # RLlib 2.60 + torch there
    python benchmarks/rllib_defaults.py --configs dqn sac td3 multi_agent population_tuned
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import LineWorker, machine_info, save_report, xla_pool_threads  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VARIANTS: dict[str, Any] = {"auto": "auto", "off": None}
PPO_CONFIGS = ("rllib_defaults", "rllib_defaults_2_runners", "tuned")
# The other algorithms' programs: each built with the large networks' options given as a dict
# ("options", whatever "auto" would choose for it) and with none ("off").
OTHER_CONFIGS = (
    "dqn",
    "dqn_1_runner",
    "sac",
    "td3",
    "impala",
    "appo",
    "multi_agent",
    "population_rllib_defaults",
    "population_tuned",
)
POPULATION_TRIALS = 4


def make_other_config(name: str, setting: Any, seed: int = 0) -> Any:
    """RLlib's defaults for another algorithm (or a population trial) with ``setting``."""
    from rljax.algorithms.appo import APPOConfig
    from rljax.algorithms.dqn import DQNConfig
    from rljax.algorithms.impala import IMPALAConfig
    from rljax.algorithms.ppo import PPOConfig
    from rljax.algorithms.sac import SACConfig
    from rljax.algorithms.td3 import TD3Config
    from rljax.env import make_multi_agent

    if name == "dqn":
        config: Any = DQNConfig().environment("CartPole-v1")
    elif name == "dqn_1_runner":
        config = DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=1)
    elif name == "sac":
        config = SACConfig().environment("Pendulum-v1")
    elif name == "td3":
        config = TD3Config().environment("Pendulum-v1")
    elif name == "impala":
        config = IMPALAConfig().environment("CartPole-v1")
    elif name == "appo":
        config = APPOConfig().environment("CartPole-v1")
    elif name == "multi_agent":  # RLlib's default network per policy, host runners
        config = (
            PPOConfig()
            .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
            .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=_agent_to_policy)
        )
    elif name == "population_rllib_defaults":  # 256x256, 10 epochs instead of 30
        config = PPOConfig().environment("CartPole-v1").training(num_epochs=10)
    elif name == "population_tuned":
        config = PPOConfig.from_yaml(ROOT / "rljax" / "tuned_examples" / "ppo_cartpole.yaml")
    else:
        raise ValueError(f"config {name!r}; use one of {OTHER_CONFIGS}")
    return config.debugging(seed=seed, xla_cpu_options=setting)


def _agent_to_policy(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    return f"p{agent_id}"


def make_config(name: str, setting: Any) -> Any:
    from rljax.algorithms.ppo import PPOConfig

    if name in OTHER_CONFIGS:
        return make_other_config(name, setting)
    if name == "rllib_defaults":
        config: Any = PPOConfig().environment("CartPole-v1")
    elif name == "rllib_defaults_2_runners":
        config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2)
    else:
        config = PPOConfig.from_yaml(ROOT / "rljax" / "tuned_examples" / "ppo_cartpole.yaml")
    return config.debugging(xla_cpu_options=setting)


def env_steps(result: dict[str, Any]) -> int:
    for where in (result, result.get("env_runners", {})):
        if "num_env_steps_sampled_lifetime" in where:
            return int(where["num_env_steps_sampled_lifetime"])
    raise KeyError("num_env_steps_sampled_lifetime not in the result")


class RLlibChild(LineWorker):
    """RLlib's PPO at its defaults in a child process: ``train()`` sends one line and reads back
    the iteration's env-step count (a JSON line), so its iterations interleave with rljax's."""

    def __init__(self, python: str) -> None:
        super().__init__([python, os.path.abspath(__file__), "--rllib-worker"], what="RLlib child")
        self.versions = self.started

    def train(self) -> dict[str, Any]:
        return self.ask("train")


def rllib_worker() -> None:
    """The child's side of :class:`RLlibChild` (runs under RLlib's interpreter, no rljax)."""
    import ray
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig

    algo = PPOConfig().environment("CartPole-v1").build_algo()
    versions = {"ray": ray.__version__, "torch": torch.__version__}
    print("RESULT " + json.dumps(versions), flush=True)
    for _ in sys.stdin:
        steps = env_steps(algo.train())
        print("RESULT " + json.dumps({"num_env_steps_sampled_lifetime": steps}), flush=True)
    algo.stop()
    ray.shutdown()


class _PopulationRun:
    """A population of ``POPULATION_TRIALS`` trials of a config, driven like an algorithm."""

    def __init__(self, name: str, setting: Any):
        from rljax.execution.population import Population

        configs = [make_other_config(name, setting, seed=s) for s in range(POPULATION_TRIALS)]
        self.population = Population(configs)
        self._xla_options = self.population.loop.xla_options

    def train(self) -> dict[str, Any]:
        results = self.population.train()
        return {"num_env_steps_sampled_lifetime": sum(env_steps(r) for r in results if r)}

    def stop(self) -> None:
        self.population.stop()


def auto_choice(name: str, algo: Any) -> Any:
    """What ``"auto"`` picks for ``algo``'s update (from the size of its networks)."""
    from rljax.utils import xla_options

    if isinstance(algo, _PopulationRun):  # every trial's networks: the stacked shapes
        import jax

        population = algo.population
        acting = population.members[0].parts.acting_params
        params: Any = jax.eval_shape(jax.vmap(acting), population.state.learner)
    else:
        params = algo.parts.acting_params(algo.state)
    return xla_options.resolve("auto", params)["update"]


def run_config(
    name: str, iterations: int, rllib_python: str | None = None, profile_rounds: int = 0
) -> dict[str, Any]:
    from rljax.utils import xla_options

    if name in OTHER_CONFIGS:
        variants: dict[str, Any] = {"options": dict(xla_options.LARGE_OPTIONS), "off": None}
    else:
        variants = VARIANTS
    if name.startswith("population"):
        algos: dict[str, Any] = {v: _PopulationRun(name, s) for v, s in variants.items()}
    else:
        algos = {v: make_config(name, s).build_algo() for v, s in variants.items()}
    out: dict[str, Any] = {}
    try:
        if rllib_python is not None:
            algos["rllib"] = RLlibChild(rllib_python)
        times: dict[str, list[float]] = {v: [] for v in algos}
        steps: dict[str, list[int]] = {v: [] for v in algos}
        last = dict.fromkeys(algos, 0)
        for v, algo in algos.items():  # first iteration: compilation
            start = time.perf_counter()
            last[v] = env_steps(algo.train())
            out[v] = {
                "first_iteration_s": round(time.perf_counter() - start, 3),
            }
            if isinstance(algo, RLlibChild):
                out[v]["versions"] = algo.versions
            else:
                out[v]["xla_cpu_options"] = algo._xla_options.get("update")
        order = list(algos)
        for i in range(iterations):
            # ABBA: neither variant always runs right after the other one.
            for v in order if i % 2 == 0 else order[::-1]:
                algo = algos[v]
                start = time.perf_counter()
                now = env_steps(algo.train())
                times[v].append(time.perf_counter() - start)
                steps[v].append(now - last[v])
                last[v] = now
        for v in algos:
            per_iter = statistics.median(steps[v])
            out[v].update(
                {
                    "iterations": iterations,
                    "env_steps_per_iteration": per_iter,
                    "iteration_s_min": round(min(times[v]), 4),
                    "iteration_s_median": round(statistics.median(times[v]), 4),
                    "env_steps_per_s_best": round(per_iter / min(times[v]), 1),
                    "env_steps_per_s_median": round(per_iter / statistics.median(times[v]), 1),
                }
            )
        first = next(iter(algos))
        out["speedup_median"] = round(
            out["off"]["iteration_s_median"] / out[first]["iteration_s_median"], 3
        )
        if "rllib" in out:
            out["speedup_vs_rllib"] = {
                v: round(out["rllib"]["iteration_s_median"] / out[v]["iteration_s_median"], 2)
                for v in variants
            }
        if name in OTHER_CONFIGS:
            out["auto_chooses"] = auto_choice(name, algos["off"])
        first_algo = algos[first]
        if profile_rounds and getattr(first_algo, "fused", False):
            # Where the first variant's iteration goes, and its network's own arithmetic.
            from ppo_profile import profile_fused

            out["profile"] = profile_fused(first_algo, profile_rounds)
    finally:
        for algo in algos.values():
            algo.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=5, help="rllib_defaults*, per variant")
    parser.add_argument("--tuned-iterations", type=int, default=30, help="tuned, per variant")
    parser.add_argument(
        "--configs",
        nargs="+",
        default=list(PPO_CONFIGS),
        choices=[*PPO_CONFIGS, *OTHER_CONFIGS],
        help=f"the other algorithms: {' '.join(OTHER_CONFIGS)}",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="rllib_defaults also runs RLlib's PPO at its defaults, interleaved",
    )
    parser.add_argument(
        "--rllib-python",
        default=sys.executable,
        help="the interpreter with ray[rllib] and torch for --compare (default: this one)",
    )
    parser.add_argument(
        "--profile-rounds",
        type=int,
        default=0,
        help="profile the fused configs' first variant after its iterations (ppo_profile.py: "
        "rollout, update, the network's own arithmetic), this many rounds; 0: none",
    )
    parser.add_argument("--rllib-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    if args.rllib_worker:
        rllib_worker()
        return
    report: dict[str, Any] = {
        "machine": machine_info(["jax", "jaxlib", "envpool"]),
        "xla_flags": os.environ.get("XLA_FLAGS"),
    }
    for name in args.configs:
        print(f"{name} ...", file=sys.stderr)
        n = args.tuned_iterations if name == "tuned" else args.iterations
        rllib = args.rllib_python if args.compare and name == "rllib_defaults" else None
        report[name] = run_config(name, n, rllib, args.profile_rounds)
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    # The CPU client's pool, as the first build sized it (rljax.utils.xla_threads).
    report["machine"]["xla_pool_threads"] = xla_pool_threads()
    save_report(report, args.out, "rllib_defaults")


if __name__ == "__main__":
    main()
