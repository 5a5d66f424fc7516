"""RLlib's ``DebugCounterEnv`` and ``MultiAgentDebugCounterEnv``
(``ray.rllib.examples.envs.classes.debug_counter_env``): observations that count steps."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.env.multi_agent_env import MultiAgentDict, MultiAgentEnv


class DebugCounterEnv(gym.Env):
    """The observation is a step counter, ``[t]`` (float32), starting at
    ``config["start_at_t"]`` (0); actions do nothing. Each step adds 1 to ``t`` and pays the
    new ``t % 3``; the episode is truncated after 15 steps."""

    def __init__(self, config: dict[str, Any] | None = None):
        config = config or {}
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(0, 100, (1,), dtype=np.float32)
        self.start_at_t = int(config.get("start_at_t", 0))
        self.i = self.start_at_t

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.i = self.start_at_t
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.i += 1
        return self._obs(), float(self.i % 3), False, self.i >= 15 + self.start_at_t, {}

    def _obs(self) -> np.ndarray:
        return np.array([self.i], dtype=np.float32)


class MultiAgentDebugCounterEnv(MultiAgentEnv):
    """``config["num_agents"]`` agents ``0..n-1``, each with its own step counter ``t_i``.

    Agent ``i`` observes ``[i, 0, 0, 0]`` at reset and ``[i, action[0], action[1], t_i]`` after
    a step (its action is a ``Box((2,))``), gets reward ``t_i % 3`` and is truncated once
    ``t_i > base_episode_len + i`` (``config``; 103 by default); ``"__all__"`` once every agent
    is.
    """

    def __init__(self, config: dict[str, Any]):
        n = int(config["num_agents"])
        self.possible_agents = list(range(n))
        self.agents = list(self.possible_agents)
        super().__init__()
        self.base_episode_len = int(config.get("base_episode_len", 103))
        self.observation_spaces = {
            i: gym.spaces.Box(-np.inf, np.inf, (4,), np.float32) for i in range(n)
        }
        self.action_spaces = {
            i: gym.spaces.Box(-np.inf, np.inf, (2,), np.float32) for i in range(n)
        }
        self.timesteps = [0] * n
        self.truncateds: set[int] = set()

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.timesteps = [0] * len(self.possible_agents)
        self.truncateds = set()
        self.agents = list(self.possible_agents)
        return {i: np.array([i, 0.0, 0.0, 0.0], np.float32) for i in self.possible_agents}, {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        for agent_id, action in action_dict.items():
            i = int(agent_id)  # type: ignore[call-overload]
            self.timesteps[i] += 1
            a = np.asarray(action, np.float32).reshape(-1)
            obs[i] = np.array([i, a[0], a[1], self.timesteps[i]], np.float32)
            rewards[i] = float(self.timesteps[i] % 3)
            terminateds[i] = False
            truncateds[i] = self.timesteps[i] > self.base_episode_len + i
            if truncateds[i]:
                self.truncateds.add(i)
        self.agents = [i for i in self.possible_agents if i not in self.truncateds]
        terminateds["__all__"] = False
        truncateds["__all__"] = len(self.truncateds) == len(self.possible_agents)
        return obs, rewards, terminateds, truncateds, {}


__all__ = ["DebugCounterEnv", "MultiAgentDebugCounterEnv"]
