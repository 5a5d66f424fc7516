"""RLlib's example classes of
``ray.rllib.examples.rl_modules.classes.mobilenet_rlm``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import CNN_INSTEAD, TorchClass

#: RLlib's constant of this module.
MOBILENET_INPUT_SHAPE = (3, 224, 224)


class MobileNetV3EncoderConfig(TorchClass):
    """RLlib's example RLModule ``MobileNetV3EncoderConfig``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.mobilenet_rlm.MobileNetV3EncoderConfig"
    instead = CNN_INSTEAD


class MobileNetV3Encoder(TorchClass):
    """RLlib's example RLModule ``MobileNetV3Encoder``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.mobilenet_rlm.MobileNetV3Encoder"
    instead = CNN_INSTEAD


class MobileNetTorchPPORLModule(TorchClass):
    """RLlib's example RLModule ``MobileNetTorchPPORLModule``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.mobilenet_rlm.MobileNetTorchPPORLModule"
    instead = CNN_INSTEAD


__all__ = [
    "MOBILENET_INPUT_SHAPE",
    "MobileNetTorchPPORLModule",
    "MobileNetV3Encoder",
    "MobileNetV3EncoderConfig",
]
