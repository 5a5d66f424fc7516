"""TD3's deterministic actor, Gaussian exploration around it, and its actions in env units.

The critics are ``rljax.networks.q_models.TwinCritic``. Actions live in the actor's [-1, 1]
scale everywhere inside the algorithm (replay, critics, noise); ``ActionBounds`` maps them to
the env's bounds only when they are sent to an env or returned to a user.
"""

from __future__ import annotations

import dataclasses
from typing import overload

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.networks.q_models import actor_mlp
from rljax.utils.errors import ConfigError


class DeterministicActor(nn.Module):
    """``__call__(obs [B, *obs_shape]) -> [B, action_dim]`` actions in (-1, 1).

    SAC's actor layers (``actor_mlp``: an MLP of ``fcnet_hiddens + head_fcnet_hiddens``) with
    one output per action dimension, squashed by tanh. The output layer starts small, so the
    first policy acts near the middle of the action range.
    """

    action_dim: int
    model_config: DefaultModelConfig

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return jnp.tanh(actor_mlp(obs, self.model_config, self.action_dim))


def gaussian_exploration(
    key: jax.Array, action: jax.Array, stddev: float, uniform: jax.Array
) -> jax.Array:
    """The actor's actions with Gaussian noise, or uniform random ones; [B, A] -> [B, A].

    Args:
      key: A PRNG key.
      action: The actor's actions in [-1, 1], [B, A].
      stddev: The noise's standard deviation in the actor's scale (half the action range).
      uniform: bool scalar: draw uniform actions in [-1, 1] instead (before learning starts,
        as Stable-Baselines3 does, so the first data covers the whole action range).

    Returns:
      ``clip(action + stddev * N(0, 1), -1, 1)``, or uniform actions.
    """
    k_noise, k_uniform = jax.random.split(key)
    noise = stddev * jax.random.normal(k_noise, action.shape, action.dtype)
    noisy = jnp.clip(action + noise, -1.0, 1.0)
    random = jax.random.uniform(k_uniform, action.shape, action.dtype, -1.0, 1.0)
    return jnp.where(uniform, random, noisy)


@dataclasses.dataclass(frozen=True)
class ActionBounds:
    """A 1-D Box's finite bounds: maps the actor's [-1, 1] to ``[low, high]``.

    Attributes:
      low, high: The bounds, float32 [A].
      dtype: The env's action dtype.
    """

    low: np.ndarray
    high: np.ndarray
    dtype: np.dtype

    @classmethod
    def of(cls, space: gym.Space, algo: str) -> ActionBounds:
        """The bounds of ``space``; ``ConfigError`` unless it is a 1-D Box with finite bounds."""
        if not (
            isinstance(space, gym.spaces.Box)
            and len(space.shape) == 1
            and np.all(np.isfinite(space.low))
            and np.all(np.isfinite(space.high))
        ):
            raise ConfigError(
                f"{algo} needs a 1-D Box action space with finite bounds; the env has {space}. "
                "Use DQN, SAC or PPO for discrete actions"
            )
        return cls(
            np.asarray(space.low, np.float32),
            np.asarray(space.high, np.float32),
            np.dtype(space.dtype),
        )

    @overload
    def to_env(self, action: np.ndarray) -> np.ndarray: ...

    @overload
    def to_env(self, action: jax.Array) -> jax.Array: ...

    def to_env(self, action: np.ndarray | jax.Array) -> np.ndarray | jax.Array:
        """[..., A] actions in [-1, 1] -> the env's units; numpy in, numpy out; jax in, jax out."""
        return (self.low + (action + 1.0) * 0.5 * (self.high - self.low)).astype(self.dtype)
