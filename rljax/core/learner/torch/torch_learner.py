"""RLlib's PyTorch ``TorchLearner`` at its path, for scripts whose own code is PyTorch
(``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import LEARNER_INSTEAD, TorchClass


class TorchLearner(TorchClass):
    """RLlib's PyTorch ``TorchLearner``: a script's class may derive from it; using that class
    (``RLModuleSpec(module_class=...)``, a config setting, an instance) raises
    ``TorchClassError``, which says what rljax takes instead."""

    rllib_path = "ray.rllib.core.learner.torch.torch_learner.TorchLearner"
    instead = LEARNER_INSTEAD


__all__ = ["TorchLearner"]
