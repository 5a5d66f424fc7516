"""RLlib's ``PPOCatalog`` at its path (``ray.rllib.algorithms.ppo.ppo_catalog``).

RLlib's catalogs build PyTorch models for its default modules; rljax builds its default
networks from ``model_config`` itself, so the catalog refuses where it is used
(``RLModuleSpec(catalog_class=...)``, an instance) with ``TorchClassError``.
"""

from __future__ import annotations

from rljax.utils.torch_classes import TorchClass

CATALOG_INSTEAD = (
    "rljax builds its default networks from model_config itself (fcnet_hiddens, "
    "fcnet_activation, head_fcnet_hiddens, vf_share_layers, conv_filters, use_lstm, ...): drop "
    "catalog_class, or give a Flax module through RLModuleSpec(module_class=...)"
)


class PPOCatalog(TorchClass):
    """RLlib's ``PPOCatalog``, which builds PyTorch models: using it raises
    ``TorchClassError``, which says what rljax takes instead; except as itself in an
    ``RLModuleSpec(catalog_class=PPOCatalog)``, where it means the default networks' catalog
    and is dropped (rljax builds them from ``model_config``)."""

    uses_default_networks = True
    rllib_path = "ray.rllib.algorithms.ppo.ppo_catalog.PPOCatalog"
    kind = "model catalog (it builds PyTorch models)"
    instead = CATALOG_INSTEAD


__all__ = ["CATALOG_INSTEAD", "PPOCatalog"]
