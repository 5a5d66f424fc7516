"""A conv network's PPO update on the CPU, and the two forms of a convolution it can take.

XLA's CPU convolutions are slow at the small channel counts of RL's networks, and several times
slower still inside a ``while`` loop (``lax.scan``): a minibatch step of RLlib's frame-stacking
CNN took 1,045 ms scanned against 119 ms from a host loop. rljax's networks compute their convs
on the CPU as one matrix product of shifted slices (``rljax.networks.models.patch_conv``), which
XLA runs as fast inside its loops, so PPO keeps the whole update in one program.

``--parts update`` (the default) times PPO's scanned update (``make_ppo_update``, jitted) of
RLlib's frame-stacking example's network (conv filters 16/32/64/128, 4x4 stride 2, head 256) on
84x84x4 frames: seconds per update (the minimum of ``--repeats``, after a first call that
compiles) and per minibatch step; with ``--xla-form`` the same update with the network's convs
in XLA's form (``models.CPU_CONV_FORM = "xla"`` while it is traced) beside it.

``--parts conv`` times one gradient step of a conv stack alone, computed by XLA's convolution
(``lax.conv_general_dilated``) and by ``patch_conv``, side by side: MinAtar's 3x3 conv on
1,024 10x10x4 grids and the Nature CNN on 128 84x84x4 frames (ReLUs, a squared loss), with
their largest gradient difference; and RLlib's ``TinyAtariCNN`` as ``rljax.examples`` ports it
(its logits and values summed, 128 42x42x4 frames), traced with its convs in either form.

    python benchmarks/cnn_update.py [--rows 1024] [--minibatch 64] [--epochs 2] [--repeats 3]
    python benchmarks/cnn_update.py --parts conv update --xla-form

Prints one JSON object per part.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.learner import make_ppo_update
from rljax.algorithms.ppo.losses import PPOBatch
from rljax.examples.rl_modules.classes.tiny_atari_cnn_rlm import TinyAtariCNN
from rljax.networks import models
from rljax.networks.models import NATURE_FILTERS, SMALL_IMAGE_FILTERS, patch_conv, xla_conv

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


def forms_row(steps: dict[str, Callable[[], Any]], grads: dict[str, Any], repeats: int) -> dict:
    """One row of ``--parts conv``: each form's compiled gradient step (``steps``, keyed
    ``xla_conv`` and ``patch_conv``; ``grads`` what its first call gave) timed, the median of
    ``repeats`` calls in milliseconds, with the speedup and the largest gradient difference."""
    row: dict = {}
    for form, step in steps.items():
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            jax.block_until_ready(step())
            times.append(time.perf_counter() - t)
        row[f"{form}_ms"] = round(1000 * statistics.median(times), 2)
    row["speedup"] = round(row["xla_conv_ms"] / row["patch_conv_ms"], 2)
    xla, patch = jax.tree.leaves(grads["xla_conv"]), jax.tree.leaves(grads["patch_conv"])
    row["max_grad_diff"] = max(float(jnp.abs(a - b).max()) for a, b in zip(xla, patch, strict=True))
    return row


def tiny_atari_cnn_forms(repeats: int) -> dict:
    """Gradient-step milliseconds (median of ``repeats``) of RLlib's ``TinyAtariCNN`` as
    ``rljax.examples`` ports it (the sum of its logits and values over 128 42x42x4 frames),
    traced with its convs in XLA's form and in ``patch_conv``'s, side by side."""
    net = TinyAtariCNN(num_outputs=6)
    x = jax.random.uniform(jax.random.PRNGKey(0), (128, 42, 42, 4), minval=-1.0)
    params = net.init(jax.random.PRNGKey(1), x[:1])

    def loss(p: Any, x: jax.Array) -> jax.Array:
        logits, value = net.apply(p, x)
        return jnp.sum(logits) + jnp.sum(value)

    steps, grads = {}, {}
    for form, cpu_form in (("xla_conv", "xla"), ("patch_conv", "patch")):
        before, models.CPU_CONV_FORM = models.CPU_CONV_FORM, cpu_form  # read while tracing
        try:
            steps[form] = functools.partial(jax.jit(jax.grad(loss)), params, x)
            grads[form] = jax.block_until_ready(steps[form]())
        finally:
            models.CPU_CONV_FORM = before
    return forms_row(steps, grads, repeats)


def conv_forms(repeats: int) -> dict:
    """Gradient-step milliseconds (median of ``repeats``) of XLA's conv and ``patch_conv``."""

    stacks = {
        "minatar_3x3_1024x10x10x4": (1024, (10, 10, 4), SMALL_IMAGE_FILTERS),
        "nature_128x84x84x4": (128, (84, 84, 4), NATURE_FILTERS),
    }
    out: dict = {"tiny_atari_cnn_module_128x42x42x4": tiny_atari_cnn_forms(repeats)}
    for name, (rows, shape, filters) in stacks.items():
        x = jax.random.uniform(jax.random.PRNGKey(0), (rows, *shape))
        kernels, channels = [], shape[-1]
        for i, (o, (kh, kw), _) in enumerate(filters):
            k = jax.random.normal(jax.random.PRNGKey(i), (kh, kw, channels, o)) / np.sqrt(
                kh * kw * channels
            )
            kernels.append(k)
            channels = o
        strides = [s for _, _, s in filters]

        def loss(ks: list, x: jax.Array, conv: Any, strides: list = strides) -> jax.Array:
            for k, s in zip(ks, strides, strict=True):
                x = jax.nn.relu(conv(x, k, s))
            return jnp.mean(x**2)

        steps, grads = {}, {}
        for form, conv in (("xla_conv", xla_conv), ("patch_conv", patch_conv)):
            step = jax.jit(jax.grad(lambda ks, x, conv=conv: loss(ks, x, conv)))
            steps[form] = functools.partial(step, kernels, x)
            grads[form] = jax.block_until_ready(steps[form]())
        out[name] = forms_row(steps, grads, repeats)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--minibatch", type=int, default=64)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--parts", nargs="+", choices=["update", "conv"], default=["update"])
    p.add_argument(
        "--xla-form",
        action="store_true",
        help="update: also time the network with XLA's convolution (slow: ~35 s an update)",
    )
    args = p.parse_args()
    if "conv" in args.parts:
        report = {"backend": jax.default_backend(), "conv": conv_forms(max(args.repeats, 10))}
        print(json.dumps(report, indent=2), flush=True)
    if "update" in args.parts:
        update_part(args)


def update_part(args: argparse.Namespace) -> None:
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
    # The network's convs take the form set when the update is traced (its first call).
    forms = ["patch", "xla"] if args.xla_form else ["patch"]
    variants = {f"scanned_{form}_conv": (form, jax.jit(make_ppo_update(*parts))) for form in forms}
    steps = args.epochs * (n // args.minibatch)
    out: dict = {
        "rows": n,
        "minibatch_size": args.minibatch,
        "epochs": args.epochs,
        "minibatch_steps": steps,
        "backend": jax.default_backend(),
    }
    for name, (form, update) in variants.items():
        models.CPU_CONV_FORM = form
        try:
            t = time.perf_counter()
            jax.block_until_ready(update(algo.state, batch))
            first = time.perf_counter() - t
        finally:
            models.CPU_CONV_FORM = "patch"
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
    if args.xla_form:
        ratio = out["scanned_xla_conv"]["update_s"] / out["scanned_patch_conv"]["update_s"]
        out["patch_conv_speedup"] = round(ratio, 2)
    algo.stop()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
