"""RLlib's example RLModule ``LSTMContainingRLModule``
(``ray.rllib.examples.rl_modules.classes.lstm_containing_rlm``) at its path, in Flax.

The same network as RLlib's: an LSTM of ``lstm_cell_size`` units over the observations, then
the dense ReLU layers of ``dense_layers``, then a policy head (the action logits) and a value
head, both linear. Its state is RLlib's ``{"h": [B, cell], "c": [B, cell]}``, zeros at an
episode's start.

It plugs in as RLlib's script does: ``RLModuleSpec(module_class=LSTMContainingRLModule,
model_config={"lstm_cell_size": 256, "dense_layers": [256, 256], "max_seq_len": 20})``;
rljax builds it as ``LSTMContainingRLModule(num_outputs=n, **model_config)``, a recurrent
module (it has ``initial_state``): ``__call__`` takes a ``RecurrentInput`` (observations
``[B, L, ...]``, the state before the first step, ``first`` ``[B, L]``: the state restarts
from zeros before that step) and returns ``(logits [B, L, n], value [B, L], state_out)``.
``max_seq_len`` is the learner's sequence length (``model_config``'s key, read by rljax).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from rljax.networks.models import scanned_lstm


class LSTMContainingRLModule(nn.Module):
    """An LSTM, dense layers, and policy and value heads (see the module docstring).
    ``num_outputs``: the number of actions; the others are RLlib's ``model_config`` keys."""

    num_outputs: int
    lstm_cell_size: int = 256
    dense_layers: Sequence[int] = (128, 128)
    max_seq_len: int = 20

    def __post_init__(self) -> None:
        # RLlib's model_config gives a list; a Flax module's attributes must hash.
        object.__setattr__(self, "dense_layers", tuple(int(n) for n in self.dense_layers))
        super().__post_init__()

    def initial_state(self, n: int) -> dict[str, jax.Array]:
        """The state of ``n`` rows at an episode's start: zeros."""
        zeros = jnp.zeros((n, self.lstm_cell_size), jnp.float32)
        return {"h": zeros, "c": zeros}

    @nn.compact
    def __call__(self, rin: Any) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
        b, length = rin.first.shape
        x = rin.obs.reshape((b, length, -1)).astype(jnp.float32)
        lstm = scanned_lstm(self.lstm_cell_size)
        (c, h), y = lstm((rin.state_in["c"], rin.state_in["h"]), (x, rin.first))
        for i, size in enumerate(self.dense_layers):
            y = nn.relu(nn.Dense(int(size), name=f"fc_{i}")(y))
        logits = nn.Dense(self.num_outputs, name="pi_head")(y)
        value = nn.Dense(1, name="values")(y)[..., 0]
        return logits, value, {"h": h, "c": c}


__all__ = ["LSTMContainingRLModule"]
