"""DQN's network bundle: the Q-network with its noise and return-distribution settings fixed."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import flax.linen as nn
import jax

from rljax.algorithms.dqn.losses import q_values


# eq=False: compared by identity (the support is an array).
@dataclasses.dataclass(frozen=True, eq=False)
class DQNNetworks:
    """The Q-network and what reading its output needs, fixed when the algorithm is built.

    Attributes:
      q_net: The Flax Q-network (``rljax.networks.q_models.build_q_network``).
      noisy: Whether its head layers are noisy (they draw noise when given a key).
      support: None, or the atoms of the return distributions, [N] (``num_atoms > 1``).
    """

    q_net: nn.Module
    noisy: bool
    support: jax.Array | None

    def apply(self, params: Any, obs: jax.Array, key: jax.Array | None = None) -> jax.Array:
        """The network's output at ``obs`` [B, ...]: Q-values [B, A] or logits [B, A, N].

        Noisy layers draw their noise from ``key``; without a key they use their means.
        """
        # Module.apply's declared return includes the (output, variables) pair that it returns
        # only when given ``mutable``; without it, the output alone.
        if self.noisy and key is not None:
            return cast(jax.Array, self.q_net.apply(params, obs, noise=True, rngs={"noise": key}))
        return cast(jax.Array, self.q_net.apply(params, obs))

    def q_values(self, out: jax.Array) -> jax.Array:
        """Q-values [B, A] from the output: itself, or the means of the return distributions."""
        return q_values(out, self.support)


__all__ = ["DQNNetworks"]
