"""RLlib's ``DefaultModelConfig``: the settings of the built-in policy and value networks (at
RLlib's path ``rljax.core.rl_module.default_model_config`` too)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rljax.utils import once
from rljax.utils.checks import Bool, Check, Choice, Int, Number, Widths, describe, is_int, refuse
from rljax.utils.errors import ConfigError, closest
from rljax.utils.search_space import Domain

_ACTIVATIONS = ("tanh", "relu", "elu", "swish", "silu", "gelu", "linear")
_CONV_ALLOWED = (
    "None or a list of [out_channels, kernel, stride] (ints >= 1; kernel an int or [kh, kw]), "
    "e.g. [[32, [8, 8], 4], [64, [4, 4], 2]]"
)


def _conv_filters(name: str, value: Any) -> tuple[tuple[int, tuple[int, int], int], ...] | None:
    """None, or conv layers ``[out_channels, kernel, stride]`` as tuples of ints."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        refuse(name, value, _CONV_ALLOWED)
    filters = []
    for i, f in enumerate(value):
        kernel = f[1] if isinstance(f, (list, tuple)) and len(f) == 3 else None
        if is_int(kernel):
            kernel = (kernel, kernel)
        if not (
            isinstance(kernel, (list, tuple))
            and len(kernel) == 2
            and all(is_int(x) and x >= 1 for x in (f[0], *kernel, f[2]))
        ):
            refuse(name, value, f"{_CONV_ALLOWED} (entry {i} is {describe(f)})")
        filters.append((int(f[0]), (int(kernel[0]), int(kernel[1])), int(f[2])))
    return tuple(filters)


def _activation(name: str, value: Any) -> str:
    """An activation's name; None is RLlib's "linear" (no activation)."""
    if value is None:
        return "linear"
    return Choice(_ACTIVATIONS)(name, value) or "linear"


def _initializer(name: str, value: Any) -> str | None:
    """An initializer's name by RLlib's (torch's) names, or a torch ``nn.init`` function, in
    the table's form (``rljax.networks.initializers``); None: rljax's default."""
    from rljax.networks.initializers import canonical_name

    return canonical_name(name, value)


# The initializer settings: (initializer field, its kwargs field), per part of the network.
INITIALIZER_FIELDS = tuple(
    (f"{part}_{kind}_initializer", f"{part}_{kind}_initializer_kwargs")
    for part in ("fcnet", "conv", "head_fcnet", "lstm", "fusionnet")
    for kind in ("kernel", "bias")
)


def _kwargs_form(name: str, value: Any) -> tuple[tuple[str, Any], ...] | None:
    """An initializer's kwargs as sorted (key, value) pairs (hashable); checked with its
    initializer in ``DefaultModelConfig.__post_init__``."""
    if value is None:
        return None
    if isinstance(value, tuple) and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        value = dict(value)
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"{name}={value!r}: use a dict of the initializer's arguments")
    return tuple(sorted(value.items()))


# RLlib's old-stack model keys that the new stack's DefaultModelConfig renamed.
OLD_MODEL_KEYS = {
    "post_fcnet_hiddens": "head_fcnet_hiddens",
    "post_fcnet_activation": "head_fcnet_activation",
    "post_fcnet_weights_initializer": "head_fcnet_kernel_initializer",
    "post_fcnet_weights_initializer_config": "head_fcnet_kernel_initializer_kwargs",
    "post_fcnet_bias_initializer": "head_fcnet_bias_initializer",
    "post_fcnet_bias_initializer_config": "head_fcnet_bias_initializer_kwargs",
    "fcnet_weights_initializer": "fcnet_kernel_initializer",
    "fcnet_weights_initializer_config": "fcnet_kernel_initializer_kwargs",
    "fcnet_bias_initializer_config": "fcnet_bias_initializer_kwargs",
}
# Keys RLlib's old stack put in model dicts for its own bookkeeping: nothing to configure.
IGNORED_MODEL_KEYS = ("uses_new_env_runners",)
logger = logging.getLogger("rljax")

