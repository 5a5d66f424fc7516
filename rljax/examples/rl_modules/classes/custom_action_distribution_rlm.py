"""RLlib's example classes of
``ray.rllib.examples.rl_modules.classes.custom_action_distribution_rlm``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClass


class CustomActionDistributionRLModule(TorchClass):
    """RLlib's example RLModule ``CustomActionDistributionRLModule``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.custom_action_distribution_rlm.CustomActionDistributionRLModule"
    instead = MODULE_INSTEAD


__all__ = ["CustomActionDistributionRLModule"]
