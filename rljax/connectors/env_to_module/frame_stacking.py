"""RLlib's ``FrameStackingEnvToModule``: the last ``num_frames`` observations, stacked.

A host piece (``rljax.connectors.env_to_module.episode_connector``): after every reset and step
of a gymnasium sub-env it concatenates the episode's last ``num_frames`` observations along
their last axis (RLlib's: images of shape ``[H, W, 1]`` become ``[H, W, num_frames]``), oldest
first, zeros before the episode's first observation. The stacked observation is what the runner
stores, so the learner trains on it directly: RLlib's learner-side re-stacking
(``FrameStackingLearner``) has nothing left to do, at the cost of storing each frame
``num_frames`` times in the train batch. EnvPool's Atari tasks stack in C++ instead
(``env_config={"stack_num": k}``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.connectors.env_to_module.episode_connector import ConnectorV2
from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError


class FrameStackingEnvToModule(ConnectorV2):
    """Stacks the last ``num_frames`` observations along the last axis (see the module
    docstring).

    Args (RLlib's):
      input_observation_space, input_action_space: Set by the algorithm.
      num_frames: How many observations to stack (>= 1).
      multi_agent: RLlib's flag; single-agent envs only here.
    """

    type_name = "FrameStackingEnvToModule"

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        num_frames: int = 1,
        multi_agent: bool = False,
        **kwargs: Any,
    ):
        if kwargs:
            raise ConfigError(
                f"FrameStackingEnvToModule got unknown arguments {sorted(kwargs)}; it takes "
                "num_frames and multi_agent"
            )
        if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 1:
            raise ConfigError(
                f"FrameStackingEnvToModule num_frames={describe(num_frames)}; it takes an int >= 1"
            )
        if multi_agent:
            raise ConfigError(
                "FrameStackingEnvToModule(multi_agent=True): rljax stacks frames on single-agent "
                "envs; wrap each agent's env in gymnasium.wrappers.FrameStackObservation instead"
            )
        self.num_frames = num_frames
        super().__init__(input_observation_space, input_action_space)

    def _arguments(self) -> dict[str, Any]:
        return {"num_frames": self.num_frames}

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        space = input_observation_space
        if not isinstance(space, gym.spaces.Box) or not space.shape:
            raise ConfigError(
                f"FrameStackingEnvToModule stacks Box observations with at least one axis; the "
                f"observation space is {describe(space)}"
            )
        k = self.num_frames
        dtype: Any = space.dtype  # gymnasium < 1.4 types Box's dtype as a scalar type
        return gym.spaces.Box(
            np.concatenate([space.low] * k, axis=-1),
            np.concatenate([space.high] * k, axis=-1),
            dtype=dtype,
        )

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
            frames = episode.get_observations(indices=slice(-self.num_frames, None), fill=0.0)
            stacked = np.concatenate(list(frames), axis=-1)
            episode.set_observations(new_data=stacked, at_indices=-1)
        return batch


__all__ = ["FrameStackingEnvToModule"]
