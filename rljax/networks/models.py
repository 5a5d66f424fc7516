"""The default actor-critic networks (an MLP, or a conv stack for images: the Nature CNN, and
MinAtar's network below 36x36) and the user-module hook."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from flax.linen.dtypes import promote_dtype

from rljax.networks.model_config import DefaultModelConfig, filters_list
from rljax.utils.errors import ConfigError

if TYPE_CHECKING:  # the user's module spec, read by duck type: core sits above networks
    from rljax.core.rl_module.spec import RLModuleSpec

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
# The Nature CNN's three layers leave an output only on images of at least 36x36. Smaller
# images (MinAtar's 10x10 grids) get MinAtar's network instead (Young & Tian, 2019): one 3x3
# conv of 16 channels, stride 1. (RLlib's default for 10x10, [[16, [5, 5], 2], [32, [5, 5], 2]],
# relies on "same" padding; rljax's convs are VALID-padded, under which it leaves nothing.)
NATURE_MIN_SIZE = 36
SMALL_IMAGE_FILTERS = ((16, (3, 3), 1),)

Filters = Sequence[tuple[int, tuple[int, int], int]]


def default_conv_filters(height: int, width: int) -> Filters:
    """The conv stack built when ``conv_filters`` is None, for images of ``height x width``:
    the Nature CNN's (``NATURE_FILTERS``), or ``SMALL_IMAGE_FILTERS`` below 36x36."""
    return NATURE_FILTERS if min(height, width) >= NATURE_MIN_SIZE else SMALL_IMAGE_FILTERS


def default_image_head(height: int, width: int) -> tuple[int, ...]:
    """The head layers on a conv stack's output where ``head_fcnet_hiddens`` is empty: the
    Nature CNN's 512 units, or MinAtar's 128 below 36x36 (its 8x8x16 features are 1,024)."""
    return (512,) if min(height, width) >= NATURE_MIN_SIZE else (128,)


def is_channels_first(shape: Sequence[int]) -> bool:
    """Whether an image observation of ``shape`` is ``[C, H, W]`` (EnvPool's Atari frames):
    its first axis is shorter than its last."""
    return shape[0] < shape[-1]


def image_size(shape: Sequence[int], channels_first: bool) -> tuple[int, int]:
    """``(height, width)`` of one image observation's ``shape`` (``[C, H, W]`` or ``[H, W, C]``)."""
    return (shape[1], shape[2]) if channels_first else (shape[0], shape[1])


def conv_output_size(
    height: int, width: int, filters: Filters, default: bool = False
) -> tuple[int, int]:
    """The ``(height, width)`` a VALID-padded conv stack leaves; ``ConfigError`` where a kernel
    does not fit the previous layer's output (it would leave no features to read).
    ``default``: the filters are the defaults (``conv_filters`` was None), said so in the error."""
    h, w = height, width
    for i, (_, (kh, kw), stride) in enumerate(filters):
        if kh > h or kw > w:
            shown = filters_list(filters)
            setting = (
                f"the default conv filters {shown} (model_config.conv_filters=None)"
                if default
                else f"model_config.conv_filters={shown}"
            )
            raise ConfigError(
                f"{setting}: layer {i}'s {kh}x{kw} kernel does not fit its {h}x{w} input "
                f"(images of {height}x{width}, VALID padding), so the conv stack leaves no "
                "features; set conv_filters with smaller kernels or strides"
            )
        h, w = (h - kh) // stride + 1, (w - kw) // stride + 1
    return h, w


def is_image_space(space: gym.Space) -> bool:
    """A 3-D Box (``[H, W, C]`` or ``[C, H, W]``) is treated as an image."""
    return isinstance(space, gym.spaces.Box) and len(space.shape) == 3


def _ortho(scale: float) -> nn.initializers.Initializer:
    return nn.initializers.orthogonal(scale)


