"""RLlib's ``ray.rllib.models`` for the old API: ``ModelCatalog`` (Flax custom models) and
``rljax.models.torch.torch_modelv2.TorchModelV2`` (refused where used, showing the Flax form)."""

from rljax.models.catalog import ModelCatalog

__all__ = ["ModelCatalog"]
