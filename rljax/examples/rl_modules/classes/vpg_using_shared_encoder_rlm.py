"""RLlib's example classes of
``ray.rllib.examples.rl_modules.classes.vpg_using_shared_encoder_rlm``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClass

#: RLlib's constant of this module.
SHARED_ENCODER_ID = "shared_encoder"


class VPGPolicyAfterSharedEncoder(TorchClass):
    """RLlib's example RLModule ``VPGPolicyAfterSharedEncoder``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.vpg_using_shared_encoder_rlm.VPGPolicyAfterSharedEncoder"
    instead = MODULE_INSTEAD


class VPGMultiRLModuleWithSharedEncoder(TorchClass):
    """RLlib's example RLModule ``VPGMultiRLModuleWithSharedEncoder``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.vpg_using_shared_encoder_rlm.VPGMultiRLModuleWithSharedEncoder"
    instead = MODULE_INSTEAD


class SharedEncoder(TorchClass):
    """RLlib's example RLModule ``SharedEncoder``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.vpg_using_shared_encoder_rlm.SharedEncoder"
    instead = MODULE_INSTEAD


class VPGIndividualEncoder(TorchClass):
    """RLlib's example RLModule ``VPGIndividualEncoder``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = (
        "ray.rllib.examples.rl_modules.classes.vpg_using_shared_encoder_rlm.VPGIndividualEncoder"
    )
    instead = MODULE_INSTEAD


class VPGPolicyNoSharedEncoder(TorchClass):
    """RLlib's example RLModule ``VPGPolicyNoSharedEncoder``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.vpg_using_shared_encoder_rlm.VPGPolicyNoSharedEncoder"
    instead = MODULE_INSTEAD


__all__ = [
    "SHARED_ENCODER_ID",
    "SharedEncoder",
    "VPGIndividualEncoder",
    "VPGMultiRLModuleWithSharedEncoder",
    "VPGPolicyAfterSharedEncoder",
    "VPGPolicyNoSharedEncoder",
]