class _MLP(nn.Module):
    """Dense layers, each followed by a LayerNorm (``layernorm``) and the activation.
    ``kernel_init`` / ``bias_init`` None: orthogonal with scale sqrt(2), zeros."""

    hiddens: Sequence[int]
    activation: str
    kernel_init: Any = None
    bias_init: Any = None
    layernorm: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kernel = self.kernel_init or _ortho(np.sqrt(2))
        bias = self.bias_init or nn.initializers.zeros
        for i, h in enumerate(self.hiddens):
            x = nn.Dense(h, kernel_init=kernel, bias_init=bias, name=f"Dense_{i}")(x)
            if self.layernorm:
                x = nn.LayerNorm(name=f"LayerNorm_{i}")(x)
            x = _ACT[self.activation](x)
        return x


def part_mlp(mc: DefaultModelConfig, part: str, hiddens: Sequence[int], **kwargs: Any) -> _MLP:
    """Dense layers of widths ``hiddens`` with the settings of ``part``: the encoder's
    (``"fcnet"``: ``fcnet_activation``, its initializers and layer norm) or a head's
    (``"head_fcnet"``)."""
    return _MLP(
        hiddens,
        getattr(mc, f"{part}_activation"),
        mc.initializer(part, "kernel"),
        mc.initializer(part, "bias"),
        getattr(mc, f"{part}_use_layernorm", False),
        **kwargs,
    )


def fcnet_mlp(mc: DefaultModelConfig, hiddens: Sequence[int], **kwargs: Any) -> _MLP:
    """The encoder's MLP (``fcnet_*`` settings) of widths ``hiddens``."""
    return part_mlp(mc, "fcnet", hiddens, **kwargs)


def output_dense(
    mc: DefaultModelConfig, features: int, default_scale: float, **kwargs: Any
) -> nn.Dense:
    """An output layer: the head's initializers where set, else orthogonal(``default_scale``)
    and zero biases."""
    return nn.Dense(
        features,
        kernel_init=mc.initializer("head_fcnet", "kernel") or _ortho(default_scale),
        bias_init=mc.initializer("head_fcnet", "bias") or nn.initializers.zeros,
        **kwargs,
    )


def patch_conv(x: jax.Array, kernel: jax.Array, stride: int) -> jax.Array:
    """A VALID-padded conv of NHWC ``x`` with an HWIO ``kernel`` as one matrix product: the
    ``kh x kw`` shifted strided slices of ``x`` side by side (``[B, H', W', kh * kw * C]``)
    times the kernel flattened in the same (row, column, channel) order.

    The same sums as ``lax.conv_general_dilated`` (to float rounding). XLA's CPU convolutions
    are slow at the small channel counts of RL's networks, and several times slower inside a
    ``while`` loop: a gradient step of MinAtar's 3x3 conv on 1,024 10x10x4 grids took 3.7 ms
    this way against 6.4 ms, the Nature CNN's on 128 84x84x4 frames 118 ms against 140 ms
    (``benchmarks/cnn_update.py --parts conv``), and a minibatch step of PPO's scanned update
    of RLlib's frame-stacking CNN 58 ms against 922 ms (``--parts update --xla-form``).
    """
    kh, kw, c, out = kernel.shape
    h = (x.shape[1] - kh) // stride + 1
    w = (x.shape[2] - kw) // stride + 1
    cols = [
        x[:, i : i + stride * (h - 1) + 1 : stride, j : j + stride * (w - 1) + 1 : stride, :]
        for i in range(kh)
        for j in range(kw)
    ]
    return jnp.concatenate(cols, axis=-1) @ kernel.reshape(kh * kw * c, out)


def xla_conv(x: jax.Array, kernel: jax.Array, stride: int) -> jax.Array:
    """XLA's VALID-padded convolution of NHWC ``x`` with an HWIO ``kernel``."""
    dims = ("NHWC", "HWIO", "NHWC")
    return jax.lax.conv_general_dilated(
        x, kernel, (stride, stride), "VALID", dimension_numbers=dims
    )


# How ``ValidConv`` computes a convolution on a CPU device: "patch" (``patch_conv``) or
# "xla" (``xla_conv``; ``benchmarks/cnn_update.py`` sets it to time XLA's form). Read when a
# program is traced.
CPU_CONV_FORM = "patch"


