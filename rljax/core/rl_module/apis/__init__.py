"""RLlib's RLModule API mixins (``ray.rllib.core.rl_module.apis``) by name.

In RLlib an RLModule declares what it computes by deriving from these (``ValueFunctionAPI``:
``compute_values``; ``TargetNetworkAPI``: target networks; ...). rljax's Flax modules do not
use them: a module's ``__call__(obs)`` returns ``(action_dist_inputs, value)`` and the
algorithm keeps its own target networks. They are here so that a script's PyTorch module,
defined on ``TorchRLModule`` and these, loads and meets the one ``TorchClassError`` where it is
used (``rljax.utils.torch_classes``). Their methods raise ``NotImplementedError``.
"""

from __future__ import annotations

from typing import Any


class ValueFunctionAPI:
    """RLlib's API of modules with a value function head: ``compute_values(batch)``."""

    def compute_values(self, batch: dict[str, Any], embeddings: Any | None = None) -> Any:
        raise NotImplementedError("ValueFunctionAPI.compute_values")


class TargetNetworkAPI:
    """RLlib's API of modules with target networks."""

    def make_target_networks(self) -> None:
        raise NotImplementedError("TargetNetworkAPI.make_target_networks")

    def get_target_network_pairs(self) -> list[tuple[Any, Any]]:
        raise NotImplementedError("TargetNetworkAPI.get_target_network_pairs")

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError("TargetNetworkAPI.forward_target")


class QNetAPI:
    """RLlib's API of modules computing Q-values: ``compute_q_values(batch)``."""

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError("QNetAPI.compute_q_values")


class InferenceOnlyAPI:
    """RLlib's API of modules with an inference-only variant."""

    def get_non_inference_attributes(self) -> list[str]:
        raise NotImplementedError("InferenceOnlyAPI.get_non_inference_attributes")


class SelfSupervisedLossAPI:
    """RLlib's API of modules that compute a loss of their own."""

    def compute_self_supervised_loss(self, **kwargs: Any) -> Any:
        raise NotImplementedError("SelfSupervisedLossAPI.compute_self_supervised_loss")


__all__ = [
    "InferenceOnlyAPI",
    "QNetAPI",
    "SelfSupervisedLossAPI",
    "TargetNetworkAPI",
    "ValueFunctionAPI",
]
