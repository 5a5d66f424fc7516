"""RLlib's default env-to-module pieces by name (``AddObservationsFromEpisodesToBatch``,
``BatchIndividualItems``, ``NumpyToTensor``, ...).

RLlib builds every env-to-module pipeline from these (``add_default_connectors_to_env_to_module_pipeline``),
and a script that builds its own pipeline lists them. rljax's compiled act step does their
work itself (it reads the observations, batches them, keeps recurrent states and maps agents to
modules), so in a list of connectors each one passes the observations on unchanged.
"""

from __future__ import annotations

from typing import Any

import jax

from rljax.connectors.env_to_module.connector import EnvToModuleConnector


class _DefaultPiece(EnvToModuleConnector):
    """One of RLlib's default pieces: the act step does its work; it changes nothing here."""

    def __init__(
        self, input_observation_space: Any = None, input_action_space: Any = None, **kwargs: Any
    ):
        self.input_observation_space = input_observation_space
        self.input_action_space = input_action_space

    def transform(self, state: Any, obs: jax.Array) -> jax.Array:
        return obs

    def spec(self) -> dict[str, Any]:
        return {"type": self.type_name}


class AddObservationsFromEpisodesToBatch(_DefaultPiece):
    """RLlib's piece that puts the episodes' last observations in the batch."""

    type_name = "AddObservationsFromEpisodesToBatch"


class AddStatesFromEpisodesToBatch(_DefaultPiece):
    """RLlib's piece that adds a recurrent module's states (the act step keeps them)."""

    type_name = "AddStatesFromEpisodesToBatch"


class AddTimeDimToBatchAndZeroPad(_DefaultPiece):
    """RLlib's piece that adds a recurrent module's time axis."""

    type_name = "AddTimeDimToBatchAndZeroPad"


class AgentToModuleMapping(_DefaultPiece):
    """RLlib's piece that maps agents' data to their modules (multi-agent runs do it)."""

    type_name = "AgentToModuleMapping"


class BatchIndividualItems(_DefaultPiece):
    """RLlib's piece that stacks the episodes' items into a batch."""

    type_name = "BatchIndividualItems"


class NumpyToTensor(_DefaultPiece):
    """RLlib's piece that turns numpy arrays into tensors (the act step's are JAX arrays)."""

    type_name = "NumpyToTensor"


class WriteObservationsToEpisodes(_DefaultPiece):
    """RLlib's piece that writes transformed observations back into the episodes."""

    type_name = "WriteObservationsToEpisodes"


__all__ = [
    "AddObservationsFromEpisodesToBatch",
    "AddStatesFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "AgentToModuleMapping",
    "BatchIndividualItems",
    "NumpyToTensor",
    "WriteObservationsToEpisodes",
]
