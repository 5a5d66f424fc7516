"""Env-to-module connectors under RLlib's names (``rljax.connectors.env_to_module``)."""

from rljax.connectors.env_to_module.connector import (
    EnvToModuleConnector,
    EnvToModulePipeline,
    build_env_to_module,
    check_env_to_module_connector,
)
from rljax.connectors.env_to_module.default_pieces import (
    AddObservationsFromEpisodesToBatch,
    AddStatesFromEpisodesToBatch,
    AddTimeDimToBatchAndZeroPad,
    AgentToModuleMapping,
    BatchIndividualItems,
    NumpyToTensor,
    WriteObservationsToEpisodes,
)
from rljax.connectors.env_to_module.episode_connector import ConnectorV2
from rljax.connectors.env_to_module.flatten_observations import FlattenObservations
from rljax.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
from rljax.connectors.env_to_module.mean_std_filter import MeanStdFilter
from rljax.connectors.env_to_module.observation_preprocessor import (
    MultiAgentObservationPreprocessor,
    SingleAgentObservationPreprocessor,
)
from rljax.connectors.env_to_module.prev_actions_prev_rewards import PrevActionsPrevRewards

__all__ = [
    "AddObservationsFromEpisodesToBatch",
    "AddStatesFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "AgentToModuleMapping",
    "BatchIndividualItems",
    "ConnectorV2",
    "EnvToModuleConnector",
    "EnvToModulePipeline",
    "FlattenObservations",
    "FrameStackingEnvToModule",
    "MeanStdFilter",
    "MultiAgentObservationPreprocessor",
    "NumpyToTensor",
    "PrevActionsPrevRewards",
    "SingleAgentObservationPreprocessor",
    "WriteObservationsToEpisodes",
    "build_env_to_module",
    "check_env_to_module_connector",
]
