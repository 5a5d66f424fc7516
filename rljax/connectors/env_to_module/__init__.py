"""Env-to-module connectors under RLlib's names (``rljax.connectors.env_to_module``)."""

from rljax.connectors.env_to_module.connector import (
    EnvToModuleConnector,
    EnvToModulePipeline,
    build_env_to_module,
    check_env_to_module_connector,
)
from rljax.connectors.env_to_module.flatten_observations import FlattenObservations
from rljax.connectors.env_to_module.mean_std_filter import MeanStdFilter
from rljax.connectors.env_to_module.not_built import (
    FrameStackingEnvToModule,
    PrevActionsPrevRewards,
)
from rljax.connectors.env_to_module.observation_preprocessor import (
    MultiAgentObservationPreprocessor,
    SingleAgentObservationPreprocessor,
)

__all__ = [
    "EnvToModuleConnector",
    "EnvToModulePipeline",
    "FlattenObservations",
    "FrameStackingEnvToModule",
    "MeanStdFilter",
    "MultiAgentObservationPreprocessor",
    "PrevActionsPrevRewards",
    "SingleAgentObservationPreprocessor",
    "build_env_to_module",
    "check_env_to_module_connector",
]
