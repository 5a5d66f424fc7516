"""Q-networks for DQN and twin critics for SAC, built from a ``DefaultModelConfig``."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.networks.model_config import DefaultModelConfig
from rljax.networks.models import (
    _ACT,
    conv_net,
    default_image_head,
    fcnet_mlp,
    image_size,
    is_channels_first,
    is_image_space,
    output_dense,
    part_mlp,
)
from rljax.ops.value_learning import dueling_q
from rljax.utils.errors import ConfigError


def _check_obs_space(space: gym.Space) -> tuple[bool, bool]:
    if not isinstance(space, gym.spaces.Box):
        raise ConfigError(
            f"observation space {space} is not supported by the default model; rljax supports "
            "Box observations (vectors and images); flatten other spaces with a gymnasium wrapper "
            "(a JAX env: flatten inside its reset and step), or give a Flax module of your own "
            "(RLModuleSpec(module_class=...))"
        )
    image = is_image_space(space)
    return image, image and is_channels_first(space.shape)


class NoisyDense(nn.Module):
    """A dense layer with factorised Gaussian weight noise (Fortunato et al., 2018, "Noisy Nets").

    ``W = mu_W + sigma_W * (f(e_in) f(e_out)^T)``, ``b = mu_b + sigma_b * f(e_out)`` with
    ``f(x) = sign(x) sqrt(|x|)`` and fresh ``e`` from the ``"noise"`` RNG stream on every call
    with ``noise=True``; ``noise=False`` uses the means (greedy evaluation).
    """

    features: int
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, x: jax.Array, noise: bool) -> jax.Array:
        fan_in = x.shape[-1]
        bound = 1.0 / jnp.sqrt(fan_in)
        uniform = lambda key, shape: jax.random.uniform(key, shape, jnp.float32, -bound, bound)  # noqa: E731
        sigma = lambda key, shape: jnp.full(shape, self.sigma0 / jnp.sqrt(fan_in))  # noqa: E731
        mu_w = self.param("mu_kernel", uniform, (fan_in, self.features))
        mu_b = self.param("mu_bias", uniform, (self.features,))
        sigma_w = self.param("sigma_kernel", sigma, (fan_in, self.features))
        sigma_b = self.param("sigma_bias", sigma, (self.features,))
        if not noise:
            return x @ mu_w + mu_b
        k_in, k_out = jax.random.split(self.make_rng("noise"))
        f = lambda e: jnp.sign(e) * jnp.sqrt(jnp.abs(e))  # noqa: E731
        e_in = f(jax.random.normal(k_in, (fan_in,)))
        e_out = f(jax.random.normal(k_out, (self.features,)))
        # x (mu + sigma * e_in e_out^T) = x mu + ((x * e_in) sigma) * e_out: no [in, out] noise
        # matrix is formed.
        return x @ mu_w + ((x * e_in) @ sigma_w) * e_out + mu_b + sigma_b * e_out


class QNetwork(nn.Module):
    """``__call__(obs [B, *obs_shape], noise=False) -> [B, num_actions]`` Q-values, or
    ``[B, num_actions, num_atoms]`` logits of the return distribution when ``num_atoms > 1``.

    Encoder (MLP of ``fcnet_hiddens``, or conv ``conv_filters`` for images), head layers
    (``head_fcnet_hiddens``; for images when empty ``default_image_head``: 512 units, 128
    below 36x36), then one linear layer, or with
    ``dueling`` a value and an advantage stream combined as ``V + A - mean(A)`` (per atom for
    distributions). With ``noisy`` the head layers are ``NoisyDense``; ``noise=True`` samples
    their noise from the ``"noise"`` RNG stream.
    """

    num_actions: int
    model_config: DefaultModelConfig
    dueling: bool = True
    image: bool = False
    channels_first: bool = False
    num_atoms: int = 1
    noisy: bool = False
    sigma0: float = 0.5

    def _dense(self, features: int, name: str, noise: bool, scale: float):
        if self.noisy:
            layer = NoisyDense(features, self.sigma0, name=name)
            return lambda x: layer(x, noise)
        return output_dense(self.model_config, features, scale, name=name)

    def _head(self, x: jax.Array, hiddens, name: str, noise: bool) -> jax.Array:
        mc = self.model_config
        act = _ACT[mc.head_fcnet_activation]
        for i, h in enumerate(hiddens):
            x = self._dense(h, f"{name}_{i}", noise, float(np.sqrt(2)))(x)
            if mc.head_fcnet_use_layernorm:
                x = nn.LayerNorm(name=f"{name}_{i}_layernorm")(x)
            x = act(x)
        return x

    @nn.compact
    def __call__(self, obs: jax.Array, noise: bool = False) -> jax.Array:
        mc = self.model_config
        if self.image:
            x = conv_net(mc, self.channels_first)(obs)
            head = mc.head_fcnet_hiddens or default_image_head(
                *image_size(obs.shape[1:], self.channels_first)
            )
        else:
            x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
            x = fcnet_mlp(mc, mc.fcnet_hiddens)(x)
            head = mc.head_fcnet_hiddens
        atoms = self.num_atoms
        shape = (
            (x.shape[0], self.num_actions, atoms) if atoms > 1 else (x.shape[0], self.num_actions)
        )
        if not self.dueling:
            x = self._head(x, head, "q_head", noise)
            return self._dense(self.num_actions * atoms, "q", noise, 0.01)(x).reshape(shape)
        adv = self._head(x, head, "advantage_head", noise)
        val = self._head(x, head, "value_head", noise)
        adv = self._dense(self.num_actions * atoms, "a", noise, 0.01)(adv).reshape(shape)
        val = self._dense(atoms, "v", noise, 1.0)(val)
        if atoms == 1:
            return dueling_q(val[:, 0], adv)
        return val[:, None, :] + adv - jnp.mean(adv, axis=1, keepdims=True)


class CustomQNetwork(nn.Module):
    """A user's Flax module as DQN's Q-network: ``module(obs)`` (any observation structure)
    gives the Q-values [B, num_actions], or a tuple whose first entry they are (an
    actor-critic module's ``(action_dist_inputs, value)``: the value is not used)."""

    module: nn.Module
    num_actions: int

    @nn.compact
    def __call__(self, obs: Any, noise: bool = False) -> jax.Array:
        out = self.module(obs)
        q = out[0] if isinstance(out, tuple) else out
        if q.ndim != 2 or q.shape[-1] != self.num_actions:
            raise ConfigError(
                f"{type(self.module).__name__} gave Q-values of shape {q.shape}; DQN needs "
                f"[batch, {self.num_actions}] (one per action; its output, or the first entry "
                "of a tuple)"
            )
        return q


def build_q_network(
    observation_space: gym.Space,
    num_actions: int,
    model_config: DefaultModelConfig,
    dueling: bool,
    num_atoms: int = 1,
    noisy: bool = False,
    sigma0: float = 0.5,
) -> QNetwork:
    image, channels_first = _check_obs_space(observation_space)
    return QNetwork(
        num_actions, model_config, dueling, image, channels_first, num_atoms, noisy, sigma0
    )


class _Critic(nn.Module):
    model_config: DefaultModelConfig
    # 0: Q(s, a) of the action given; n: Q(s, .), a value for each of n discrete actions.
    num_actions: int = 0

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array | None = None) -> jax.Array:
        mc = self.model_config
        x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
        outputs = self.num_actions or 1
        if mc.fusionnet_hiddens is None:  # rljax's: one MLP over the observation (and action)
            if action is not None:
                x = jnp.concatenate([x, action], -1)
            x = fcnet_mlp(mc, (*mc.fcnet_hiddens, *mc.head_fcnet_hiddens))(x)
            q = output_dense(mc, outputs, 1.0)(x)
        else:
            # RLlib's multi-stream Q network: the observation's encoder, the action joined to
            # its output and the fusion MLP (discrete actions have neither), then the head.
            x = fcnet_mlp(mc, mc.fcnet_hiddens, name="obs_encoder")(x)
            if action is not None:
                x = jnp.concatenate([x, action], -1)
                x = part_mlp(mc, "fusionnet", mc.fusionnet_hiddens, name="fusion")(x)
            x = part_mlp(mc, "head_fcnet", mc.head_fcnet_hiddens, name="head")(x)
            q = output_dense(mc, outputs, 1.0, name="q")(x)
        return q if self.num_actions else q[:, 0]


