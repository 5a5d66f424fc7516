"""The default actor-critic networks (MLP and Nature CNN) and the user-module hook."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.utils.errors import ConfigError

_ACT: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": nn.tanh,
    "relu": nn.relu,
    "elu": nn.elu,
    "swish": nn.swish,
    "silu": nn.silu,
    "gelu": nn.gelu,
    "linear": lambda x: x,
}

NATURE_FILTERS = ((32, (8, 8), 4), (64, (4, 4), 2), (64, (3, 3), 1))


def is_image_space(space: gym.Space) -> bool:
    """A 3-D Box (``[H, W, C]`` or ``[C, H, W]``) is treated as an image."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3


def _ortho(scale: float) -> nn.initializers.Initializer:
    return nn.initializers.orthogonal(scale)


class _MLP(nn.Module):
    hiddens: Sequence[int]
    activation: str

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for h in self.hiddens:
            x = _ACT[self.activation](nn.Dense(h, kernel_init=_ortho(np.sqrt(2)))(x))
        return x


class _CNN(nn.Module):
    filters: Sequence[tuple[int, tuple[int, int], int]]
    activation: str
    channels_first: bool

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        if x.dtype == jnp.uint8:
            x = x.astype(jnp.float32) / 255.0
        if self.channels_first:  # EnvPool's Atari frames are [C, H, W]; Flax convs want NHWC.
            x = jnp.transpose(x, (0, 2, 3, 1))
        for out, kernel, stride in self.filters:
            x = nn.Conv(
                out, kernel, (stride, stride), padding="VALID", kernel_init=_ortho(np.sqrt(2))
            )(x)
            x = _ACT[self.activation](x)
        return x.reshape((x.shape[0], -1))


class ActorCritic(nn.Module):
    """Policy and value networks built from a ``DefaultModelConfig``.

    ``__call__(obs [B, *obs_shape]) -> (action_dist_inputs [B, num_outputs], value [B])``.
    """

    num_outputs: int
    model_config: DefaultModelConfig
    image: bool = False
    channels_first: bool = False
    free_log_std_dim: int = 0  # > 0: the last free_log_std_dim outputs are a learned constant.

    def _encoder(self, name: str) -> nn.Module:
        mc = self.model_config
        if self.image:
            return _CNN(
                mc.conv_filters or NATURE_FILTERS,
                mc.conv_activation,
                self.channels_first,
                name=name,
            )
        return _MLP(mc.fcnet_hiddens, mc.fcnet_activation, name=name)

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        mc = self.model_config
        x = obs if self.image else obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
        head_hiddens = mc.head_fcnet_hiddens or ((512,) if self.image else ())
        pi_feat = self._encoder("pi_encoder")(x)
        vf_feat = pi_feat if mc.vf_share_layers else self._encoder("vf_encoder")(x)
        pi_feat = _MLP(head_hiddens, mc.head_fcnet_activation, name="pi_head_mlp")(pi_feat)
        vf_feat = _MLP(head_hiddens, mc.head_fcnet_activation, name="vf_head_mlp")(vf_feat)
        n_net = self.num_outputs - self.free_log_std_dim
        out = nn.Dense(n_net, kernel_init=_ortho(0.01), name="pi")(pi_feat)
        if self.free_log_std_dim:
            log_std = self.param("log_std", nn.initializers.zeros, (self.free_log_std_dim,))
            out = jnp.concatenate([out, jnp.broadcast_to(log_std, out.shape)], axis=-1)
        value = nn.Dense(1, kernel_init=_ortho(1.0), name="vf")(vf_feat)[..., 0]
        return out, value


def build_module(
    observation_space: gym.Space,
    num_outputs: int,
    continuous: bool,
    model_config: DefaultModelConfig,
    rl_module_spec: RLModuleSpec | None = None,
) -> nn.Module:
    """Builds the Flax module that maps observations to ``(action_dist_inputs, value)``."""
    if rl_module_spec is not None and rl_module_spec.module_class is not None:
        try:
            return rl_module_spec.module_class(
                num_outputs=num_outputs, **rl_module_spec.model_config
            )
        except TypeError as e:
            raise ConfigError(
                f"could not build {rl_module_spec.module_class.__name__}(num_outputs={num_outputs}, "
                f"**{rl_module_spec.model_config}): {e}"
            ) from e
    if not isinstance(observation_space, gym.spaces.Box):
        raise ConfigError(
            f"observation space {observation_space} is not supported by the default model; "
            "rljax supports Box observations (vectors and images); flatten other spaces with a "
            "gymnasium wrapper or plug in your own module through .rl_module(rl_module_spec=...)"
        )
    image = is_image_space(observation_space)
    channels_first = image and observation_space.shape[0] < observation_space.shape[-1]
    free = num_outputs // 2 if (continuous and model_config.free_log_std) else 0
    return ActorCritic(
        num_outputs=num_outputs,
        model_config=model_config,
        image=image,
        channels_first=channels_first,
        free_log_std_dim=free,
    )
