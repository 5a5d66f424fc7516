"""RLlib's example classes of
``ray.rllib.examples.rl_modules.classes.modelv2_to_rlm``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClass


class ModelV2ToRLModule(TorchClass):
    """RLlib's example RLModule ``ModelV2ToRLModule``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.modelv2_to_rlm.ModelV2ToRLModule"
    instead = MODULE_INSTEAD


__all__ = ["ModelV2ToRLModule"]
