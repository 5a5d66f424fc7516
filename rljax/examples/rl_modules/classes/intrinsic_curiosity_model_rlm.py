"""RLlib's example classes of
``ray.rllib.examples.rl_modules.classes.intrinsic_curiosity_model_rlm``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClass


class IntrinsicCuriosityModel(TorchClass):
    """RLlib's example RLModule ``IntrinsicCuriosityModel``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.intrinsic_curiosity_model_rlm.IntrinsicCuriosityModel"
    instead = MODULE_INSTEAD


__all__ = ["IntrinsicCuriosityModel"]
