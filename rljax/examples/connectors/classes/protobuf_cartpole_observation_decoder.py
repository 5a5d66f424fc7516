"""RLlib's example piece ``ProtobufCartPoleObservationDecoder``
(``ray.rllib.examples.connectors.classes.protobuf_cartpole_observation_decoder``): decodes the
protobuf bytes of ``CartPoleWithProtobufObservationSpace`` back into CartPole's four floats.

A ``ConnectorV2`` piece: it runs on the host in each gymnasium sub-env and rewrites the
episode's latest observation (``rljax.connectors.env_to_module.episode_connector``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.connectors.env_to_module.episode_connector import ConnectorV2
from rljax.examples.envs.classes.cartpole_with_protobuf_observation_space import from_protobuf
from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError


class ProtobufCartPoleObservationDecoder(ConnectorV2):
    """Env-to-module piece: a ``Box(0, 255, (n,), uint8)`` of protobuf bytes in, CartPole's
    ``Box(-inf, inf, (4,), float32)`` out."""

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        space = input_observation_space
        if not (
            isinstance(space, gym.spaces.Box)
            and len(space.shape) == 1
            and np.dtype(space.dtype) == np.uint8
        ):
            raise ConfigError(
                "ProtobufCartPoleObservationDecoder decodes a 1-D uint8 Box of protobuf bytes; "
                f"the observation space is {describe(space)}"
            )
        return gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: Any,
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        for episode in self.single_agent_episode_iterator(episodes):
            decoded = from_protobuf(episode.get_observations(-1))
            episode.set_observations(new_data=decoded, at_indices=-1)
        return batch


__all__ = ["ProtobufCartPoleObservationDecoder"]