class ValidConv(nn.Module):
    """A VALID-padded 2D convolution of NHWC inputs with ``nn.Conv``'s parameters (``kernel``
    HWIO, ``bias``, the same initialisation and dtype promotion): where the program runs on a
    CPU device computed by ``patch_conv``, elsewhere by XLA's convolution
    (``lax.platform_dependent``: chosen per device the program is lowered for, not by JAX's
    default backend)."""

    features: int
    kernel_size: tuple[int, int]
    stride: int
    kernel_init: Any
    bias_init: Any

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        shape = (*self.kernel_size, x.shape[-1], self.features)
        kernel = self.param("kernel", self.kernel_init, shape, jnp.float32)
        bias = self.param("bias", self.bias_init, (self.features,), jnp.float32)
        x, kernel, bias = promote_dtype(x, kernel, bias)
        stride = self.stride
        cpu = patch_conv if CPU_CONV_FORM == "patch" else xla_conv
        y = jax.lax.platform_dependent(
            x,
            kernel,
            cpu=lambda x, k: cpu(x, k, stride),
            default=lambda x, k: xla_conv(x, k, stride),
        )
        return y + bias


class _CNN(nn.Module):
    # None: ``default_conv_filters`` of the image's size.
    filters: Filters | None
    activation: str
    channels_first: bool
    kernel_init: Any = None
    bias_init: Any = None

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        if x.dtype == jnp.uint8:
            x = x.astype(jnp.float32) / 255.0
        if self.channels_first:  # EnvPool's Atari frames are [C, H, W]; Flax convs want NHWC.
            x = jnp.transpose(x, (0, 2, 3, 1))
        filters = self.filters or default_conv_filters(x.shape[1], x.shape[2])
        conv_output_size(x.shape[1], x.shape[2], filters, default=not self.filters)
        for i, (out, kernel, stride) in enumerate(filters):
            x = ValidConv(
                out,
                (kernel[0], kernel[1]),
                stride,
                kernel_init=self.kernel_init or _ortho(np.sqrt(2)),
                bias_init=self.bias_init or nn.initializers.zeros,
                name=f"Conv_{i}",
            )(x)
            x = _ACT[self.activation](x)
        return x.reshape((x.shape[0], -1))


def conv_net(
    mc: DefaultModelConfig, channels_first: bool, default: Any = None, **kwargs: Any
) -> _CNN:
    """The conv encoder (``conv_*`` settings; ``default`` filters where ``conv_filters`` is
    None, else ``default_conv_filters`` of the image's size)."""
    return _CNN(
        mc.conv_filters or default,
        mc.conv_activation,
        channels_first,
        mc.initializer("conv", "kernel"),
        mc.initializer("conv", "bias"),
        **kwargs,
    )


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
            return conv_net(mc, self.channels_first, name=name)
        return fcnet_mlp(mc, mc.fcnet_hiddens, name=name)

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        mc = self.model_config
        x = obs if self.image else obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
        head_hiddens = mc.head_fcnet_hiddens or (
            default_image_head(*image_size(obs.shape[1:], self.channels_first))
            if self.image
            else ()
        )
        pi_feat = self._encoder("pi_encoder")(x)
        vf_feat = pi_feat if mc.vf_share_layers else self._encoder("vf_encoder")(x)
        return _heads(self, pi_feat, vf_feat, head_hiddens, self.num_outputs, self.free_log_std_dim)


def _heads(
    module: nn.Module,
    pi_feat: jax.Array,
    vf_feat: jax.Array,
    hiddens: Sequence[int],
    num_outputs: int,
    free_log_std_dim: int,
) -> tuple[jax.Array, jax.Array]:
    """The policy and value heads of ``module`` (called inside its compact ``__call__``):
    ``head_fcnet_hiddens`` MLPs, then ``action_dist_inputs`` (the last ``free_log_std_dim``
    a learned constant) and the value."""
    mc = module.model_config
    pi_feat = part_mlp(mc, "head_fcnet", hiddens, name="pi_head_mlp")(pi_feat)
    vf_feat = part_mlp(mc, "head_fcnet", hiddens, name="vf_head_mlp")(vf_feat)
    out = output_dense(mc, num_outputs - free_log_std_dim, 0.01, name="pi")(pi_feat)
    if free_log_std_dim:
        log_std = module.param("log_std", nn.initializers.zeros, (free_log_std_dim,))
        out = jnp.concatenate([out, jnp.broadcast_to(log_std, out.shape)], axis=-1)
    value = output_dense(mc, 1, 1.0, name="vf")(vf_feat)[..., 0]
    return out, value


