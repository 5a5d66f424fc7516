"""RLlib's example RLModule ``TinyAtariCNN``
(``ray.rllib.examples.rl_modules.classes.tiny_atari_cnn_rlm``) at its path, in Flax.

The same network as RLlib's: the conv layers of ``conv_filters`` (``[filters, kernel,
stride, padding]``, padding ``"same"`` by default, as TensorFlow pads; ReLU after each), then
a 1x1 conv with one filter per action, whose output is the action logits, and a linear value
head on the last conv layer's output. The conv stack must reduce the image to 1x1 (RLlib's
default filters do for RLlib's 42x42 frames: 42 -> 21 -> 11 -> 1). Kernels start Xavier-uniform
with zero biases, the value head's weights as RLlib's ``normc_initializer(0.01)``. A "same"
layer zero-pads as RLlib does (TensorFlow's split: the extra row and column after) and then
convolves VALID-padded with rljax's ``ValidConv``, which on a CPU computes the convolution as
one matrix product: with XLA's own CPU convolution a gradient step of this network took 5x
as long (261 ms against 52 ms for 128 frames, ``benchmarks/cnn_update.py --parts conv``).

It plugs in as RLlib's script does: ``RLModuleSpec(module_class=TinyAtariCNN,
model_config={"conv_filters": [...]})``; rljax builds it as ``TinyAtariCNN(num_outputs=n,
**model_config)``, a module mapping observations ``[B, H, W, C]`` to ``(logits [B, n],
value [B])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from rljax.networks.models import ValidConv

# RLlib's defaults: [filters, kernel (w x h), stride, padding].
DEFAULT_CONV_FILTERS = ((16, 4, 2, "same"), (32, 4, 2, "same"), (256, 11, 1, "valid"))


def normc_initializer(std: float = 1.0) -> Any:
    """RLlib's ``normc_initializer``: standard normal draws, each unit's incoming weights
    scaled to norm ``std`` (a Flax kernel ``[in, out]``: per column)."""

    def init(key: jax.Array, shape: Sequence[int], dtype: Any = jnp.float32) -> jax.Array:
        w = jax.random.normal(key, shape, dtype)
        return w * std / jnp.sqrt(jnp.sum(jnp.square(w), axis=0, keepdims=True))

    return init


def _filter_spec(spec: Sequence[Any]) -> tuple[int, int, int, str]:
    if len(spec) == 4:
        filters, kernel, stride, padding = spec
    elif len(spec) == 3:
        (filters, kernel, stride), padding = spec, "same"
    else:
        raise ValueError(
            f"TinyAtariCNN: conv filter {list(spec)!r}; use [filters, kernel, stride] or "
            "[filters, kernel, stride, padding]"
        )
    if padding not in ("same", "valid"):
        raise ValueError(f"TinyAtariCNN: padding {padding!r}; use 'same' or 'valid'")
    return int(filters), int(kernel), int(stride), str(padding)


def same_padded(x: jax.Array, kernel: int, stride: int) -> jax.Array:
    """``x`` (NHWC) zero-padded so that a VALID conv gives TensorFlow's "same" output size
    ``ceil(size / stride)``: RLlib's ``same_padding`` (the odd row or column after)."""
    pads = []
    for size in x.shape[-3:-1]:
        out = -(-size // stride)
        total = max((out - 1) * stride + kernel - size, 0)
        pads.append((total // 2, total - total // 2))
    return jnp.pad(x, ((0, 0), *pads, (0, 0)))


class TinyAtariCNN(nn.Module):
    """A tiny CNN for fast learning on Atari frames (RLlib's old default CNN): see the module
    docstring. ``num_outputs``: the number of actions; ``conv_filters``: RLlib's
    ``model_config`` key (None: RLlib's default)."""

    num_outputs: int
    conv_filters: Sequence[Sequence[Any]] | None = None

    def __post_init__(self) -> None:
        # RLlib's model_config gives lists; a Flax module's attributes must hash.
        if self.conv_filters is not None:
            filters = tuple(tuple(f) for f in self.conv_filters)
            object.__setattr__(self, "conv_filters", filters)
        super().__post_init__()

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        x = obs.astype(jnp.float32)
        specs = self.conv_filters if self.conv_filters is not None else DEFAULT_CONV_FILTERS
        for i, spec in enumerate(specs):
            filters, kernel, stride, padding = _filter_spec(spec)
            if padding == "same":
                x = same_padded(x, kernel, stride)
            x = ValidConv(
                filters,
                (kernel, kernel),
                stride,
                kernel_init=nn.initializers.xavier_uniform(),
                bias_init=nn.initializers.zeros,
                name=f"Conv_{i}",
            )(x)
            x = nn.relu(x)
        if x.shape[-3:-1] != (1, 1):
            raise ValueError(
                f"TinyAtariCNN: the conv layers leave a {x.shape[-3]}x{x.shape[-2]} image; "
                f"they must reduce {obs.shape[-3]}x{obs.shape[-2]} observations to 1x1 (set "
                "conv_filters so, e.g. a last 'valid' layer as wide as the image before it)"
            )
        logits = ValidConv(
            self.num_outputs,
            (1, 1),
            1,
            kernel_init=nn.initializers.xavier_uniform(),
            bias_init=nn.initializers.zeros,
            name="logits",
        )(x)
        embeddings = x.reshape((*x.shape[:-3], x.shape[-1]))
        value = nn.Dense(1, kernel_init=normc_initializer(0.01), name="values")(embeddings)
        return logits.reshape((*x.shape[:-3], self.num_outputs)), value[..., 0]


__all__ = ["TinyAtariCNN", "normc_initializer", "same_padded"]
