"""RLlib's PyTorch ``DefaultSACTorchRLModule`` at its path, for scripts whose own code is PyTorch
(``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClass


class DefaultSACTorchRLModule(TorchClass):
    """RLlib's PyTorch ``DefaultSACTorchRLModule``: a script's class may derive from it; using that class
    (``RLModuleSpec(module_class=...)``, a config setting, an instance) raises
    ``TorchClassError``, which says what rljax takes instead. Named itself in an
    ``RLModuleSpec`` (``module_class=`` this class), it means the default networks, which
    rljax builds from the spec's ``model_config``."""

    uses_default_networks = True
    default_networks_of = "SAC"
    rllib_path = (
        "ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module.DefaultSACTorchRLModule"
    )
    instead = MODULE_INSTEAD


__all__ = ["DefaultSACTorchRLModule"]
