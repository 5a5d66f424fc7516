"""RLlib's ``WindyMazeEnv`` and ``HierarchicalWindyMazeEnv``
(``ray.rllib.examples.envs.classes.windy_maze_env``): a maze where the wind picks the direction
and the agent only decides whether to move, flat and as a two-level multi-agent env."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete, Tuple

from rljax.env.multi_agent_env import MultiAgentDict, MultiAgentEnv

MAP_DATA = """
#########
#S      #
####### #
      # #
      # #
####### #
#F      #
#########"""


class WindyMazeEnv(gym.Env):
    """The maze of ``MAP_DATA`` ("#": wall, "S": start, "F": goal). The observation is
    ``(position [row, col] as float32, wind direction)``, the wind (0: north, 1: east, 2:
    south, 3: west) drawn anew each step. Action 1 moves one cell with the wind (not into a
    wall or off the map), 0 stays. Reaching "F" terminates with reward 100; other steps pay 0;
    after 200 steps the episode ends (terminated and truncated, as RLlib's)."""

    def __init__(self, env_config: dict[str, Any] | None = None):
        self.map = [row for row in MAP_DATA.split("\n") if row]
        self.x_dim, self.y_dim = len(self.map), len(self.map[0])
        cells = {self.map[x][y]: (x, y) for x in range(self.x_dim) for y in range(self.y_dim)}
        self.start_pos, self.end_pos = cells["S"], cells["F"]
        self.observation_space = Tuple([Box(0, 100, shape=(2,), dtype=np.float32), Discrete(4)])
        self.action_space = Discrete(2)
        self.pos = self.start_pos
        self.wind_direction = 0
        self.num_steps = 0

    def _obs(self) -> tuple[np.ndarray, int]:
        return np.array(self.pos, np.float32), self.wind_direction

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[np.ndarray, int], dict[str, Any]]:
        super().reset(seed=seed)
        self.wind_direction = int(self.np_random.integers(4))
        self.pos = self.start_pos
        self.num_steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[tuple[np.ndarray, int], float, bool, bool, dict]:
        if int(action) == 1:
            self.pos = self._get_new_pos(self.pos, self.wind_direction)
        self.num_steps += 1
        self.wind_direction = int(self.np_random.integers(4))
        at_goal = self.pos == self.end_pos
        truncated = self.num_steps >= 200
        return self._obs(), 100.0 * at_goal, at_goal or truncated, truncated, {}

    def _get_new_pos(self, pos: tuple[int, int], direction: int) -> tuple[int, int]:
        """``pos`` moved one cell in ``direction``, or ``pos`` if that cell is a wall or off
        the map."""
        dx, dy = {0: (-1, 0), 1: (0, 1), 2: (1, 0), 3: (0, -1)}[int(direction)]
        x, y = pos[0] + dx, pos[1] + dy
        if 0 <= x < self.x_dim and 0 <= y < self.y_dim and self.map[x][y] != "#":
            return x, y
        return pos


class HierarchicalWindyMazeEnv(MultiAgentEnv):
    """``WindyMazeEnv`` played at two levels.

    ``"high_level_agent"`` observes the maze's observation and picks a goal direction (0..3);
    then a new low-level agent, ``"low_level_<k>"`` for the k-th goal, observes ``(maze
    observation, goal)`` and acts in the maze for up to 25 steps: it is paid +1 for a step that
    moves the way the goal says, -1 for one that moves another way, 0 for no move. After its
    25 steps it terminates and the high-level agent acts again (paid 0); when the maze's episode
    ends the high-level agent gets the maze's reward and ``"__all__"`` ends.
    """

    def __init__(self, env_config: dict[str, Any] | None = None):
        self.flat_env = WindyMazeEnv(env_config)
        self.possible_agents = ["high_level_agent"]
        self.agents = ["high_level_agent"]
        super().__init__()
        maze = self.flat_env.observation_space
        self.observation_spaces = {"high_level_agent": maze}
        self.action_spaces = {"high_level_agent": Discrete(4)}
        self._low_obs_space = Tuple([maze, Discrete(4)])
        self.cur_obs: Any = None
        self.current_goal = 0
        self.steps_remaining_at_level = 0
        self.num_high_level_steps = 0
        self.low_level_agent_id = "low_level_0"

    def get_observation_space(self, agent_id: Any) -> gym.Space:
        return (
            self._low_obs_space
            if agent_id != "high_level_agent"
            else self.flat_env.observation_space
        )

    def get_action_space(self, agent_id: Any) -> gym.Space:
        return Discrete(4) if agent_id == "high_level_agent" else self.flat_env.action_space

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.cur_obs, info = self.flat_env.reset(seed=seed, options=options)
        self.num_high_level_steps = 0
        self.low_level_agent_id = "low_level_0"
        self.agents = ["high_level_agent"]
        return {"high_level_agent": self.cur_obs}, {"high_level_agent": info}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        if len(action_dict) != 1:
            raise ValueError(
                f"HierarchicalWindyMazeEnv takes one agent's action; got {action_dict}"
            )
        if "high_level_agent" in action_dict:
            self.current_goal = int(action_dict["high_level_agent"])
            self.steps_remaining_at_level = 25
            self.num_high_level_steps += 1
            self.low_level_agent_id = f"low_level_{self.num_high_level_steps}"
            self.agents = [self.low_level_agent_id]
            first: MultiAgentDict = {self.low_level_agent_id: (self.cur_obs, self.current_goal)}
            done: MultiAgentDict = {"__all__": False}
            return first, {self.low_level_agent_id: 0.0}, done, dict(done), {}
        (action,) = action_dict.values()
        self.steps_remaining_at_level -= 1
        cur_pos = tuple(int(v) for v in self.cur_obs[0])
        goal_pos = self.flat_env._get_new_pos(cur_pos, self.current_goal)  # type: ignore[arg-type]
        f_obs, f_rew, f_terminated, f_truncated, info = self.flat_env.step(action)
        new_pos = tuple(int(v) for v in f_obs[0])
        self.cur_obs = f_obs
        low = self.low_level_agent_id
        obs: MultiAgentDict = {low: (f_obs, self.current_goal)}
        moved = new_pos != cur_pos
        rew: MultiAgentDict = {low: (1.0 if new_pos == goal_pos else -1.0) if moved else 0.0}
        terminated: MultiAgentDict = {"__all__": False}
        truncated: MultiAgentDict = {"__all__": False}
        if f_terminated or f_truncated:
            terminated["__all__"], truncated["__all__"] = f_terminated, f_truncated
            rew["high_level_agent"] = f_rew
            obs["high_level_agent"] = f_obs
        elif self.steps_remaining_at_level == 0:
            terminated[low], truncated[low] = True, False
            rew["high_level_agent"] = 0.0
            obs["high_level_agent"] = f_obs
            self.agents = ["high_level_agent"]
        return obs, rew, terminated, truncated, {low: info}


__all__ = ["MAP_DATA", "HierarchicalWindyMazeEnv", "WindyMazeEnv"]
