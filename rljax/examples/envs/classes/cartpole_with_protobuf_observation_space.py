"""RLlib's ``CartPoleWithProtobufObservationSpace``
(``ray.rllib.examples.envs.classes.cartpole_with_protobuf_observation_space``): CartPole whose
observations are serialized protobuf messages (needs ``protobuf``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv

from rljax.examples.envs.classes.utils.cartpole_observations_proto import CartPoleObservation


def to_protobuf(observation: Any) -> np.ndarray:
    """CartPole's ``[x, x_dot, theta, theta_dot]`` as the bytes (uint8) of a
    ``CartPoleObservation``."""
    x_pos, x_veloc, angle_pos, angle_veloc = (float(v) for v in observation)
    message = CartPoleObservation(
        x_pos=x_pos, x_veloc=x_veloc, angle_pos=angle_pos, angle_veloc=angle_veloc
    )
    return np.frombuffer(message.SerializeToString(), np.uint8)


def from_protobuf(data: np.ndarray) -> np.ndarray:
    """The four values (float32) back from an observation's bytes."""
    message = CartPoleObservation()
    message.ParseFromString(np.asarray(data, np.uint8).tobytes())
    return np.array(
        [message.x_pos, message.x_veloc, message.angle_pos, message.angle_veloc], np.float32
    )


class CartPoleWithProtobufObservationSpace(CartPoleEnv):
    """CartPole whose observation is a serialized ``CartPoleObservation``
    (``rljax.examples.envs.classes.utils.cartpole_observations_proto``) in a ``Box(0, 255,
    (36,), uint8)``; ``from_protobuf`` (or an env-to-module connector / wrapper) turns it back
    into the four floats. Dynamics, rewards and episode ends are CartPole's."""

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        length = len(to_protobuf(np.ones(4)))
        self.observation_space = gym.spaces.Box(0, 255, (length,), np.uint8)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        return to_protobuf(obs), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return to_protobuf(obs), float(reward), terminated, truncated, info


__all__ = ["CartPoleWithProtobufObservationSpace", "from_protobuf", "to_protobuf"]
