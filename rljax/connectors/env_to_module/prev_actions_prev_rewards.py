"""RLlib's ``PrevActionsPrevRewards``: the previous actions and rewards added to each observation.

A host piece (``rljax.connectors.env_to_module.episode_connector``): it runs in each gymnasium
sub-env after every reset and step and makes the observation RLlib's dict::

    {"_orig_obs": obs, "prev_n_actions": [n_prev_actions * A], "prev_n_rewards": [n_prev_rewards]}

with the last ``n_prev_actions`` actions (``Discrete`` ones one-hot, so ``A`` is the number of
actions; ``Box`` ones flattened) and the last ``n_prev_rewards`` rewards, oldest first, padded
with zeros before the episode's first step (a ``Discrete`` action's pad is all zeros, no
action's one-hot), as RLlib pads them. Put
``FlattenObservations()`` after it for the default networks.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.connectors.env_to_module.episode_connector import ConnectorV2
from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ConfigError(f"PrevActionsPrevRewards {name}={describe(value)}; it takes an int >= 0")
    return int(value)


class PrevActionsPrevRewards(ConnectorV2):
    """Adds the previous ``n_prev_actions`` actions and ``n_prev_rewards`` rewards to each
    observation (see the module docstring).

    Args (RLlib's):
      input_observation_space, input_action_space: Set by the algorithm.
      multi_agent: RLlib's flag for multi-agent pipelines; single-agent envs only here (a
        multi-agent config is refused).
      n_prev_actions: How many previous actions (0: none).
      n_prev_rewards: How many previous rewards (0: none).
    """

    type_name = "PrevActionsPrevRewards"
    ORIG_OBS_KEY = "_orig_obs"
    PREV_ACTIONS_KEY = "prev_n_actions"
    PREV_REWARDS_KEY = "prev_n_rewards"

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        n_prev_actions: int = 1,
        n_prev_rewards: int = 1,
        **kwargs: Any,
    ):
        if kwargs:
            raise ConfigError(
                f"PrevActionsPrevRewards got unknown arguments {sorted(kwargs)}; it takes "
                "multi_agent, n_prev_actions and n_prev_rewards"
            )
        if multi_agent:
            raise ConfigError(
                "PrevActionsPrevRewards(multi_agent=True): rljax runs it on single-agent envs; "
                "multi-agent PPO runs FlattenObservations(multi_agent=True) and observation "
                "preprocessors"
            )
        self.n_prev_actions = _count("n_prev_actions", n_prev_actions)
        self.n_prev_rewards = _count("n_prev_rewards", n_prev_rewards)
        super().__init__(input_observation_space, input_action_space)

    def _arguments(self) -> dict[str, Any]:
        return {"n_prev_actions": self.n_prev_actions, "n_prev_rewards": self.n_prev_rewards}

    def _action_width(self, action_space: gym.Space | None) -> int:
        if isinstance(action_space, gym.spaces.Discrete):
            return int(action_space.n)
        if isinstance(action_space, gym.spaces.Box):
            return int(np.prod(action_space.shape))
        raise ConfigError(
            f"PrevActionsPrevRewards adds Discrete or Box actions; the action space is "
            f"{describe(action_space)}"
        )

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        spaces: dict[str, gym.Space] = {self.ORIG_OBS_KEY: input_observation_space}
        if self.n_prev_actions:
            if isinstance(input_action_space, gym.spaces.Box):
                low = np.tile(
                    np.asarray(input_action_space.low, np.float32).ravel(), self.n_prev_actions
                )
                high = np.tile(
                    np.asarray(input_action_space.high, np.float32).ravel(), self.n_prev_actions
                )
                spaces[self.PREV_ACTIONS_KEY] = gym.spaces.Box(low, high, dtype=np.float32)
            else:
                width = self._action_width(input_action_space) * self.n_prev_actions
                spaces[self.PREV_ACTIONS_KEY] = gym.spaces.Box(0.0, 1.0, (width,), np.float32)
        if self.n_prev_rewards:
            spaces[self.PREV_REWARDS_KEY] = gym.spaces.Box(
                -np.inf, np.inf, (self.n_prev_rewards,), np.float32
            )
        return gym.spaces.Dict(spaces)

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
            augmented = {self.ORIG_OBS_KEY: episode.get_observations(-1)}
            if self.n_prev_actions:
                actions = episode.get_actions(
                    indices=slice(-self.n_prev_actions, None), fill=0, one_hot_discrete=True
                )
                augmented[self.PREV_ACTIONS_KEY] = np.asarray(actions, np.float32).reshape(-1)
            if self.n_prev_rewards:
                rewards = episode.get_rewards(indices=slice(-self.n_prev_rewards, None), fill=0.0)
                augmented[self.PREV_REWARDS_KEY] = np.asarray(rewards, np.float32)
            episode.set_observations(new_data=augmented, at_indices=-1)
        return batch


__all__ = ["PrevActionsPrevRewards"]
