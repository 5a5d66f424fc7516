"""RLlib's ``ray.rllib.core.rl_module.torch``: ``TorchRLModule``, which a script's PyTorch module
may derive from; using such a class raises ``TorchClassError`` (``rljax.utils.torch_classes``)."""

from rljax.core.rl_module.torch.torch_rl_module import TorchRLModule

__all__ = ["TorchRLModule"]
