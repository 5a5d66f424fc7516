"""RLlib's example classes of
``ray.rllib.examples.connectors.classes.count_based_curiosity``
at their path: ConnectorV2 code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import CONNECTOR_INSTEAD, CONNECTOR_WHY, TorchClass


class CountBasedCuriosity(TorchClass):
    """RLlib's example connector ``CountBasedCuriosity``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.connectors.classes.count_based_curiosity.CountBasedCuriosity"
    instead = CONNECTOR_INSTEAD
    kind = "connector class"
    why = CONNECTOR_WHY


__all__ = ["CountBasedCuriosity"]
