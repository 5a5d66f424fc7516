"""What a PPO learner class costs: the tuned CartPole example with PPO's own update against the
same config with learner classes (``.training(learner_class=...)``), side by side in one process.

Variants, each built once, their ``train()`` calls alternating (A B C D D C B A ...) so a load
on the machine that changes over time weighs on all alike:

- ``ppo``: ``rljax/tuned_examples/ppo_cartpole.yaml`` (16 EnvPool sub-envs on the fused path,
  batch 4,000, 6 epochs of minibatch 128, separate 64x64 tanh networks);
- ``ppo_learner``: the same with ``learner_class=PPOLearner``, rljax's base class: PPO's loss
  through the learner hook (``compute_loss_for_module`` traced into each minibatch step);
- ``weight_regularizer``: RLlib's example learner in JAX
  (``rljax.examples.learners.classes.custom_ppo_loss_fn_learner``, coefficient 0.02): PPO's
  loss plus the mean weight, logged as a metric;
- ``separate_vf_optimizer``: RLlib's separate value-function optimizer in JAX
  (``separate_vf_lr_and_optimizer_learner``, ``lr_vf`` = ``lr``): per-parameter learning rates
  multiplying Adam's update.

Prints JSON: per variant the first iteration (compilation included), env steps/s of the median
and the best timed iteration, and ``ratio_to_ppo`` (median over median; above 1 is faster).

Usage::

    python benchmarks/learner_class.py                 # about 1 minute on 2 cores
    python benchmarks/learner_class.py --rounds 10
    python benchmarks/learner_class.py --quick         # a smoke test: tiny batches
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from common import save_report

from rljax.algorithms.ppo import PPOConfig, PPOLearner
from rljax.examples.learners.classes.custom_ppo_loss_fn_learner import (
    PPOTorchLearnerWithWeightRegularizerLoss,
)
from rljax.examples.learners.classes.separate_vf_lr_and_optimizer_learner import (
    PPOTorchLearnerWithSeparateVfOptimizer,
)

TUNED = Path(__file__).resolve().parents[1] / "rljax" / "tuned_examples" / "ppo_cartpole.yaml"


def base_config(quick: bool) -> PPOConfig:
    config = PPOConfig.from_yaml(TUNED)
    assert isinstance(config, PPOConfig)
    if quick:
        config.env_runners(num_envs_per_env_runner=4).training(
            train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1
        )
    return config


def variants(quick: bool) -> dict[str, PPOConfig]:
    """The configs side by side (each a copy of the tuned example)."""
    lr = base_config(quick).lr
    return {
        "ppo": base_config(quick),
        "ppo_learner": base_config(quick).training(learner_class=PPOLearner),
        "weight_regularizer": base_config(quick).training(
            learner_class=PPOTorchLearnerWithWeightRegularizerLoss,
            learner_config_dict={"regularizer_coeff": 0.02},
        ),
        "separate_vf_optimizer": base_config(quick).training(
            learner_class=PPOTorchLearnerWithSeparateVfOptimizer,
            learner_config_dict={"lr_vf": lr},
        ),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=6, help="timed iterations per variant")
    p.add_argument("--quick", action="store_true", help="tiny batches: a smoke test")
    p.add_argument("--out", default=None, help="a folder for learner_class.json")
    args = p.parse_args(argv)
    configs = variants(args.quick)
    algos = {name: config.build_algo() for name, config in configs.items()}
    out: dict[str, Any] = {
        "benchmark": "learner_class",
        "settings": vars(args),
        "cpu_count": os.cpu_count(),
        "variants": {},
    }
    try:
        first: dict[str, float] = {}
        steps: dict[str, list[float]] = {name: [] for name in algos}
        for name, algo in algos.items():  # compilation, one variant after another
            t0 = time.perf_counter()
            algo.train()
            first[name] = time.perf_counter() - t0
        order = list(algos)
        for r in range(args.rounds):
            for name in order if r % 2 == 0 else reversed(order):
                t0 = time.perf_counter()
                result = algos[name].train()
                seconds = time.perf_counter() - t0
                steps[name].append(result["env_runners"]["num_env_steps_sampled"] / seconds)
        for name in algos:
            out["variants"][name] = {
                "first_iteration_s": first[name],
                "env_steps_per_s_median": statistics.median(steps[name]),
                "env_steps_per_s_best": max(steps[name]),
            }
        base = out["variants"]["ppo"]["env_steps_per_s_median"]
        for row in out["variants"].values():
            row["ratio_to_ppo"] = row["env_steps_per_s_median"] / base
        out["load_average_at_end"] = list(os.getloadavg())
    finally:
        for algo in algos.values():
            algo.stop()
    save_report(out, args.out, "learner_class")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
