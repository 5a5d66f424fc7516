"""RLlib's ``ConnectorV2`` base at its path (``ray.rllib.connectors.connector_v2``).

A ``ConnectorV2`` subclass transforms episodes and batches in Python on every call; rljax's
connectors run inside its jitted act step and update instead. A script's subclass loads, and
refuses where it is used (``TorchClassError`` naming the class and what rljax takes instead:
its built-in connectors, or a ``SingleAgentObservationPreprocessor`` subclass).
"""

from __future__ import annotations

from rljax.utils.torch_classes import CONNECTOR_INSTEAD, CONNECTOR_WHY, TorchClass


class ConnectorV2(TorchClass):
    """RLlib's connector base: using a subclass (a config setting, an instance) raises
    ``TorchClassError``, which says what rljax takes instead."""

    rllib_path = "ray.rllib.connectors.connector_v2.ConnectorV2"
    kind = "connector base class"
    why = CONNECTOR_WHY
    instead = CONNECTOR_INSTEAD


__all__ = ["ConnectorV2"]
