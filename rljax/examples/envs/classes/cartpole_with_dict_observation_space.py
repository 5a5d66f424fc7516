"""RLlib's ``CartPoleWithDictObservationSpace``
(``ray.rllib.examples.envs.classes.cartpole_with_dict_observation_space``): CartPole whose
observation is a nested Dict/Tuple holding the same four numbers."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv


class CartPoleWithDictObservationSpace(CartPoleEnv):
    """CartPole with the observation::

        {
            "x-pos": Box((1,)),                          # cart position
            "angular-pos": {"value": Box(()),            # pole angle
                            "some_random_stuff": Discrete(3)},  # noise, drawn each step
            "velocs": (Box((1,)), Box(())),              # cart velocity, pole velocity
        }

    Dynamics, rewards and episode ends are CartPole's; ``some_random_stuff`` carries no
    information (drawn from the env's own generator, seeded by ``reset(seed=...)``).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        low, high = self.observation_space.low, self.observation_space.high  # type: ignore[attr-defined]
        self.observation_space = gym.spaces.Dict(  # type: ignore[assignment]
            {
                "x-pos": gym.spaces.Box(low[0], high[0], (1,), np.float32),
                "angular-pos": gym.spaces.Dict(
                    {
                        "value": gym.spaces.Box(low[2], high[2], (), np.float32),
                        "some_random_stuff": gym.spaces.Discrete(3),
                    }
                ),
                "velocs": gym.spaces.Tuple(
                    [
                        gym.spaces.Box(low[1], high[1], (1,), np.float32),
                        gym.spaces.Box(low[3], high[3], (), np.float32),
                    ]
                ),
            }
        )

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        return self._dict_obs(obs), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:  # type: ignore[override]
        obs, reward, terminated, truncated, info = super().step(action)
        return self._dict_obs(obs), float(reward), terminated, truncated, info

    def _dict_obs(self, obs: np.ndarray) -> dict[str, Any]:
        return {
            "x-pos": np.array([obs[0]], np.float32),
            "angular-pos": {
                "value": np.array(obs[2], np.float32),
                "some_random_stuff": int(self.np_random.integers(3)),
            },
            "velocs": (np.array([obs[1]], np.float32), np.array(obs[3], np.float32)),
        }


__all__ = ["CartPoleWithDictObservationSpace"]
