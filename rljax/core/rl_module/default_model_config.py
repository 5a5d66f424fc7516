"""RLlib's ``DefaultModelConfig``: the settings of the built-in policy and value networks."""

from __future__ import annotations

import dataclasses
from typing import Any

from rljax.utils.errors import ConfigError, closest

_ACTIVATIONS = ("tanh", "relu", "elu", "swish", "silu", "gelu", "linear")


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

    def __post_init__(self) -> None:
        # Normalise lists (from YAML/JSON or user code) into hashable tuples.
        object.__setattr__(self, "fcnet_hiddens", tuple(int(h) for h in self.fcnet_hiddens))
        object.__setattr__(
            self, "head_fcnet_hiddens", tuple(int(h) for h in self.head_fcnet_hiddens)
        )
        if self.conv_filters is not None:
            filters = []
            for f in self.conv_filters:
                if len(f) != 3:
                    raise ConfigError(
                        f"conv_filters entries must be [out_channels, [kh, kw], stride]; got {f!r}"
                    )
                out, kernel, stride = f
                kernel = (int(kernel), int(kernel)) if isinstance(kernel, int) else tuple(kernel)
                filters.append((int(out), tuple(int(k) for k in kernel), int(stride)))
            object.__setattr__(self, "conv_filters", tuple(filters))
        for name in ("fcnet_activation", "conv_activation", "head_fcnet_activation"):
            value = getattr(self, name)
            if value not in _ACTIVATIONS:
                raise ConfigError(
                    f"model_config.{name}={value!r} is not supported; use one of {_ACTIVATIONS}"
                )
        if any(h <= 0 for h in self.fcnet_hiddens + self.head_fcnet_hiddens):
            raise ConfigError(f"layer widths must be positive; got {self.fcnet_hiddens}")

    @classmethod
    def from_any(cls, value: DefaultModelConfig | dict[str, Any] | None) -> DefaultModelConfig:
        """Builds a config from an instance, a dict of RLlib model keys, or ``None``."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise ConfigError(
                f"model_config must be a dict or DefaultModelConfig; got {type(value).__name__}"
            )
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = [k for k in value if k not in fields]
        if unknown:
            k = unknown[0]
            raise ConfigError(
                f"unknown model_config key {k!r}{closest(k, fields)}; valid keys: {sorted(fields)}"
            )
        return cls(**value)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["fcnet_hiddens"] = list(self.fcnet_hiddens)
        d["head_fcnet_hiddens"] = list(self.head_fcnet_hiddens)
        if self.conv_filters is not None:
            d["conv_filters"] = [[o, list(k), s] for o, k, s in self.conv_filters]
        return d
