"""RLlib's parametric-action example models
(``ray.rllib.examples._old_api_stack.models.parametric_actions_model``) at their path, in Flax.

The env (``ParametricActionsCartPole``) offers, each step, a few of its actions, each with an
embedding; the model maps the CartPole part of the observation to an "intent" vector, scores
each offered action by the dot product of its embedding with the intent, and masks the actions
not offered. ``ParametricActionsModelThatLearnsEmbeddings`` learns the embeddings instead (the
env then sends only which actions are valid).

The same networks as RLlib's: RLlib's old ``FullyConnectedNetwork`` with its old default
settings (two hidden layers of 256, tanh, a separate value branch, ``normc`` initial weights,
0.01 on the output layer) maps ``obs["cart"]`` to ``action_embed_size`` outputs and the value.
RLlib's TensorFlow and PyTorch versions are one network; both names are this module, so the
example's ``TorchParametricActionsModel if framework == "torch" else ParametricActionsModel``
picks the same thing. Each is a Flax module ``__call__(obs) -> (logits [B, n], value [B])``
registered with ``ModelCatalog.register_custom_model``; ``true_obs_shape`` and
``action_embed_size`` come from ``custom_model_config`` as in RLlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from rljax.examples.rl_modules.classes.tiny_atari_cnn_rlm import normc_initializer

# The old stack's default "fcnet_hiddens" and "fcnet_activation".
_HIDDENS = (256, 256)


class _FullyConnectedNetwork(nn.Module):
    """RLlib's old ``FullyConnectedNetwork`` (``vf_share_layers=False``): a policy branch of
    ``hiddens`` (tanh) with a linear output of ``num_outputs`` and a separate value branch of
    the same widths with a linear scalar output; ``normc`` weights (1.0 hidden, 0.01 outputs)
    and zero biases, as RLlib's."""

    num_outputs: int
    hiddens: Sequence[int] = _HIDDENS

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        def branch(name: str, out: int, out_std: float) -> jax.Array:
            y = x
            for i, h in enumerate(self.hiddens):
                y = jnp.tanh(nn.Dense(h, kernel_init=normc_initializer(1.0), name=f"{name}_{i}")(y))
            return nn.Dense(out, kernel_init=normc_initializer(out_std), name=f"{name}_out")(y)

        return branch("fc", self.num_outputs, 0.01), branch("value", 1, 0.01)[..., 0]


def _masked(logits: jax.Array, mask: jax.Array) -> jax.Array:
    # RLlib's "inf mask": log(1) = 0 for an offered action, the float32 minimum otherwise.
    return logits + jnp.maximum(jnp.log(mask), jnp.finfo(jnp.float32).min)


class ParametricActionsModel(nn.Module):
    """Scores the offered actions (``obs["avail_actions"]``, ``[B, n, action_embed_size]``)
    by their dot product with an intent vector computed from ``obs["cart"]`` and masks those
    not offered (``obs["action_mask"]``, ``[B, n]``)."""

    num_outputs: int
    true_obs_shape: Sequence[int] = (4,)
    action_embed_size: int = 2

    @nn.compact
    def __call__(self, obs: Any) -> tuple[jax.Array, jax.Array]:
        intent, value = _FullyConnectedNetwork(self.action_embed_size, name="action_embed_model")(
            obs["cart"]
        )
        logits = jnp.sum(obs["avail_actions"] * intent[:, None, :], axis=2)
        return _masked(logits, obs["action_mask"]), value


class TorchParametricActionsModel(ParametricActionsModel):
    """RLlib's PyTorch version of :class:`ParametricActionsModel`: the same network."""


class ParametricActionsModelThatLearnsEmbeddings(nn.Module):
    """:class:`ParametricActionsModel` with learned action embeddings: action ``i`` valid in
    ``obs["valid_avail_actions_mask"]`` (``[B, n]``) is embedded as row ``i + 1`` of a learned
    table (row 0 for the invalid ones, whose logits are masked), as RLlib's Keras version."""

    num_outputs: int
    true_obs_shape: Sequence[int] = (4,)
    action_embed_size: int = 2

    @nn.compact
    def __call__(self, obs: Any) -> tuple[jax.Array, jax.Array]:
        mask = obs["valid_avail_actions_mask"]
        intent, value = _FullyConnectedNetwork(
            self.action_embed_size, name="pred_action_embed_model"
        )(obs["cart"])
        ids = (jnp.arange(1, self.num_outputs + 1) * mask).astype(jnp.int32)
        table = nn.Embed(self.num_outputs + 1, self.action_embed_size, name="action_embed_matrix")
        logits = jnp.sum(table(ids) * intent[:, None, :], axis=2)
        return _masked(logits, mask), value


__all__ = [
    "ParametricActionsModel",
    "ParametricActionsModelThatLearnsEmbeddings",
    "TorchParametricActionsModel",
]
