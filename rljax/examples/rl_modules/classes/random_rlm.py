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


def uniform_allowed_actions(space: gym.Space, mask: jax.Array, key: jax.Array) -> jax.Array:
    """One action per row of ``mask`` ``[n, space.n]``, uniform over the actions it allows
    (over all of them in a row that allows none)."""
    allowed = mask.reshape(mask.shape[0], -1) > 0
    if allowed.shape[1] != int(getattr(space, "n", -1)):
        raise ConfigError(
            f"RandomRLModule: the observation's action_mask has {allowed.shape[1]} entries per "
            f"row; the action space {space} needs one per action"
        )
    allowed = allowed | ~jnp.any(allowed, axis=-1, keepdims=True)
    logits = jnp.where(allowed, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits) + int(getattr(space, "start", 0))


class RandomRLModule(RLModule):
    """Uniformly random actions; keep it out of ``policies_to_train`` (it has no parameters).

    With RLlib's action-masking observations (a dict with ``"action_mask"``) and a Discrete
    action space, uniform over the actions the mask allows."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        n = jax.tree.leaves(obs)[0].shape[0]
        if self.action_space is None:
            raise ConfigError("RandomRLModule needs its action_space")
        space = self.action_space
        if (
            isinstance(obs, dict)
            and "action_mask" in obs
            and isinstance(space, gym.spaces.Discrete)
        ):
            mask = jnp.asarray(obs["action_mask"])
            return {Columns.ACTIONS: uniform_allowed_actions(space, mask, kwargs["rng"])}
        return {Columns.ACTIONS: uniform_actions(self.action_space, kwargs["rng"], n)}


__all__ = ["RandomRLModule"]
