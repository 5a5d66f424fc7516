"""RLlib's example classes of
``ray.rllib.examples.learners.classes.vpg_torch_learner_shared_optimizer``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import LEARNER_INSTEAD, TorchClass


class VPGTorchLearnerSharedOptimizer(TorchClass):
    """RLlib's example Learner ``VPGTorchLearnerSharedOptimizer``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.learners.classes.vpg_torch_learner_shared_optimizer.VPGTorchLearnerSharedOptimizer"
    instead = LEARNER_INSTEAD


__all__ = ["VPGTorchLearnerSharedOptimizer"]
