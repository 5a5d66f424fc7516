"""RLlib's ``ray.rllib.core.learner.training_data`` path: ``TrainingData``, the input of RLlib's
``Learner.update`` (PyTorch learners), which refuses where it is used (``TorchClassError``).
rljax's learners take their batches inside each algorithm's jitted update."""

from __future__ import annotations

from rljax.utils.torch_classes import LEARNER_INSTEAD, TorchClass


class TrainingData(TorchClass):
    """RLlib's learner input: making one raises ``TorchClassError``, which says what rljax
    takes instead."""

    rllib_path = "ray.rllib.core.learner.training_data.TrainingData"
    kind = "learner input class"
    why = "rljax's learners are each algorithm's jitted update, which takes no Learner input"
    instead = LEARNER_INSTEAD


__all__ = ["TrainingData"]
