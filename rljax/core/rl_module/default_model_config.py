"""RLlib's ``DefaultModelConfig``: the settings of the built-in policy and value networks."""

from __future__ import annotations

import dataclasses
from typing import Any

from rljax.utils.checks import Bool, Check, Choice, Int, Number, Widths, describe, is_int, refuse
from rljax.utils.errors import ConfigError, closest

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


# What each field may be; __post_init__ checks every field against it.
_CHECKS: dict[str, Check] = {
    "fcnet_hiddens": Widths(),
    "fcnet_activation": Choice(_ACTIVATIONS),
    "conv_filters": _conv_filters,
    "conv_activation": Choice(_ACTIVATIONS),
    "head_fcnet_hiddens": Widths(),
    "head_fcnet_activation": Choice(_ACTIVATIONS),
    "vf_share_layers": Bool(),
    "free_log_std": Bool(),
    "log_std_clip_param": Number(0, low_open=True),
    "use_lstm": Bool(),
    "lstm_cell_size": Int(1),
    "max_seq_len": Int(1),
    "lstm_use_prev_action": Bool(),
    "lstm_use_prev_reward": Bool(),
}


@dataclasses.dataclass(frozen=True)
class DefaultModelConfig:
    """Settings of the default networks, with RLlib's names and defaults.

    Attributes:
      fcnet_hiddens: Widths of the dense layers of the encoder for vector observations.
      fcnet_activation: Activation of those layers.
      conv_filters: ``[[out_channels, [kh, kw], stride], ...]`` for image observations; ``None``
        picks the Nature DQN stack for 84x84 (or 64x64) inputs.
      conv_activation: Activation of the conv layers.
      head_fcnet_hiddens: Dense layers after the encoder in each head. For image observations an
        empty list means one 512-unit layer (the Nature CNN's).
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
    """

    fcnet_hiddens: tuple[int, ...] = (256, 256)
    fcnet_activation: str = "tanh"
    conv_filters: tuple[tuple[int, tuple[int, int], int], ...] | None = None
    conv_activation: str = "relu"
    head_fcnet_hiddens: tuple[int, ...] = ()
    head_fcnet_activation: str = "relu"
    vf_share_layers: bool = True
    free_log_std: bool = False
    log_std_clip_param: float = 20.0
    use_lstm: bool = False
    lstm_cell_size: int = 256
    max_seq_len: int = 20
    lstm_use_prev_action: bool = False
    lstm_use_prev_reward: bool = False

    def __post_init__(self) -> None:
        # Each field checked and normalised: lists (from YAML/JSON or user code) become
        # hashable tuples, numpy ints Python ints; a wrong type is refused, never reinterpreted.
        for f in dataclasses.fields(self):
            value = _CHECKS[f.name](f"model_config.{f.name}", getattr(self, f.name))
            object.__setattr__(self, f.name, value)

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
        unknown = [k for k in value if k not in fields]
        if unknown:
            k = unknown[0]
            hint = closest(k, fields) if isinstance(k, str) else ""
            raise ConfigError(f"unknown model_config key {k!r}{hint}; valid keys: {sorted(fields)}")
        return cls(**value)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["fcnet_hiddens"] = list(self.fcnet_hiddens)
        d["head_fcnet_hiddens"] = list(self.head_fcnet_hiddens)
        if self.conv_filters is not None:
            d["conv_filters"] = [[o, list(k), s] for o, k, s in self.conv_filters]
        return d
