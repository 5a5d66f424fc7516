"""RLlib's example classes of
``ray.rllib.examples.rl_modules.classes.tiny_atari_cnn_rlm``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import CNN_INSTEAD, TorchClass


class TinyAtariCNN(TorchClass):
    """RLlib's example RLModule ``TinyAtariCNN``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.tiny_atari_cnn_rlm.TinyAtariCNN"
    instead = CNN_INSTEAD


__all__ = ["TinyAtariCNN"]
