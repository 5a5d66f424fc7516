"""RLlib's PyTorch ``TorchRLModule`` at its path, for scripts whose own code is PyTorch
(``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClass


class TorchRLModule(TorchClass):
    """RLlib's PyTorch ``TorchRLModule``: a script's class may derive from it; using that class
    (``RLModuleSpec(module_class=...)``, a config setting, an instance) raises
    ``TorchClassError``, which says what rljax takes instead."""

    rllib_path = "ray.rllib.core.rl_module.torch.torch_rl_module.TorchRLModule"
    instead = MODULE_INSTEAD


__all__ = ["TorchRLModule"]
