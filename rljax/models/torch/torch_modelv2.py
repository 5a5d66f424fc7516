"""RLlib's ``TorchModelV2``, so that old scripts' imports and class statements run.

rljax's networks are JAX: a subclass is refused where it is used
(``ModelCatalog.register_custom_model`` or ``"model": {"custom_model": ...}``) with the Flax
module that does the same; nothing here imports torch.
"""

from __future__ import annotations

import inspect
from typing import Any

from rljax.utils.errors import ConfigError

# The tutorial's TorchModelV2 (two hidden layers of 64, a policy and a value head) in Flax.
FLAX_EXAMPLE = """\
import flax.linen as nn
from rljax.models import ModelCatalog

class CustomModel(nn.Module):
    num_outputs: int  # set by the algorithm: the action distribution's inputs

    @nn.compact
    def __call__(self, obs):  # obs: [B, obs_dim]
        x = nn.relu(nn.Dense(64)(obs))
        x = nn.relu(nn.Dense(64)(x))
        logits = nn.Dense(self.num_outputs)(x)
        value = nn.Dense(1)(x).squeeze(-1)
        return logits, value  # [B, num_outputs], [B]

ModelCatalog.register_custom_model("my_model", CustomModel)
config = {"env": "CartPole-v1", "model": {"custom_model": "my_model"}}"""


def refuse_torch(what: str, model: Any) -> None:
    """Raises ``ConfigError`` showing the Flax form when ``model`` is a ``TorchModelV2``."""
    if inspect.isclass(model) and issubclass(model, TorchModelV2):
        raise ConfigError(
            f"{what}: {model.__name__} is a TorchModelV2; rljax trains JAX networks, so a "
            "custom model is a flax.linen.Module whose __call__(obs) returns "
            "(action_dist_inputs [B, num_outputs], value [B]). The same network in Flax:\n\n"
            f"{FLAX_EXAMPLE}"
        )


class TorchModelV2:
    """The base class of RLlib's old torch models, as a name: subclassing works, building a
    trainer with the subclass raises ``ConfigError`` showing the Flax equivalent."""

    def __init__(
        self, obs_space: Any, action_space: Any, num_outputs: int, model_config: Any, name: str
    ):
        refuse_torch(f"{type(self).__name__}(...)", type(self))


__all__ = ["FLAX_EXAMPLE", "TorchModelV2", "refuse_torch"]
