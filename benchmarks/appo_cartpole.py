"""APPO and IMPALA on CartPole-v1: env steps/s with learning and wall time to a return of 450.

rljax's APPO and IMPALA train on the fused path (EnvPool's CartPole stepped inside the jitted
program, ``num_env_runners=0``): 32 sub-envs x 25 steps per update, lr 1e-3, ``vf_loss_coeff``
0.05, no entropy bonus, RLlib's defaults otherwise (APPO: clip 0.4, target policy every 2
updates; V-trace thresholds 1, grad clip 40). ``--compare`` adds RLlib's APPO with the same
chained config when RLlib is installed (only the import differs). The return is the mean over
the episodes finished in the iteration. Time counts from process start (imports and compilation
included).

Usage::

    python benchmarks/appo_cartpole.py              # rljax APPO and IMPALA
    python benchmarks/appo_cartpole.py --compare    # plus RLlib's APPO when installed
"""

from __future__ import annotations

import os
from typing import Any

import off_policy_bench

SETTINGS = {
    "env": "CartPole-v1",
    "seed": 0,
    "target_return": 450.0,
    "max_timesteps": 400_000,
    "num_envs": 32,
    "rollout_fragment_length": 25,
    "lr": 1e-3,
    "vf_loss_coeff": 0.05,
    "entropy_coeff": 0.0,
}


def configure(config_class: type, s: dict[str, Any]) -> Any:
    return (
        config_class()
        .environment(s["env"])
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=s["num_envs"],
            rollout_fragment_length=s["rollout_fragment_length"],
        )
        .training(lr=s["lr"], vf_loss_coeff=s["vf_loss_coeff"], entropy_coeff=s["entropy_coeff"])
        .debugging(seed=s["seed"])
    )


def build(variant: str, s: dict[str, Any]) -> Any:
    if variant == "rljax_appo":
        from rljax.algorithms.appo import APPOConfig

        return configure(APPOConfig, s).build_algo()
    if variant == "rljax_impala":
        from rljax.algorithms.impala import IMPALAConfig

        return configure(IMPALAConfig, s).build_algo()
    import ray
    from ray.rllib.algorithms.appo import APPOConfig as RLlibAPPOConfig

    ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    return configure(RLlibAPPOConfig, s).build_algo()


if __name__ == "__main__":
    off_policy_bench.main(
        "appo_cartpole",
        os.path.abspath(__file__),
        SETTINGS,
        build,
        variants=("rljax_appo", "rljax_impala"),
    )
