"""RLlib's PyTorch ``PPOTorchRLModule`` at its path, for scripts whose own code is PyTorch
(``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClass


class PPOTorchRLModule(TorchClass):
    """RLlib's PyTorch ``PPOTorchRLModule``: a script's class may derive from it; using that class
    (``RLModuleSpec(module_class=...)``, a config setting, an instance) raises
    ``TorchClassError``, which says what rljax takes instead. Named itself in an
    ``RLModuleSpec`` (``module_class=`` this class), it means the default networks, which
    rljax builds from the spec's ``model_config``."""

    uses_default_networks = True
    default_networks_of = "PPO"
    rllib_path = "ray.rllib.algorithms.ppo.torch.ppo_torch_rl_module.PPOTorchRLModule"
    instead = MODULE_INSTEAD


__all__ = ["PPOTorchRLModule"]
