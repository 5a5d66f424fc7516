"""RLlib's example classes of
``ray.rllib.examples.algorithms.classes.maml_lr_differentiable_rlm``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MAML_INSTEAD, TorchClass


class DifferentiableTorchRLModule(TorchClass):
    """RLlib's example RLModule ``DifferentiableTorchRLModule``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.algorithms.classes.maml_lr_differentiable_rlm.DifferentiableTorchRLModule"
    instead = MAML_INSTEAD


__all__ = ["DifferentiableTorchRLModule"]
