"""RLlib's example classes of
``ray.rllib.examples.connectors.classes.protobuf_cartpole_observation_decoder``
at their path: ConnectorV2 code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import CONNECTOR_INSTEAD, CONNECTOR_WHY, TorchClass


class ProtobufCartPoleObservationDecoder(TorchClass):
    """RLlib's example connector ``ProtobufCartPoleObservationDecoder``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.connectors.classes.protobuf_cartpole_observation_decoder.ProtobufCartPoleObservationDecoder"
    instead = CONNECTOR_INSTEAD
    kind = "connector class"
    why = CONNECTOR_WHY


__all__ = ["ProtobufCartPoleObservationDecoder"]
