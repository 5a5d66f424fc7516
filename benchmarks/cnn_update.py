"""PPO's update of a conv network on the CPU: minibatch steps scanned in one program against
steps run from a host loop (``make_ppo_update(host_loop=True)``), side by side in one process.

XLA's CPU backend runs a convolution inside a ``while`` loop (``lax.scan``) several times slower
than the same convolution outside one; PPO with a conv network on the CPU therefore steps its
minibatches from Python. This script measures both on RLlib's frame-stacking example's network
(conv filters 16/32/64/128, 4x4 stride 2, head 256) on 84x84x4 frames.

    python benchmarks/cnn_update.py [--rows 1024] [--minibatch 64] [--epochs 2] [--repeats 3]

Prints one JSON object: seconds per update (the minimum of ``--repeats``, after a first call
that compiles) and per minibatch step for each variant, compile seconds, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.learner import make_ppo_update
from rljax.algorithms.ppo.losses import PPOBatch

MODEL = {
    "vf_share_layers": True,
    "conv_filters": [(16, 4, 2), (32, 4, 2), (64, 4, 2), (128, 4, 2)],
    "conv_activation": "relu",
    "head_fcnet_hiddens": [256],
}


class Frames(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (84, 84, 4), np.float32)
    action_space = gym.spaces.Discrete(6)

    def __init__(self, config: dict | None = None):
        pass

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        return np.zeros((84, 84, 4), np.float32), {}

    def step(self, action: int):
        return np.zeros((84, 84, 4), np.float32), 0.0, False, False, {}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--minibatch", type=int, default=64)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    config = (
        PPOConfig()
        .environment(Frames)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
        .training(train_batch_size=args.rows, minibatch_size=args.minibatch, num_epochs=args.epochs)
        .rl_module(model_config=MODEL)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    n = args.rows
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    batch = PPOBatch(
        obs=jax.random.uniform(keys[0], (1, n, 84, 84, 4), minval=-1.0),
        action=jax.random.randint(keys[1], (1, n), 0, 6),
        action_logp=jnp.full((1, n), -np.log(6.0), jnp.float32),
        action_dist_inputs=jnp.zeros((1, n, 6)),
        vf_preds=jnp.zeros((1, n)),
        advantages=jax.random.normal(keys[2], (1, n)),
        value_targets=jax.random.normal(keys[3], (1, n)),
        mask=jnp.ones((1, n), jnp.float32),
    )
    parts = (algo.module.apply, algo._dist, algo._optimizer, algo.hp)
    variants = {
        "scanned": jax.jit(make_ppo_update(*parts)),
        "host_loop": make_ppo_update(*parts, host_loop=True),
    }
    steps = args.epochs * (n // args.minibatch)
    out: dict = {
        "rows": n,
        "minibatch_size": args.minibatch,
        "epochs": args.epochs,
        "minibatch_steps": steps,
        "backend": jax.default_backend(),
    }
    for name, update in variants.items():
        t = time.perf_counter()
        jax.block_until_ready(update(algo.state, batch))
        first = time.perf_counter() - t
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            jax.block_until_ready(update(algo.state, batch))
            times.append(time.perf_counter() - t)
        out[name] = {
            "update_s": round(min(times), 3),
            "step_ms": round(1000 * min(times) / steps, 1),
            "first_call_s": round(first, 1),
        }
    out["host_loop_speedup"] = round(out["scanned"]["update_s"] / out["host_loop"]["update_s"], 2)
    algo.stop()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
