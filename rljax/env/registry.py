"""The registry of envs, Flax module classes and policy mapping functions at its older path:
defined in ``rljax.utils.registry`` (below ``rljax.env``), next to ``rljax.utils.references``,
which resolves configs' and checkpoints' names through it."""

from rljax.utils.registry import (
    _MAPPING_FNS,
    _MODULES,
    _REGISTRY,
    register_env,
    register_module_class,
    register_policy_mapping_fn,
    registered,
    registered_creator,
    registered_names,
)

__all__ = [
    "_MAPPING_FNS",
    "_MODULES",
    "_REGISTRY",
    "register_env",
    "register_module_class",
    "register_policy_mapping_fn",
    "registered",
    "registered_creator",
    "registered_names",
]
