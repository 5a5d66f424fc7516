"""RLlib's example classes of
``ray.rllib.examples.algorithms.classes.vpg``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import VPG_INSTEAD, TorchClass


class VPGConfig(TorchClass):
    """RLlib's example algorithm ``VPGConfig``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.algorithms.classes.vpg.VPGConfig"
    instead = VPG_INSTEAD


class VPG(TorchClass):
    """RLlib's example algorithm ``VPG``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.algorithms.classes.vpg.VPG"
    instead = VPG_INSTEAD


__all__ = ["VPG", "VPGConfig"]
