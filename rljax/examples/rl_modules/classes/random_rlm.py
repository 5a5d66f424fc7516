"""``RandomRLModule``: acts uniformly at random in its action space and never learns (RLlib's
``ray.rllib.examples.rl_modules.classes.random_rlm``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp

from rljax.algorithms.algorithm import RLModule
from rljax.core.columns import Columns
from rljax.utils.errors import ConfigError


def uniform_actions(space: gym.Space, key: jax.Array, n: int) -> jax.Array:
    """``n`` actions drawn uniformly from ``space`` (Discrete, MultiDiscrete, a bounded Box)."""
    if isinstance(space, gym.spaces.Discrete):
        return jax.random.randint(key, (n,), 0, int(space.n)) + int(space.start)
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = jnp.asarray(space.nvec)
        return jax.random.randint(key, (n, *nvec.shape), 0, nvec)
    if isinstance(space, gym.spaces.Box) and space.is_bounded():
        low, high = jnp.asarray(space.low), jnp.asarray(space.high)
        return jax.random.uniform(key, (n, *space.shape), minval=low, maxval=high)
    raise ConfigError(
        f"RandomRLModule acts in Discrete, MultiDiscrete and bounded Box spaces; got {space}"
    )


class RandomRLModule(RLModule):
    """Uniformly random actions; keep it out of ``policies_to_train`` (it has no parameters)."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        n = jax.tree.leaves(batch[Columns.OBS])[0].shape[0]
        if self.action_space is None:
            raise ConfigError("RandomRLModule needs its action_space")
        return {Columns.ACTIONS: uniform_actions(self.action_space, kwargs["rng"], n)}


__all__ = ["RandomRLModule"]
