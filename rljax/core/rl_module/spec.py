"""``RLModuleSpec``: how a user plugs in a Flax module of their own (also importable from
``rljax.core.rl_module.rl_module``, RLlib's path)."""

from __future__ import annotations

import dataclasses
from typing import Any

from rljax.utils.errors import ConfigError


@dataclasses.dataclass
class RLModuleSpec:
    """A user-supplied Flax module and its keyword arguments.

    ``module_class(num_outputs=n, **model_config)`` must build a ``flax.linen.Module`` whose
    ``__call__(obs)`` takes a batch of observations ``[B, *obs_shape]`` and returns
    ``(action_dist_inputs [B, n], value [B])``. ``n`` is the number of actions for a discrete
    action space and ``2 * action_dim`` (mean, log std) for a continuous one.

    Attributes:
      module_class: The ``flax.linen.Module`` subclass.
      model_config: Extra keyword arguments for its constructor (JSON-serializable values).
    """

    module_class: type | None = None
    model_config: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        import flax.linen as nn

        from rljax.utils.torch_classes import check_not_torch

        check_not_torch(self.module_class, "RLModuleSpec(module_class=...)")
        if self.module_class is not None and not (
            isinstance(self.module_class, type) and issubclass(self.module_class, nn.Module)
        ):
            raise ConfigError(
                f"RLModuleSpec.module_class must be a flax.linen.Module subclass; "
                f"got {self.module_class!r}"
            )
        if not isinstance(self.model_config, dict):
            raise ConfigError(
                f"RLModuleSpec.model_config must be a dict; got {type(self.model_config).__name__}"
            )
