"""RLlib's example classes of
``ray.rllib.examples.learners.classes.intrinsic_curiosity_learners``
at their path: PyTorch and ConnectorV2 code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import CONNECTOR_INSTEAD, CONNECTOR_WHY, LEARNER_INSTEAD, TorchClass

#: RLlib's constant of this module.
ICM_MODULE_ID = "_intrinsic_curiosity_model"


class DQNTorchLearnerWithCuriosity(TorchClass):
    """RLlib's example Learner ``DQNTorchLearnerWithCuriosity``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.learners.classes.intrinsic_curiosity_learners.DQNTorchLearnerWithCuriosity"
    instead = LEARNER_INSTEAD


class PPOTorchLearnerWithCuriosity(TorchClass):
    """RLlib's example Learner ``PPOTorchLearnerWithCuriosity``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.learners.classes.intrinsic_curiosity_learners.PPOTorchLearnerWithCuriosity"
    instead = LEARNER_INSTEAD


class IntrinsicCuriosityModelConnector(TorchClass):
    """RLlib's example connector ``IntrinsicCuriosityModelConnector``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.learners.classes.intrinsic_curiosity_learners.IntrinsicCuriosityModelConnector"
    instead = CONNECTOR_INSTEAD
    kind = "connector class"
    why = CONNECTOR_WHY


__all__ = [
    "ICM_MODULE_ID",
    "DQNTorchLearnerWithCuriosity",
    "IntrinsicCuriosityModelConnector",
    "PPOTorchLearnerWithCuriosity",
]
