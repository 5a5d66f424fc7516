"""Env-to-module connectors under RLlib's names (``rljax.connectors.env_to_module``)."""

from rljax.connectors.env_to_module.connector import (
    EnvToModuleConnector,
    EnvToModulePipeline,
    build_env_to_module,
    check_env_to_module_connector,
)
from rljax.connectors.env_to_module.mean_std_filter import MeanStdFilter

__all__ = [
    "EnvToModuleConnector",
    "EnvToModulePipeline",
    "MeanStdFilter",
    "build_env_to_module",
    "check_env_to_module_connector",
]
