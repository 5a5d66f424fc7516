"""RLlib's example classes of
``ray.rllib.examples.learners.classes.custom_ppo_loss_fn_learner``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import LEARNER_INSTEAD, TorchClass


class PPOTorchLearnerWithWeightRegularizerLoss(TorchClass):
    """RLlib's example Learner ``PPOTorchLearnerWithWeightRegularizerLoss``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.learners.classes.custom_ppo_loss_fn_learner.PPOTorchLearnerWithWeightRegularizerLoss"
    instead = LEARNER_INSTEAD


__all__ = ["PPOTorchLearnerWithWeightRegularizerLoss"]
