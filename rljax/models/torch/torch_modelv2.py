"""RLlib's ``TorchModelV2``, so that old scripts' imports and class statements run.

rljax's networks are JAX: a subclass is refused where it is used
(``ModelCatalog.register_custom_model`` or ``"model": {"custom_model": ...}``) with the Flax
module that does the same; nothing here imports torch.
"""

from __future__ import annotations

from typing import Any


class TorchModelV2:
    """The base class of RLlib's old torch models, as a name: subclassing works, building a
    trainer with the subclass raises ``ConfigError`` showing the Flax equivalent."""

    def __init__(
        self, obs_space: Any, action_space: Any, num_outputs: int, model_config: Any, name: str
    ):
        from rljax.models.catalog import _refuse_torch

        _refuse_torch(f"{type(self).__name__}(...)", type(self))


__all__ = ["TorchModelV2"]
