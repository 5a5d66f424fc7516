"""IMPALA and APPO on one and two learners (run with 2 host devices): the fused update agrees,
and runner threads sampling ahead of a learner mesh keep working weights. Prints JSON."""

import json

import jax
import numpy as np

from rljax.algorithms.appo import APPOConfig
from rljax.algorithms.impala import IMPALAConfig


def run(cls, num_learners, num_env_runners):
    algo = (
        cls()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=num_env_runners, num_envs_per_env_runner=4, rollout_fragment_length=16
        )
        .learners(num_learners=num_learners)
        .debugging(seed=0)
        .build_algo()
    )
    try:
        results = [algo.train() for _ in range(2)]
        return results[-1], jax.device_get(algo.state.params)
    finally:
        algo.stop()


out = {}
for cls in (IMPALAConfig, APPOConfig):
    name = cls.algo_name
    (r1, p1), (r2, p2) = run(cls, 0, 0), run(cls, 2, 0)
    diffs = jax.tree.leaves(jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))), p1, p2))
    out[f"{name}_max_param_diff"] = max(diffs)
    loss = lambda r: r["learners"]["default_policy"]["total_loss"]  # noqa: E731
    out[f"{name}_loss_diff"] = abs(loss(r1) - loss(r2))
    r, _ = run(cls, 2, 1)
    out[f"{name}_runner_loss"] = loss(r)
    out[f"{name}_runner_restarts"] = r["fault_tolerance"]["num_env_runner_restarts"]
print(json.dumps(out))
