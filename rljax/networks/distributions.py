"""Action distributions as pure functions of the network's ``action_dist_inputs``."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Protocol

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.errors import ConfigError


class ActionDistribution(Protocol):
    @property
    def num_outputs(self) -> int: ...

    def sample(self, key: jax.Array, inputs: jax.Array) -> jax.Array: ...
    def mode(self, inputs: jax.Array) -> jax.Array: ...
    def log_prob(self, inputs: jax.Array, actions: jax.Array) -> jax.Array: ...
    def entropy(self, inputs: jax.Array) -> jax.Array: ...
    def kl(self, inputs_p: jax.Array, inputs_q: jax.Array) -> jax.Array: ...


@dataclasses.dataclass(frozen=True)
class Categorical:
    """Categorical over ``num_actions``; inputs are logits of shape [B, num_actions]."""

    num_actions: int

    @property
    def num_outputs(self) -> int:
        return self.num_actions

    def sample(self, key: jax.Array, inputs: jax.Array) -> jax.Array:
        return jax.random.categorical(key, inputs, axis=-1).astype(jnp.int32)

    def mode(self, inputs: jax.Array) -> jax.Array:
        return jnp.argmax(inputs, axis=-1).astype(jnp.int32)

    def log_prob(self, inputs: jax.Array, actions: jax.Array) -> jax.Array:
        logp = jax.nn.log_softmax(inputs, axis=-1)
        return jnp.take_along_axis(logp, actions[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self, inputs: jax.Array) -> jax.Array:
        logp = jax.nn.log_softmax(inputs, axis=-1)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)

    def kl(self, inputs_p: jax.Array, inputs_q: jax.Array) -> jax.Array:
        """KL(p || q)."""
        logp = jax.nn.log_softmax(inputs_p, axis=-1)
        logq = jax.nn.log_softmax(inputs_q, axis=-1)
        return jnp.sum(jnp.exp(logp) * (logp - logq), axis=-1)


@dataclasses.dataclass(frozen=True)
class MultiCategorical:
    """Independent categoricals, one per entry of a ``MultiDiscrete`` space's ``nvec``; inputs
    are their logits concatenated, [B, sum(nvec)]; actions [B, len(nvec)] (RLlib's
    ``TorchMultiCategorical``: log-probs, entropies and KLs add up over the entries)."""

    nvec: tuple[int, ...]

    @property
    def num_outputs(self) -> int:
        return sum(self.nvec)

    def _split(self, inputs: jax.Array) -> list[jax.Array]:
        cuts = [sum(self.nvec[:i]) for i in range(1, len(self.nvec))]
        return jnp.split(inputs, cuts, axis=-1)

    def sample(self, key: jax.Array, inputs: jax.Array) -> jax.Array:
        keys = jax.random.split(key, len(self.nvec))
        parts = [
            jax.random.categorical(k, x, axis=-1)
            for k, x in zip(keys, self._split(inputs), strict=True)
        ]
        return jnp.stack(parts, axis=-1).astype(jnp.int32)

    def mode(self, inputs: jax.Array) -> jax.Array:
        return jnp.stack([jnp.argmax(x, axis=-1) for x in self._split(inputs)], -1).astype(
            jnp.int32
        )

    def log_prob(self, inputs: jax.Array, actions: jax.Array) -> jax.Array:
        parts = self._split(inputs)
        terms = [
            Categorical(n).log_prob(x, actions[..., i])
            for i, (n, x) in enumerate(zip(self.nvec, parts, strict=True))
        ]
        return jnp.sum(jnp.stack(terms, -1), -1)

    def entropy(self, inputs: jax.Array) -> jax.Array:
        terms = [
            Categorical(n).entropy(x) for n, x in zip(self.nvec, self._split(inputs), strict=True)
        ]
        return jnp.sum(jnp.stack(terms, -1), -1)

    def kl(self, inputs_p: jax.Array, inputs_q: jax.Array) -> jax.Array:
        ps, qs = self._split(inputs_p), self._split(inputs_q)
        terms = [Categorical(n).kl(p, q) for n, p, q in zip(self.nvec, ps, qs, strict=True)]
        return jnp.sum(jnp.stack(terms, -1), -1)


@dataclasses.dataclass(frozen=True)
class DiagGaussian:
    """Diagonal Gaussian; inputs are ``[mean, log_std]`` of shape [B, 2 * action_dim]."""

    action_dim: int
    log_std_clip: float = 20.0

    @property
    def num_outputs(self) -> int:
        return 2 * self.action_dim

    def _split(self, inputs: jax.Array) -> tuple[jax.Array, jax.Array]:
        mean, log_std = jnp.split(inputs, 2, axis=-1)
        return mean, jnp.clip(log_std, -self.log_std_clip, self.log_std_clip)

    def sample(self, key: jax.Array, inputs: jax.Array) -> jax.Array:
        mean, log_std = self._split(inputs)
        return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)

    def mode(self, inputs: jax.Array) -> jax.Array:
        return self._split(inputs)[0]

    def log_prob(self, inputs: jax.Array, actions: jax.Array) -> jax.Array:
        mean, log_std = self._split(inputs)
        z = (actions - mean) * jnp.exp(-log_std)
        return jnp.sum(-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi), axis=-1)

    def entropy(self, inputs: jax.Array) -> jax.Array:
        _, log_std = self._split(inputs)
        return jnp.sum(log_std + 0.5 * math.log(2 * math.pi * math.e), axis=-1)

    def kl(self, inputs_p: jax.Array, inputs_q: jax.Array) -> jax.Array:
        """KL(p || q)."""
        mp, lp = self._split(inputs_p)
        mq, lq = self._split(inputs_q)
        var_ratio = jnp.exp(2 * (lp - lq))
        return jnp.sum(lq - lp + 0.5 * (var_ratio + ((mp - mq) * jnp.exp(-lq)) ** 2 - 1), axis=-1)


@dataclasses.dataclass(frozen=True)
class SquashedDiagGaussian:
    """``tanh`` of a diagonal Gaussian (SAC's policy); actions in (-1, 1), inputs ``[mean, log_std]``.

    The log-density includes the change of variables: ``log p(a) = log N(u) - sum log(1 - tanh(u)^2)``
    with ``a = tanh(u)``, computed stably as ``2 (log 2 - u - softplus(-2u))``.
    """

    action_dim: int
    log_std_min: float = -20.0
    log_std_max: float = 2.0

    @property
    def num_outputs(self) -> int:
        return 2 * self.action_dim

    def _split(self, inputs: jax.Array) -> tuple[jax.Array, jax.Array]:
        mean, log_std = jnp.split(inputs, 2, axis=-1)
        return mean, jnp.clip(log_std, self.log_std_min, self.log_std_max)

    @staticmethod
    def _log_density(mean: jax.Array, log_std: jax.Array, u: jax.Array) -> jax.Array:
        """``log p(tanh(u))``: the Gaussian's log-density of ``u`` less the squashing's."""
        z = (u - mean) * jnp.exp(-log_std)
        logp_u = jnp.sum(-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi), axis=-1)
        correction = jnp.sum(2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u)), axis=-1)
        return logp_u - correction

    def sample_and_log_prob(self, key: jax.Array, inputs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """A reparameterised sample (differentiable in ``inputs``) and its log-density."""
        mean, log_std = self._split(inputs)
        u = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)
        return jnp.tanh(u), self._log_density(mean, log_std, u)

    def log_prob(self, inputs: jax.Array, actions: jax.Array) -> jax.Array:
        """The log-density of squashed ``actions`` in (-1, 1) (clipped 1e-6 inside the bounds,
        where ``atanh`` is finite): BC's term of CQL's first steps."""
        mean, log_std = self._split(inputs)
        u = jnp.arctanh(jnp.clip(actions, -1.0 + 1e-6, 1.0 - 1e-6))
        return self._log_density(mean, log_std, u)

    def sample(self, key: jax.Array, inputs: jax.Array) -> jax.Array:
        return self.sample_and_log_prob(key, inputs)[0]

    def mode(self, inputs: jax.Array) -> jax.Array:
        return jnp.tanh(self._split(inputs)[0])


@dataclasses.dataclass(frozen=True)
class CompositeDistribution:
    """Independent distributions of a Tuple / Dict action space's parts (RLlib's
    ``TorchMultiDistribution``): inputs are the parts' inputs concatenated in the order of the
    space's leaves (Dict keys sorted); actions are a tuple / dict of the parts' actions;
    log-probabilities, entropies and KLs add up over the parts."""

    parts: tuple[ActionDistribution, ...]
    keys: tuple[str, ...] | None = None  # a Dict space's keys (sorted); None: a Tuple

    @property
    def num_outputs(self) -> int:
        return sum(p.num_outputs for p in self.parts)

    def _split(self, inputs: jax.Array) -> list[jax.Array]:
        sizes = [p.num_outputs for p in self.parts]
        cuts = [sum(sizes[:i]) for i in range(1, len(sizes))]
        return jnp.split(inputs, cuts, axis=-1)

    def _leaves(self, actions: Any) -> list[Any]:
        if self.keys is None:
            return list(actions)
        return [actions[k] for k in self.keys]

    def _pack(self, leaves: list[Any]) -> Any:
        if self.keys is None:
            return tuple(leaves)
        return dict(zip(self.keys, leaves, strict=True))

    def sample(self, key: jax.Array, inputs: jax.Array) -> Any:
        keys = jax.random.split(key, len(self.parts))
        parts = zip(self.parts, keys, self._split(inputs), strict=True)
        return self._pack([p.sample(k, x) for p, k, x in parts])

    def mode(self, inputs: jax.Array) -> Any:
        parts = zip(self.parts, self._split(inputs), strict=True)
        return self._pack([p.mode(x) for p, x in parts])

    def log_prob(self, inputs: jax.Array, actions: Any) -> jax.Array:
        parts = zip(self.parts, self._split(inputs), self._leaves(actions), strict=True)
        return jnp.sum(jnp.stack([p.log_prob(x, a) for p, x, a in parts], -1), -1)

    def entropy(self, inputs: jax.Array) -> jax.Array:
        parts = zip(self.parts, self._split(inputs), strict=True)
        return jnp.sum(jnp.stack([p.entropy(x) for p, x in parts], -1), -1)

    def kl(self, inputs_p: jax.Array, inputs_q: jax.Array) -> jax.Array:
        parts = zip(self.parts, self._split(inputs_p), self._split(inputs_q), strict=True)
        return jnp.sum(jnp.stack([d.kl(p, q) for d, p, q in parts], -1), -1)


def make_distribution(action_space: gym.Space, log_std_clip: float = 20.0) -> ActionDistribution:
    """The distribution family for an action space."""
    if isinstance(action_space, gym.spaces.Tuple):
        return CompositeDistribution(
            tuple(make_distribution(s, log_std_clip) for s in action_space.spaces)
        )
    if isinstance(action_space, gym.spaces.Dict):
        keys = tuple(sorted(action_space.spaces))
        return CompositeDistribution(
            tuple(make_distribution(action_space.spaces[k], log_std_clip) for k in keys), keys
        )
    if isinstance(action_space, gym.spaces.Discrete):
        return Categorical(int(action_space.n))
    if isinstance(action_space, gym.spaces.MultiDiscrete) and action_space.nvec.ndim == 1:
        if np.any(action_space.start != 0):
            raise ConfigError(
                f"action space {action_space} has non-zero starts; rljax's MultiDiscrete "
                "actions count from 0"
            )
        return MultiCategorical(tuple(int(n) for n in action_space.nvec))
    if isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
        return DiagGaussian(int(action_space.shape[0]), log_std_clip)
    raise ConfigError(
        f"action space {action_space} is not supported; rljax supports Discrete, 1-D "
        "MultiDiscrete, 1-D Box action spaces, and Tuple / Dict spaces of them (PPO, IMPALA, "
        "APPO)"
    )