class TwinCritic(nn.Module):
    """``num_critics`` Q MLPs evaluated as one vmapped network: ``(obs, action) -> [num_critics,
    B]``, or with ``num_actions`` (SAC-Discrete's critics, a value per action) ``obs ->
    [num_critics, B, num_actions]``.

    Stacking the critics makes their matrix products batched ones, which run faster than
    separate networks on every backend.
    """

    model_config: DefaultModelConfig
    num_critics: int = 2
    num_actions: int = 0

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array | None = None) -> jax.Array:
        ensemble = nn.vmap(
            _Critic,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.num_critics,
        )
        return ensemble(self.model_config, self.num_actions, name="critics")(obs, action)


def actor_mlp(obs: jax.Array, model_config: DefaultModelConfig, num_outputs: int) -> jax.Array:
    """An actor's layers, called inside a compact module's ``__call__`` (the layers are that
    module's): flattened ``obs`` [B, ...] -> MLP of ``fcnet_hiddens + head_fcnet_hiddens`` ->
    a linear layer of ``num_outputs`` with small initial weights -> [B, num_outputs].
    """
    mc = model_config
    x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
    x = fcnet_mlp(mc, (*mc.fcnet_hiddens, *mc.head_fcnet_hiddens))(x)
    return output_dense(mc, num_outputs, 0.01)(x)


class GaussianActor(nn.Module):
    """``__call__(obs) -> [B, 2 * action_dim]``: the mean and log std of SAC's squashed Gaussian."""

    action_dim: int
    model_config: DefaultModelConfig

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return actor_mlp(obs, self.model_config, 2 * self.action_dim)


class CategoricalActor(nn.Module):
    """``__call__(obs) -> [B, num_actions]``: the logits of SAC-Discrete's policy."""

    num_actions: int
    model_config: DefaultModelConfig

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return actor_mlp(obs, self.model_config, self.num_actions)


def check_vector_obs(space: gym.Space, algo: str) -> None:
    """Refuses image observations for networks that only take vectors."""
    image, _ = _check_obs_space(space)
    if image:
        raise ConfigError(
            f"{algo}'s default networks take vector observations; got {space}. Flatten them with "
            "a gymnasium wrapper (a JAX env: inside its reset and step), give a Flax module of "
            "your own (RLModuleSpec(module_class=...)), or use PPO, APPO or DQN, whose default "
            "networks have the CNN"
        )
