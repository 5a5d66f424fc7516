"""RLlib's ``ray.rllib.core.learner.differentiable_learner_config`` path: meta-learning's
learner config (PyTorch), which refuses where it is used (``TorchClassError``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MAML_INSTEAD, TorchClass


class DifferentiableLearnerConfig(TorchClass):
    """RLlib's config of a differentiable (meta-learning) learner: making one raises
    ``TorchClassError``, which says that rljax has no such API."""

    rllib_path = "ray.rllib.core.learner.differentiable_learner_config.DifferentiableLearnerConfig"
    instead = MAML_INSTEAD


__all__ = ["DifferentiableLearnerConfig"]
