"""RLlib's action distribution classes of a module (``module.get_inference_action_dist_cls()``
and the like): ``cls.from_logits(action_dist_inputs)`` gives a distribution with ``sample()``,
``logp(actions)``, ``entropy()``, ``kl(other)`` and ``to_deterministic()``, as RLlib's
``TorchCategorical`` / ``TorchDiagGaussian`` have, computed by rljax's JAX distributions on
numpy arrays (the family follows the action space: ``rljax.networks.distributions``).

RLlib's documented way to act with a module::

    out = module.forward_inference({"obs": obs[None]})
    dist = module.get_inference_action_dist_cls().from_logits(out["action_dist_inputs"])
    action = dist.sample()[0]
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.networks.distributions import ActionDistribution


class ActionDistributionClass:
    """A module's distribution family (RLlib's distribution class): ``from_logits(inputs)``
    gives the distribution of each row of ``inputs``."""

    def __init__(self, family: ActionDistribution, deterministic: bool = False):
        self.family = family
        self.deterministic = deterministic

    def from_logits(self, logits: Any) -> Distribution:
        """The distribution of ``logits`` ([B, n] action_dist_inputs)."""
        return Distribution(self.family, jnp.asarray(logits), self.deterministic)

    def __repr__(self) -> str:
        kind = "deterministic " if self.deterministic else ""
        return f"ActionDistributionClass({kind}{type(self.family).__name__})"


class Distribution:
    """One batch of action distributions (RLlib's ``Distribution``), numpy in and out.
    ``sample()`` draws with a fresh key each call (``key=`` to choose one); a deterministic
    one (``to_deterministic()``) gives the mode."""

    def __init__(self, family: ActionDistribution, inputs: jax.Array, deterministic: bool):
        self.family, self.inputs, self.deterministic = family, inputs, deterministic

    def sample(self, key: jax.Array | None = None) -> np.ndarray:
        """Actions, one per row: drawn, or the mode of a deterministic distribution."""
        if self.deterministic:
            return np.asarray(self.family.mode(self.inputs))
        if key is None:
            key = jax.random.PRNGKey(int(np.random.randint(2**31 - 1)))
        return np.asarray(self.family.sample(key, self.inputs))

    def deterministic_sample(self) -> np.ndarray:
        """The mode of each row."""
        return np.asarray(self.family.mode(self.inputs))

    def logp(self, actions: Any) -> np.ndarray:
        """Log-probabilities (densities) of ``actions`` under each row."""
        return np.asarray(self.family.log_prob(self.inputs, jnp.asarray(actions)))

    def entropy(self) -> np.ndarray:
        """Each row's entropy."""
        return np.asarray(self.family.entropy(self.inputs))

    def kl(self, other: Distribution) -> np.ndarray:
        """Each row's KL divergence from ``other`` (of the same family)."""
        return np.asarray(self.family.kl(self.inputs, other.inputs))

    def to_deterministic(self) -> Distribution:
        """The same rows, sampled by their mode (RLlib's ``to_deterministic``)."""
        return Distribution(self.family, self.inputs, True)


__all__ = ["ActionDistributionClass", "Distribution"]
