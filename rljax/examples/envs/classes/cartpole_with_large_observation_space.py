"""RLlib's ``CartPoleWithLargeObservationSpace``
(``ray.rllib.examples.envs.classes.cartpole_with_large_observation_space``): CartPole whose
observation is a Dict of 100 noise entries and the real one."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv

NUM_NOISE_KEYS = 100


class CartPoleWithLargeObservationSpace(CartPoleEnv):
    """CartPole with the observation ``{"0": (Discrete(100), Box(0, 256, (30,))), ..., "99":
    ..., "actually-useful-stuff": Box((4,))}``: the 100 tuples are noise drawn anew each step
    (from the space, seeded by ``reset(seed=...)``); ``"actually-useful-stuff"`` is CartPole's
    observation. Dynamics, rewards and episode ends are CartPole's."""

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        low, high = self.observation_space.low, self.observation_space.high  # type: ignore[attr-defined]
        spaces: dict[str, gym.Space] = {
            str(i): gym.spaces.Tuple(
                (gym.spaces.Discrete(100), gym.spaces.Box(0, 256, (30,), np.float32))
            )
            for i in range(NUM_NOISE_KEYS)
        }
        spaces["actually-useful-stuff"] = gym.spaces.Box(low, high, (4,), np.float32)
        self.observation_space = gym.spaces.Dict(spaces)  # type: ignore[assignment]

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        if seed is not None:
            self.observation_space.seed(seed)
        return self._large_obs(obs), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:  # type: ignore[override]
        obs, reward, terminated, truncated, info = super().step(action)
        return self._large_obs(obs), float(reward), terminated, truncated, info

    def _large_obs(self, obs: np.ndarray) -> dict[str, Any]:
        space = self.observation_space
        assert isinstance(space, gym.spaces.Dict)
        out = {str(i): space[str(i)].sample() for i in range(NUM_NOISE_KEYS)}
        out["actually-useful-stuff"] = np.asarray(obs, np.float32)
        return out


__all__ = ["CartPoleWithLargeObservationSpace"]
