"""RLlib's PyTorch ``DefaultDQNTorchRLModule`` at its path, for scripts whose own code is PyTorch
(``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClass


class DefaultDQNTorchRLModule(TorchClass):
    """RLlib's PyTorch ``DefaultDQNTorchRLModule``: a script's class may derive from it; using that class
    (``RLModuleSpec(module_class=...)``, a config setting, an instance) raises
    ``TorchClassError``, which says what rljax takes instead. Named itself in an
    ``RLModuleSpec`` (``module_class=`` this class), it means the default networks, which
    rljax builds from the spec's ``model_config``."""

    uses_default_networks = True
    default_networks_of = "DQN"
    rllib_path = (
        "ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module.DefaultDQNTorchRLModule"
    )
    instead = MODULE_INSTEAD


__all__ = ["DefaultDQNTorchRLModule"]
