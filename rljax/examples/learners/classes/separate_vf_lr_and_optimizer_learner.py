"""RLlib's example classes of
``ray.rllib.examples.learners.classes.separate_vf_lr_and_optimizer_learner``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import LEARNER_INSTEAD, TorchClass


class PPOTorchLearnerWithSeparateVfOptimizer(TorchClass):
    """RLlib's example Learner ``PPOTorchLearnerWithSeparateVfOptimizer``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.learners.classes.separate_vf_lr_and_optimizer_learner.PPOTorchLearnerWithSeparateVfOptimizer"
    instead = LEARNER_INSTEAD


__all__ = ["PPOTorchLearnerWithSeparateVfOptimizer"]
