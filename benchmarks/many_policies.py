"""Multi-agent PPO's stacked update as the number of policies grows from 1 to 1,000.

A multi-agent CartPole with one agent per policy (``make_multi_agent``, agent i -> policy i):
every policy has its own parameters (64x64 tanh MLPs for policy and value), Adam state and batch;
the update (``num_epochs`` epochs of minibatches of ``minibatch_size``) runs for all policies at
once as one jitted ``vmap``. Two ways to grow the number of policies P:

* ``--total-rows N`` (default 131072): the train batch stays N agent steps, split over the P
  policies (N / P rows each), as when a user adds policies to a config with the same batch size.
  The arithmetic stays the same; what grows is the cost of many small per-policy problems.
* ``--rows R``: every policy gets R rows, so the data (and arithmetic) grows with P.
 Sampling is not timed: the
batch is sampled once per policy count, then the update is timed ``--repeats`` times after one
warm-up call (which compiles). Prints JSON (``update_s`` per policy count, and the ratio of each
to one policy's) and writes ``OUT/many_policies.json`` and a plot.

Usage::

    python benchmarks/many_policies.py                       # 1, 10, 100, 1000 policies
    python benchmarks/many_policies.py --policies 1 10 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from common import machine_info


def measure(num_policies: int, rows: int, epochs: int, minibatch: int, repeats: int) -> dict:
    import jax
    import numpy as np

    from rljax.algorithms.ppo import PPOConfig
    from rljax.env import make_multi_agent

    env = make_multi_agent("CartPole-v1")
    ids = [f"p{i}" for i in range(num_policies)]
    algo = (
        PPOConfig()
        .environment(env, env_config={"num_agents": num_policies})
        .env_runners(num_envs_per_env_runner=1, rollout_fragment_length=rows)
        .multi_agent(policies=ids, policy_mapping_fn=lambda aid, episode, **kw: f"p{aid}")
        .training(
            train_batch_size_per_learner=rows,
            minibatch_size=minibatch,
            num_epochs=epochs,
            lr=3e-4,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False})
        .debugging(seed=0)
        .build_algo()
    )
    try:
        t0 = time.perf_counter()
        sample = algo._runners.sample()
        assert algo._loop is not None and algo._loop.postprocess is not None
        batch, _ = algo._loop.postprocess(sample.traj)  # the loop's jitted postprocess
        flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), batch)
        policy, valid = np.asarray(flat.obs["policy"]), np.asarray(flat.mask) > 0
        assert len(algo.groups) == 1  # every policy has the same settings: one stacked update
        stacked, size, counts = algo._per_policy_batches(flat, policy, valid, 0)
        jax.block_until_ready(stacked)
        sample_s = time.perf_counter() - t0
        update = algo._update_fn(0, size)
        t0 = time.perf_counter()
        state, metrics = update(algo.state[0], stacked)
        jax.block_until_ready(metrics)
        compile_s = time.perf_counter() - t0
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            state, metrics = update(state, stacked)
            jax.block_until_ready(metrics)
            times.append(time.perf_counter() - t0)
        algo.state[0] = state
        return {
            "num_policies": num_policies,
            "rows_per_policy": int(size),
            "real_rows_min": int(counts.min()),
            "sample_and_postprocess_s": sample_s,
            "first_call_s": compile_s,
            "update_s": statistics.median(times),
            "update_s_all": times,
        }
    finally:
        algo.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--policies", type=int, nargs="+", default=[1, 10, 100, 1000])
    p.add_argument("--total-rows", type=int, default=131072, help="agent steps split over P")
    p.add_argument("--rows", type=int, default=None, help="rows per policy (overrides total)")
    p.add_argument("--num-epochs", type=int, default=1)
    p.add_argument("--minibatch-size", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default="benchmark_results")
    args = p.parse_args()
    results = [
        measure(
            n,
            args.rows or max(args.minibatch_size, args.total_rows // n),
            args.num_epochs,
            args.minibatch_size,
            args.repeats,
        )
        for n in args.policies
    ]
    base = results[0]["update_s"]
    for r in results:
        r["ratio_to_first"] = r["update_s"] / base
    report = {
        "benchmark": "many_policies",
        "settings": vars(args),
        "machine": machine_info(["rljax", "jax", "jaxlib", "flax", "optax", "gymnasium"]),
        "results": results,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "many_policies.json").write_text(json.dumps(report, indent=2))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog([r["num_policies"] for r in results], [r["update_s"] for r in results], "o-")
    ax.set_xlabel("policies (one agent each)")
    ax.set_ylabel("update time (s)")
    ax.set_title("stacked multi-agent PPO update")
    fig.tight_layout()
    fig.savefig(out / "many_policies.png", dpi=100)
    plt.close(fig)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
