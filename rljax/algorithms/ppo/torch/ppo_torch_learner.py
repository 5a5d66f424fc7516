"""RLlib's PyTorch ``PPOTorchLearner`` at its path, for scripts whose own code is PyTorch
(``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import LEARNER_INSTEAD, TorchClass


class PPOTorchLearner(TorchClass):
    """RLlib's PyTorch ``PPOTorchLearner``: a script's class may derive from it; using that class
    (``RLModuleSpec(module_class=...)``, a config setting, an instance) raises
    ``TorchClassError``, which says what rljax takes instead."""

    rllib_path = "ray.rllib.algorithms.ppo.torch.ppo_torch_learner.PPOTorchLearner"
    instead = LEARNER_INSTEAD


__all__ = ["PPOTorchLearner"]
