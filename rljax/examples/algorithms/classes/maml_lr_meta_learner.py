"""RLlib's example classes of
``ray.rllib.examples.algorithms.classes.maml_lr_meta_learner``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MAML_INSTEAD, TorchClass


class MAMLTorchMetaLearner(TorchClass):
    """RLlib's example Learner ``MAMLTorchMetaLearner``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.algorithms.classes.maml_lr_meta_learner.MAMLTorchMetaLearner"
    instead = MAML_INSTEAD


__all__ = ["MAMLTorchMetaLearner"]
