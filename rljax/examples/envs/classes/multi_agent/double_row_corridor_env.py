"""RLlib's ``DoubleRowCorridorEnv``
(``ray.rllib.examples.envs.classes.multi_agent.double_row_corridor_env``): two agents cross a
two-row corridor to each other's start, with a bonus for meeting on the way."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.env.multi_agent_env import AgentID, MultiAgentDict, MultiAgentEnv


class DoubleRowCorridorEnv(MultiAgentEnv):
    """A 2 x ``length`` grid (``config["length"]``, 15). ``agent_0`` starts at ``[0, 0]`` and
    its goal is ``[0, length - 1]``; ``agent_1`` starts at ``[1, length - 1]``, goal ``[1,
    0]``. Actions: 0 up, 1 down, 2 left, 3 right (a move off the grid stays). Observations are
    the agent's ``[row, col]`` (int32).

    Every agent not yet done is paid -0.1 per step; the first time both stand on one cell
    (before either is done) both get +5; reaching its goal pays +10 and terminates that agent.
    ``"__all__"`` terminates once both are done.
    """

    def __init__(self, config: dict[str, Any] | None = None):
        config = config or {}
        self.length = int(config.get("length", 15))
        self.possible_agents = ["agent_0", "agent_1"]
        self.agents = list(self.possible_agents)
        super().__init__()
        self._obs_space = gym.spaces.Box(0, self.length - 1, shape=(2,), dtype=np.int32)
        self._act_space: gym.spaces.Discrete[Any] = gym.spaces.Discrete(4)
        self.agent_pos: dict[str, list[int]] = {}
        self.goals: dict[str, list[int]] = {}
        self.terminateds: dict[str, bool] = {}
        self.collided = False

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        return self._obs_space

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        return self._act_space

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.agent_pos = {"agent_0": [0, 0], "agent_1": [1, self.length - 1]}
        self.goals = {"agent_0": [0, self.length - 1], "agent_1": [1, 0]}
        self.terminateds = {a: False for a in self.agent_pos}
        self.collided = False
        self.agents = list(self.possible_agents)
        return self._obs(), {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        rewards: dict[str, float] = {a: -0.1 for a in self.agent_pos if not self.terminateds[a]}
        for agent_id, action in action_dict.items():
            row, col = self.agent_pos[agent_id]  # type: ignore[index]
            a = int(action)
            if a == 0 and row > 0:
                row -= 1
            elif a == 1 and row < 1:
                row += 1
            elif a == 2 and col > 0:
                col -= 1
            elif a == 3 and col < self.length - 1:
                col += 1
            self.agent_pos[agent_id] = [row, col]  # type: ignore[index]
        obs = self._obs()
        meet = self.agent_pos["agent_0"] == self.agent_pos["agent_1"]
        if meet and not any(self.terminateds.values()) and not self.collided:
            rewards["agent_0"] += 5
            rewards["agent_1"] += 5
            self.collided = True
        for agent_id, pos in self.agent_pos.items():
            if pos == self.goals[agent_id] and not self.terminateds[agent_id]:
                rewards[agent_id] += 10
                self.terminateds[agent_id] = True
        terminateds: MultiAgentDict = {a: done for a, done in self.terminateds.items()}
        terminateds["__all__"] = all(self.terminateds.values())
        self.agents = [a for a in self.agent_pos if not self.terminateds[a]]
        paid: MultiAgentDict = {a: r for a, r in rewards.items()}
        return obs, paid, terminateds, {"__all__": False}, {}

    def _obs(self) -> MultiAgentDict:
        return {
            a: np.array(pos, np.int32)
            for a, pos in self.agent_pos.items()
            if not self.terminateds[a]
        }


__all__ = ["DoubleRowCorridorEnv"]
