"""RLlib's default env-to-module pieces by name: in a list of connectors they pass the
observations on (rljax's act step does their work), and round-trip as config dicts."""

from __future__ import annotations

import gymnasium as gym
import jax.numpy as jnp
import numpy as np

from rljax.connectors.env_to_module import (
    AddObservationsFromEpisodesToBatch,
    BatchIndividualItems,
    MeanStdFilter,
    NumpyToTensor,
    WriteObservationsToEpisodes,
)
from rljax.connectors.env_to_module.connector import build_env_to_module, connector_from_spec


def test_default_pieces_change_nothing_beside_a_real_connector():
    """Was: ImportError for these names (RLlib exports them)."""
    pieces = [
        AddObservationsFromEpisodesToBatch(),
        MeanStdFilter(),
        WriteObservationsToEpisodes(),
        BatchIndividualItems(),
        NumpyToTensor(),
    ]
    space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    pipeline = build_env_to_module(pieces, space, gym.spaces.Discrete(2))
    assert pipeline is not None and pipeline.output_space == space
    obs = jnp.asarray([[1.0, -2.0], [3.0, 4.0]])
    out = pipeline.transform(pipeline.init_state(), obs)
    # The filter's state before any data (mean 0, std 1, clipped at 10): the observation.
    np.testing.assert_allclose(out, obs, rtol=1e-6)
    spec = NumpyToTensor().spec()
    assert spec == {"type": "NumpyToTensor"}
    assert type(connector_from_spec(spec)) is NumpyToTensor
