"""Q-networks for DQN and twin critics for SAC, built from a ``DefaultModelConfig``."""

from __future__ import annotations

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.networks.models import _CNN, _MLP, NATURE_FILTERS, is_image_space
from rljax.ops.value_learning import dueling_q
from rljax.utils.errors import ConfigError


def _check_obs_space(space: gym.Space) -> tuple[bool, bool]:
    if not isinstance(space, gym.spaces.Box):
        raise ConfigError(
            f"observation space {space} is not supported by the default model; rljax supports "
            "Box observations (vectors and images); flatten other spaces with a gymnasium wrapper"
        )
    image = is_image_space(space)
    return image, image and space.shape[0] < space.shape[-1]


class QNetwork(nn.Module):
    """``__call__(obs [B, *obs_shape]) -> Q-values [B, num_actions]``.

    Encoder (MLP of ``fcnet_hiddens``, or conv ``conv_filters`` for images), head layers
    (``head_fcnet_hiddens``; 512 units for images when empty), then one linear layer, or with
    ``dueling`` a value and an advantage stream combined as ``V + A - mean(A)``.
    """

    num_actions: int
    model_config: DefaultModelConfig
    dueling: bool = True
    image: bool = False
    channels_first: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        mc = self.model_config
        if self.image:
            x = _CNN(mc.conv_filters or NATURE_FILTERS, mc.conv_activation, self.channels_first)(
                obs
            )
            head = mc.head_fcnet_hiddens or (512,)
        else:
            x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
            x = _MLP(mc.fcnet_hiddens, mc.fcnet_activation)(x)
            head = mc.head_fcnet_hiddens
        if not self.dueling:
            x = _MLP(head, mc.head_fcnet_activation, name="q_head")(x)
            return nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(0.01))(x)
        adv = _MLP(head, mc.head_fcnet_activation, name="advantage_head")(x)
        val = _MLP(head, mc.head_fcnet_activation, name="value_head")(x)
        adv = nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(0.01), name="a")(
            adv
        )
        val = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0), name="v")(val)[:, 0]
        return dueling_q(val, adv)


def build_q_network(
    observation_space: gym.Space, num_actions: int, model_config: DefaultModelConfig, dueling: bool
) -> QNetwork:
    image, channels_first = _check_obs_space(observation_space)
    return QNetwork(num_actions, model_config, dueling, image, channels_first)


class _Critic(nn.Module):
    model_config: DefaultModelConfig

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        mc = self.model_config
        x = jnp.concatenate([obs.reshape((obs.shape[0], -1)).astype(jnp.float32), action], -1)
        x = _MLP(mc.fcnet_hiddens + mc.head_fcnet_hiddens, mc.fcnet_activation)(x)
        return nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(x)[:, 0]


class TwinCritic(nn.Module):
    """``num_critics`` Q(s, a) MLPs evaluated as one vmapped network: ``-> [num_critics, B]``.

    Stacking the critics makes their matrix products batched ones, which run faster than
    separate networks on every backend.
    """

    model_config: DefaultModelConfig
    num_critics: int = 2

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        ensemble = nn.vmap(
            _Critic,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.num_critics,
        )
        return ensemble(self.model_config, name="critics")(obs, action)


class GaussianActor(nn.Module):
    """``__call__(obs) -> [B, 2 * action_dim]``: the mean and log std of SAC's squashed Gaussian."""

    action_dim: int
    model_config: DefaultModelConfig

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        mc = self.model_config
        x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
        x = _MLP(mc.fcnet_hiddens + mc.head_fcnet_hiddens, mc.fcnet_activation)(x)
        return nn.Dense(2 * self.action_dim, kernel_init=nn.initializers.orthogonal(0.01))(x)


def check_vector_obs(space: gym.Space, algo: str) -> None:
    """Refuses image observations for networks that only take vectors."""
    image, _ = _check_obs_space(space)
    if image:
        raise ConfigError(
            f"{algo}'s default networks take vector observations; got {space}. Flatten them with "
            "a gymnasium wrapper"
        )
