"""RLlib's PyTorch classes at their paths (``rljax.utils.torch_classes``): using them raises ``TorchClassError``."""