# What each field may be; __post_init__ checks every field against it.
_CHECKS: dict[str, Check] = {
    "fcnet_hiddens": Widths(),
    "fcnet_activation": _activation,
    "conv_filters": _conv_filters,
    "conv_activation": _activation,
    "head_fcnet_hiddens": Widths(),
    "head_fcnet_activation": _activation,
    "vf_share_layers": Bool(),
    "free_log_std": Bool(),
    "log_std_clip_param": Number(0, low_open=True),
    "use_lstm": Bool(),
    "lstm_cell_size": Int(1),
    "max_seq_len": Int(1),
    "lstm_use_prev_action": Bool(),
    "lstm_use_prev_reward": Bool(),
    "fcnet_use_layernorm": Bool(),
    "fusionnet_hiddens": lambda name, value: None if value is None else Widths()(name, value),
    "fusionnet_activation": _activation,
    "head_fcnet_use_layernorm": Bool(),
    **{init: _initializer for init, _ in INITIALIZER_FIELDS},
    **{kwargs: _kwargs_form for _, kwargs in INITIALIZER_FIELDS},
}


def filters_list(filters: Any) -> list[list[Any]]:
    """``conv_filters`` as a config file writes them: ``[[out_channels, [kh, kw], stride], ...]``."""
    return [[o, list(k), s] for o, k, s in filters]


