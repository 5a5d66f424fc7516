"""A two-player turn-based ``MultiAgentEnv`` the multi-agent tests share."""

import gymnasium as gym
import numpy as np

from rljax.env.multi_agent_env import MultiAgentEnv


class TurnGame(MultiAgentEnv):
    """Two players alternate: only the player to move is in the obs dict. From the second move
    on, each move of "a" pays "b" 0.5 (credited to b's last move); after 4 moves "a" wins (+1)
    and "b" loses (-1), both told at the end."""

    def __init__(self, config=None):
        self.possible_agents = ["a", "b"]
        self.agents = list(self.possible_agents)
        box = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.observation_spaces = {"a": box, "b": box}
        self.action_spaces = {"a": gym.spaces.Discrete(3), "b": gym.spaces.Discrete(3)}
        self.t = 0

    def _obs(self, agent):
        return np.array([self.t, 0.0 if agent == "a" else 1.0], np.float32)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {"a": self._obs("a")}, {}

    def step(self, action_dict):
        (mover,) = action_dict  # exactly the player to move
        self.t += 1
        rewards = {"b": 0.5} if mover == "a" and self.t > 1 else {}
        if self.t == 4:
            rewards = {"a": 1.0, "b": -1.0 + rewards.get("b", 0.0)}
            return {}, rewards, {"__all__": True}, {"__all__": False}, {}
        nxt = "b" if mover == "a" else "a"
        return {nxt: self._obs(nxt)}, rewards, {"__all__": False}, {"__all__": False}, {}