# A forbidden action's logit: its probability is exactly 0 in float32, and its log-probability
# stays finite (entropy and KL terms multiply it by that 0).
MASKED_LOGIT = -1e9


def space_leaves(space: gym.Space) -> list[gym.Space]:
    """A (nested) Dict / Tuple space's leaf spaces, in the order ``jax.tree.leaves`` gives
    the leaves of one of its observations (Dict keys sorted)."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for k in sorted(space.spaces) for leaf in space_leaves(space.spaces[k])]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for s in space.spaces for leaf in space_leaves(s)]
    return [space]


def _leaf_kind(space: gym.Space) -> tuple[Any, ...]:
    """How the default model reads one leaf: ("image", channels_first), ("box",),
    ("onehot", sizes) for Discrete / MultiDiscrete, ("binary",); else ConfigError."""
    if isinstance(space, gym.spaces.Box):
        if is_image_space(space):
            return ("image", is_channels_first(space.shape))
        return ("box",)
    if isinstance(space, gym.spaces.Discrete):
        return ("onehot", (int(space.n),), (int(space.start),))
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return ("onehot", tuple(int(n) for n in space.nvec), tuple(int(s) for s in space.start))
    if isinstance(space, gym.spaces.MultiBinary):
        return ("binary",)
    raise ConfigError(
        f"observation space {space} is not supported by the default model; it reads Box "
        "(vectors of any rank, images), Discrete, MultiDiscrete and MultiBinary leaves of "
        "Dict and Tuple spaces; plug in your own module through .rl_module(rl_module_spec=...)"
    )


class _LeafFeatures(nn.Module):
    """RLlib's default encoding of a Dict / Tuple observation: each leaf read on its own
    (one-hot for discrete leaves, the default conv stack for images, flattened otherwise), then
    concatenated, for the MLP encoders."""

    kinds: tuple[tuple[Any, ...], ...]
    model_config: DefaultModelConfig

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        leaves = jax.tree.leaves(obs)
        feats = []
        for i, (x, kind) in enumerate(zip(leaves, self.kinds, strict=True)):
            b = x.shape[0]
            if kind[0] == "image":
                feats.append(conv_net(self.model_config, kind[1], name=f"cnn_{i}")(x))
            elif kind[0] == "onehot":
                x = x.reshape((b, len(kind[1])))
                feats += [
                    jax.nn.one_hot(x[:, j] - start, n, dtype=jnp.float32)
                    for j, (n, start) in enumerate(zip(kind[1], kind[2], strict=True))
                ]
            else:
                feats.append(x.reshape((b, -1)).astype(jnp.float32))
        return jnp.concatenate(feats, axis=-1)


class StructuredActorCritic(nn.Module):
    """``ActorCritic`` on a Dict / Tuple observation: ``_LeafFeatures``, then the MLPs."""

    kinds: tuple[tuple[Any, ...], ...]
    inner: ActorCritic

    @nn.compact
    def __call__(self, obs: Any) -> tuple[jax.Array, jax.Array]:
        x = _LeafFeatures(self.kinds, self.inner.model_config, name="leaves")(obs)
        return self.inner(x)


class MaskedActorCritic(nn.Module):
    """RLlib's action-masking module: the network reads ``obs["observations"]``, and the
    logits of actions where ``obs[mask_key]`` (``"action_mask"``) is 0 become
    ``MASKED_LOGIT``."""

    inner: nn.Module
    mask_key: str = "action_mask"

    @nn.compact
    def __call__(self, obs: Any) -> tuple[jax.Array, jax.Array]:
        logits, value = self.inner(obs["observations"])
        mask = obs[self.mask_key].reshape(logits.shape)
        return jnp.where(mask > 0, logits, MASKED_LOGIT), value


def is_action_mask_space(space: gym.Space, mask_key: str = "action_mask") -> bool:
    """RLlib's action-masking observation: a Dict with ``mask_key`` (RLlib's
    ``action_mask_key``, ``"action_mask"``) and ``observations``."""
    return isinstance(space, gym.spaces.Dict) and set(space.spaces) == {mask_key, "observations"}


class _ResetLSTM(nn.Module):
    """One LSTM step that starts from zeros where ``first`` (an episode's first step)."""

    features: int
    kernel_init: Any = None
    bias_init: Any = None

    @nn.compact
    def __call__(self, carry: Any, inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, jax.Array]:
        x, first = inputs
        carry = jax.tree.map(lambda c: jnp.where(first[:, None], jnp.zeros_like(c), c), carry)
        inits: dict[str, Any] = {}
        if self.kernel_init is not None:  # lstm_kernel_initializer: input and recurrent kernels
            inits.update(kernel_init=self.kernel_init, recurrent_kernel_init=self.kernel_init)
        if self.bias_init is not None:
            inits["bias_init"] = self.bias_init
        return nn.OptimizedLSTMCell(self.features, name="cell", **inits)(carry, x)


def scanned_lstm(
    features: int, kernel_init: Any = None, bias_init: Any = None, name: str = "lstm"
) -> nn.Module:
    """An LSTM of ``features`` units along the time axis that restarts from zeros where an
    episode starts: ``lstm((c, h), (x [B, L, F], first [B, L])) -> ((c, h), y [B, L,
    features])`` (built inside a module's ``@nn.compact`` method; ``kernel_init`` /
    ``bias_init`` None: Flax's defaults)."""
    scan = nn.scan(
        _ResetLSTM,
        variable_broadcast="params",
        split_rngs={"params": False},
        in_axes=1,
        out_axes=1,
    )
    return scan(features, kernel_init, bias_init, name=name)


class RecurrentActorCritic(nn.Module):
    """RLlib's default LSTM model (``use_lstm``): the encoder (an MLP of ``fcnet_hiddens``, or
    the leaf encoders of a Dict / Tuple observation) on each step, optionally with the previous
    action (one-hot for discrete actions) and reward, an LSTM of ``lstm_cell_size`` shared by
    the policy and value heads, then the heads.

    ``__call__(RecurrentInput with obs [B, L, ...], state_in (c, h) [B, cell], first [B, L])
    -> (action_dist_inputs [B, L, D], value [B, L], state_out)``: the LSTM runs along L,
    resetting where ``first``. The act step passes L = 1.
    """

    num_outputs: int
    model_config: DefaultModelConfig
    kinds: tuple[tuple[Any, ...], ...] | None = None  # Dict / Tuple leaves; None: a Box
    num_actions: int = 0  # > 0: the previous action is a discrete index, read one-hot
    free_log_std_dim: int = 0

    def initial_state(self, n: int) -> tuple[jax.Array, jax.Array]:
        size = self.model_config.lstm_cell_size
        return (jnp.zeros((n, size), jnp.float32), jnp.zeros((n, size), jnp.float32))

    @nn.compact
    def __call__(self, rin: Any) -> tuple[jax.Array, jax.Array, Any]:
        mc = self.model_config
        b, length = rin.first.shape
        flat = jax.tree.map(lambda x: x.reshape((b * length, *x.shape[2:])), rin.obs)
        if self.kinds is not None:
            x = _LeafFeatures(self.kinds, mc, name="leaves")(flat)
        else:
            x = flat.reshape((b * length, -1)).astype(jnp.float32)
        x = fcnet_mlp(mc, mc.fcnet_hiddens, name="encoder")(x)
        x = x.reshape((b, length, -1))
        extra = []
        if rin.prev_action is not None:
            a = rin.prev_action
            if self.num_actions and a.ndim == 2:  # a Discrete action's index
                a = jax.nn.one_hot(a, self.num_actions, dtype=jnp.float32)
            extra.append(a.reshape((b, length, -1)).astype(jnp.float32))
        if rin.prev_reward is not None:
            extra.append(rin.prev_reward.reshape((b, length, 1)).astype(jnp.float32))
        if extra:
            x = jnp.concatenate([x, *extra], axis=-1)
        lstm = scanned_lstm(
            mc.lstm_cell_size, mc.initializer("lstm", "kernel"), mc.initializer("lstm", "bias")
        )
        state_out, y = lstm(rin.state_in, (x, rin.first))
        y = y.reshape((b * length, -1))
        out, value = _heads(
            self, y, y, mc.head_fcnet_hiddens, self.num_outputs, self.free_log_std_dim
        )
        return out.reshape((b, length, -1)), value.reshape((b, length)), state_out


class MaskedRecurrentActorCritic(nn.Module):
    """``RecurrentActorCritic`` on ``obs["observations"]`` with RLlib's action masking: the
    logits of actions where ``obs[mask_key]`` is 0 become ``MASKED_LOGIT`` at every step."""

    inner: RecurrentActorCritic
    mask_key: str = "action_mask"

    def initial_state(self, n: int) -> tuple[jax.Array, jax.Array]:
        return self.inner.initial_state(n)

    @nn.compact
    def __call__(self, rin: Any) -> tuple[jax.Array, jax.Array, Any]:
        out, value, state = self.inner(rin._replace(obs=rin.obs["observations"]))
        mask = rin.obs[self.mask_key].reshape(out.shape)
        return jnp.where(mask > 0, out, MASKED_LOGIT), value, state


def build_module(
    observation_space: gym.Space,
    num_outputs: int,
    continuous: bool,
    model_config: DefaultModelConfig,
    rl_module_spec: RLModuleSpec | None = None,
    action_mask_key: str = "action_mask",
) -> nn.Module:
    """Builds the Flax module that maps observations to ``(action_dist_inputs, value)``.

    A Dict observation of ``action_mask_key`` and ``observations`` gets the action-masking
    network (RLlib's convention and its ``action_mask_key`` setting)."""
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
    masked = isinstance(observation_space, gym.spaces.Dict) and is_action_mask_space(
        observation_space, action_mask_key
    )
    if masked:
        assert isinstance(observation_space, gym.spaces.Dict)
        mask = observation_space[action_mask_key]
        if continuous or mask.shape != (num_outputs,):
            raise ConfigError(
                f"the observation's action_mask {mask} must have one entry per action of a "
                f"Discrete action space ({num_outputs} outputs, continuous={continuous})"
            )
    if model_config.use_lstm:
        if masked:
            assert isinstance(observation_space, gym.spaces.Dict)
            inner = build_module(
                observation_space["observations"], num_outputs, False, model_config
            )
            return MaskedRecurrentActorCritic(cast(RecurrentActorCritic, inner), action_mask_key)
        kinds = None
        if not isinstance(observation_space, gym.spaces.Box) or is_image_space(observation_space):
            kinds = tuple(_leaf_kind(leaf) for leaf in space_leaves(observation_space))
        free = num_outputs // 2 if (continuous and model_config.free_log_std) else 0
        return RecurrentActorCritic(
            num_outputs=num_outputs,
            model_config=model_config,
            kinds=kinds,
            num_actions=0 if continuous else num_outputs,
            free_log_std_dim=free,
        )
    if masked:
        assert isinstance(observation_space, gym.spaces.Dict)
        inner = build_module(observation_space["observations"], num_outputs, False, model_config)
        return MaskedActorCritic(inner, action_mask_key)
    if not isinstance(observation_space, gym.spaces.Box):
        kinds = tuple(_leaf_kind(leaf) for leaf in space_leaves(observation_space))
        free = num_outputs // 2 if (continuous and model_config.free_log_std) else 0
        inner = ActorCritic(
            num_outputs=num_outputs, model_config=model_config, free_log_std_dim=free
        )
        return StructuredActorCritic(kinds, inner)
    image = is_image_space(observation_space)
    channels_first = image and is_channels_first(observation_space.shape)
    free = num_outputs // 2 if (continuous and model_config.free_log_std) else 0
    return ActorCritic(
        num_outputs=num_outputs,
        model_config=model_config,
        image=image,
        channels_first=channels_first,
        free_log_std_dim=free,
    )