@dataclasses.dataclass(frozen=True)
class DefaultModelConfig:
    """Settings of the default networks, with RLlib's names and defaults.

    Attributes:
      fcnet_hiddens: Widths of the dense layers of the encoder for vector observations.
      fcnet_activation: Activation of those layers.
      conv_filters: ``[[out_channels, [kh, kw], stride], ...]`` for image observations (VALID
        padding); ``None`` picks the Nature DQN stack for images of at least 36x36 (84x84
        Atari frames) and MinAtar's one 3x3 conv of 16 channels below (10x10 grids). A stack
        whose kernels do not fit the image is refused when the network is built.
      conv_activation: Activation of the conv layers.
      head_fcnet_hiddens: Dense layers after the encoder in each head. For image observations an
        empty list means one 512-unit layer (the Nature CNN's), 128 units below 36x36
        (MinAtar's).
      head_fcnet_activation: Activation of the head layers.
      vf_share_layers: Whether the value function shares the encoder with the policy.
      free_log_std: For continuous actions, learn a state-independent log std.
      log_std_clip_param: The log std is clipped to ``[-log_std_clip_param, log_std_clip_param]``.
      use_lstm: Put an LSTM between the encoder and the heads (PPO): the policy keeps a state
        per sub-env, reset at every episode start, and trains on sequences.
      lstm_cell_size: The LSTM's cell (and hidden state) size.
      max_seq_len: The length of the sequences the learner trains on.
      lstm_use_prev_action: The LSTM also reads the previous action (one-hot if discrete).
      lstm_use_prev_reward: The LSTM also reads the previous reward.
      fusionnet_hiddens, fusionnet_activation, fusionnet_*_initializer: SAC's and TD3's Q
        networks as RLlib's multi-stream ones: the observation's encoder (``fcnet_*``), the
        action joined to its output, these layers, then the head. None (the default): one MLP
        of ``fcnet_hiddens + head_fcnet_hiddens`` over the observation and action together.
      fcnet_use_layernorm, head_fcnet_use_layernorm: A LayerNorm after each dense layer of the
        encoder / heads, before its activation (RLlib's order).
      fcnet_kernel_initializer, fcnet_bias_initializer, conv_*, head_fcnet_*, lstm_*: The
        layers' initializers by RLlib's (torch's) names, e.g. ``"xavier_uniform_"`` or
        ``"orthogonal_"``, or torch ``nn.init`` functions; each with ``*_kwargs`` (e.g.
        ``{"gain": 0.01}``); see ``rljax.networks.initializers``. The head's apply to its
        output layers too. None: rljax's defaults (orthogonal, scale sqrt(2) in hidden layers,
        0.01 for the policy's outputs and 1 for the value's; zero biases).
    """

    # Inputs may be lists (RLlib's scripts pass them); __post_init__ stores tuples.
    fcnet_hiddens: Sequence[int] = (256, 256)
    fcnet_activation: str = "tanh"
    conv_filters: tuple[tuple[int, tuple[int, int], int], ...] | None = None
    conv_activation: str = "relu"
    head_fcnet_hiddens: Sequence[int] = ()
    head_fcnet_activation: str = "relu"
    vf_share_layers: bool = True
    free_log_std: bool = False
    log_std_clip_param: float = 20.0
    use_lstm: bool = False
    lstm_cell_size: int = 256
    max_seq_len: int = 20
    lstm_use_prev_action: bool = False
    lstm_use_prev_reward: bool = False
    fcnet_use_layernorm: bool = False
    head_fcnet_use_layernorm: bool = False
    fcnet_kernel_initializer: str | None = None
    fcnet_kernel_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = None
    fcnet_bias_initializer: str | None = None
    fcnet_bias_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = None
    conv_kernel_initializer: str | None = None
    conv_kernel_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = None
    conv_bias_initializer: str | None = None
    conv_bias_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = None
    head_fcnet_kernel_initializer: str | None = None
    head_fcnet_kernel_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = (
        None
    )
    head_fcnet_bias_initializer: str | None = None
    head_fcnet_bias_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = (
        None
    )
    lstm_kernel_initializer: str | None = None
    lstm_kernel_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = None
    lstm_bias_initializer: str | None = None
    lstm_bias_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = None
    fusionnet_hiddens: Sequence[int] | None = None
    fusionnet_activation: str = "relu"
    fusionnet_kernel_initializer: str | None = None
    fusionnet_kernel_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = (
        None
    )
    fusionnet_bias_initializer: str | None = None
    fusionnet_bias_initializer_kwargs: Mapping[str, Any] | tuple[tuple[str, Any], ...] | None = None

    def __post_init__(self) -> None:
        # Each field checked and normalised: lists (from YAML/JSON or user code) become
        # hashable tuples, numpy ints Python ints; a wrong type is refused, never reinterpreted.
        for f in dataclasses.fields(self):
            given = getattr(self, f.name)
            if isinstance(given, Domain):  # a tune search space
                raise ConfigError(
                    f"model_config.{f.name}={given!r}: a search space inside model_config is "
                    "not taken; search the whole model_config instead (model_config="
                    f"tune.grid_search([{{..., {f.name!r}: value1}}, {{..., {f.name!r}: value2}}]))"
                )
            value = _CHECKS[f.name](f"model_config.{f.name}", given)
            object.__setattr__(self, f.name, value)
        from rljax.networks.initializers import check_kwargs

        for init, kwargs in INITIALIZER_FIELDS:
            given = getattr(self, kwargs)
            check_kwargs(
                f"model_config.{kwargs}", getattr(self, init), dict(given) if given else None
            )

    def initializer(self, part: str, kind: str) -> Any:
        """The Flax initializer set for ``part``'s (``"fcnet"``, ``"conv"``, ``"head_fcnet"``,
        ``"lstm"``) ``kind`` (``"kernel"``, ``"bias"``) weights, or None (rljax's default)."""
        from rljax.networks.initializers import make_initializer

        name = getattr(self, f"{part}_{kind}_initializer")
        if name is None:
            return None
        kwargs = getattr(self, f"{part}_{kind}_initializer_kwargs")
        return make_initializer(name, dict(kwargs) if kwargs else None)

    @classmethod
    def from_any(cls, value: DefaultModelConfig | dict[str, Any] | None) -> DefaultModelConfig:
        """Builds a config from an instance, a dict of RLlib model keys, or ``None``."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            refuse("model_config", value, "None, a dict of model settings or DefaultModelConfig")
        fields = {f.name for f in dataclasses.fields(cls)}
        value = dict(value)
        for old, new in OLD_MODEL_KEYS.items():
            if old in value and isinstance(old, str):
                if new in value:
                    raise ConfigError(f"model_config has both {old!r} and {new!r}; keep {new!r}")
                if once.first_time("model_config", old):
                    logger.warning("model_config key %r is RLlib's old name of %r", old, new)
                value[new] = value.pop(old)
        for key in [k for k in IGNORED_MODEL_KEYS if k in value]:
            if once.first_time("model_config", key):
                logger.warning("model_config key %r is RLlib's internal flag; ignored", key)
            del value[key]
        unknown = [k for k in value if k not in fields]
        if unknown:
            k = unknown[0]
            hint = closest(k, fields) if isinstance(k, str) else ""
            raise ConfigError(f"unknown model_config key {k!r}{hint}; valid keys: {sorted(fields)}")
        return cls(**value)

    def __getitem__(self, key: str) -> Any:
        """A setting by its RLlib key (``config.model_config["vf_share_layers"]``, as RLlib's
        ``model_config`` is a dict); an unknown key raises ``KeyError`` naming the known ones."""
        fields = {f.name for f in dataclasses.fields(self)}
        if key not in fields:
            raise KeyError(f"model_config has no key {key!r}; its keys: {sorted(fields)}")
        return self.to_dict()[key]

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is one of the settings' RLlib keys (``"vf_share_layers" in mc``)."""
        return isinstance(key, str) and key in {f.name for f in dataclasses.fields(self)}

    def keys(self) -> list[str]:
        """The settings' RLlib keys (a dict's ``keys``)."""
        return [f.name for f in dataclasses.fields(self)]

    # Not iterable: ``__getitem__`` alone would make ``iter()`` try integer keys.
    __iter__ = None

    def items(self) -> list[tuple[str, Any]]:
        """``(key, value)`` pairs of the settings (a dict's ``items``)."""
        return list(self.to_dict().items())

    def values(self) -> list[Any]:
        """The settings' values (a dict's ``values``)."""
        return list(self.to_dict().values())

    def __or__(self, other: Any) -> dict[str, Any]:
        """``model_config | {...}``: a dict of the settings updated by ``other``, as RLlib's
        ``config.model_config`` (a dict) gives."""
        if isinstance(other, DefaultModelConfig):
            other = other.to_dict()
        if not isinstance(other, dict):
            return NotImplemented
        return self.to_dict() | other

    def __ror__(self, other: Any) -> dict[str, Any]:
        """``{...} | model_config``: ``other`` updated by the settings, as a dict."""
        if not isinstance(other, dict):
            return NotImplemented
        return other | self.to_dict()

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or ``default`` for an unknown key (a dict's ``get``)."""
        try:
            return self[key]
        except KeyError:
            return default

    def to_dict(self) -> dict[str, Any]:
        # The fields are immutable once checked (__post_init__ stores tuples), so a shallow
        # copy is ``dataclasses.asdict``'s result, at a fraction of its cost (a result dict
        # carries this every iteration).
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["fcnet_hiddens"] = list(self.fcnet_hiddens)
        d["head_fcnet_hiddens"] = list(self.head_fcnet_hiddens)
        if self.fusionnet_hiddens is not None:
            d["fusionnet_hiddens"] = list(self.fusionnet_hiddens)
        if self.conv_filters is not None:
            d["conv_filters"] = filters_list(self.conv_filters)
        for _, kwargs in INITIALIZER_FIELDS:
            if d[kwargs] is not None:
                d[kwargs] = dict(getattr(self, kwargs))
        return d
