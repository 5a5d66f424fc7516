"""RLlib's ``SixRoomEnv`` and ``HierarchicalSixRoomEnv``
(``ray.rllib.examples.envs.classes.six_room_env``): a grid of six rooms joined by doors, flat and
as a two-level (high-level goal setter, low-level walkers) multi-agent env."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rljax.env.multi_agent_env import MultiAgentDict, MultiAgentEnv

# "W": wall, "G": goal, " ": free. The agent starts at (1, 1).
MAPS = {
    "small": [
        "WWWWWWWWWWWWW",
        "W   W   W   W",
        "W       W   W",
        "W   W       W",
        "W WWWW WWWW W",
        "W   W   W   W",
        "W   W       W",
        "W       W  GW",
        "WWWWWWWWWWWWW",
    ],
    "medium": [
        "WWWWWWWWWWWWWWWWWWW",
        "W     W     W     W",
        "W           W     W",
        "W     W           W",
        "W WWWWWWW WWWWWWW W",
        "W     W     W     W",
        "W     W           W",
        "W           W    GW",
        "WWWWWWWWWWWWWWWWWWW",
    ],
    "large": [
        "WWWWWWWWWWWWWWWWWWWWWWWWW",
        "W       W       W       W",
        "W       W       W       W",
        "W               W       W",
        "W       W               W",
        "W       W       W       W",
        "WW WWWWWWWWW WWWWWWWWWW W",
        "W       W       W       W",
        "W       W               W",
        "W       W       W       W",
        "W               W       W",
        "W       W       W      GW",
        "WWWWWWWWWWWWWWWWWWWWWWWWW",
    ],
}


def _map(config: dict[str, Any]) -> list[str]:
    return list(config.get("custom_map", MAPS.get(config.get("map", "small"), MAPS["small"])))


def _next_pos(action: Any, pos: tuple[int, int]) -> tuple[int, int]:
    """0: up, 1: down, 2: left, 3: right."""
    x, y = pos
    return {0: (x - 1, y), 1: (x + 1, y), 2: (x, y - 1)}.get(int(action), (x, y + 1))


class SixRoomEnv(gym.Env):
    """The agent starts at row 1, column 1 and moves up (0), down (1), left (2) or right (3);
    a move into a wall leaves it in place. The observation is its cell, ``row * width + col``.
    Reaching "G" terminates with +10; every other step pays -0.01 and the episode is truncated
    after ``time_limit`` steps.

    ``config``: ``map`` (``"small"``, ``"medium"``, ``"large"``), ``custom_map`` (a list of
    strings, as ``MAPS``), ``time_limit`` (50).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        config = config or {}
        self.map = _map(config)
        self.time_limit = int(config.get("time_limit", 50))
        self.observation_space = gym.spaces.Discrete(len(self.map) * len(self.map[0]))
        self.action_space = gym.spaces.Discrete(4)
        self._agent_pos = (1, 1)
        self._ts = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self._agent_pos = (1, 1)
        self._ts = 0
        return self._agent_discrete_pos, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        nxt = _next_pos(action, self._agent_pos)
        self._ts += 1
        if self.map[nxt[0]][nxt[1]] != "W":
            self._agent_pos = nxt
        if self.map[self._agent_pos[0]][self._agent_pos[1]] == "G":
            return self._agent_discrete_pos, 10.0, True, False, {}
        return self._agent_discrete_pos, -0.01, False, self._ts >= self.time_limit, {}

    @property
    def _agent_discrete_pos(self) -> int:
        return self._agent_pos[0] * len(self.map[0]) + self._agent_pos[1]


class HierarchicalSixRoomEnv(MultiAgentEnv):
    """``SixRoomEnv`` played by a ``"high_level_agent"`` and ``num_low_level_agents`` (3)
    walkers ``"low_level_agent_<i>"``.

    The high-level agent observes the cell and acts ``(target cell, walker index)``; it is
    paid ``dist(cell, target) / map diagonal - 1`` at once. The chosen walker then observes
    ``(cell, target)`` and moves (as ``SixRoomEnv``), paid -0.01 a step, until it reaches the
    target (+1 to it and to the high-level agent), the goal (+10 to the high-level agent, 1 to
    the walker if the goal was its target; the episode terminates) or ``max_steps_low_level``
    (15) steps (-0.01 to the high-level agent); then the high-level agent acts again. The
    episode terminates after ``time_limit`` (50) steps of either level.
    """

    def __init__(self, config: dict[str, Any] | None = None):
        config = config or {}
        self.map = _map(config)
        self.max_steps_low_level = int(config.get("max_steps_low_level", 15))
        self.time_limit = int(config.get("time_limit", 50))
        self.num_low_level_agents = int(config.get("num_low_level_agents", 3))
        walkers = [f"low_level_agent_{i}" for i in range(self.num_low_level_agents)]
        self.possible_agents = ["high_level_agent", *walkers]
        self.agents = list(self.possible_agents)
        super().__init__()
        cells: gym.spaces.Discrete[Any] = gym.spaces.Discrete(len(self.map) * len(self.map[0]))
        self.observation_spaces = {
            "high_level_agent": cells,
            **{w: gym.spaces.Tuple((cells, cells)) for w in walkers},
        }
        self.action_spaces = {
            "high_level_agent": gym.spaces.Tuple(
                (cells, gym.spaces.Discrete(self.num_low_level_agents))
            ),
            **{w: gym.spaces.Discrete(4) for w in walkers},
        }
        self._agent_pos = (1, 1)
        self._low_level_steps = 0
        self._high_level_action: tuple[int, int] = (0, 0)
        self._ts = 0

    @property
    def _agent_discrete_pos(self) -> int:
        return self._agent_pos[0] * len(self.map[0]) + self._agent_pos[1]

    @staticmethod
    def eucl_dist(pos1: int, pos2: int, map: list[str]) -> float:
        """The Euclidean distance of two cells, in RLlib's convention (column ``cell % width``,
        row ``cell // height``)."""
        x1, y1 = pos1 % len(map[0]), pos1 // len(map)
        x2, y2 = pos2 % len(map[0]), pos2 // len(map)
        return float(((x1 - x2) ** 2 + (y1 - y2) ** 2) ** 0.5)

    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self._agent_pos = (1, 1)
        self._low_level_steps = 0
        self._ts = 0
        return {"high_level_agent": self._agent_discrete_pos}, {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        self._ts += 1
        terminateds: MultiAgentDict = {"__all__": self._ts >= self.time_limit}
        truncateds: MultiAgentDict = {"__all__": False}
        here = self._agent_discrete_pos
        if "high_level_agent" in action_dict:
            target, walker = (int(x) for x in action_dict["high_level_agent"])
            self._high_level_action = (target, walker)
            self._low_level_steps = 0
            diagonal = (len(self.map) ** 2 + len(self.map[0]) ** 2) ** 0.5
            reward = self.eucl_dist(here, target, self.map) / diagonal - 1.0
            obs: MultiAgentDict = {f"low_level_agent_{walker}": (here, target)}
            rewards: MultiAgentDict = {"high_level_agent": reward}
            return obs, rewards, terminateds, truncateds, {}
        target, walker = self._high_level_action
        name = f"low_level_agent_{walker}"
        if set(action_dict) != {name}:
            raise ValueError(f"HierarchicalSixRoomEnv expects an action of {name} alone now")
        self._low_level_steps += 1
        nxt = _next_pos(action_dict[name], self._agent_pos)
        if self.map[nxt[0]][nxt[1]] != "W":
            self._agent_pos = nxt
        here = self._agent_discrete_pos
        high: MultiAgentDict = {"high_level_agent": here}
        if self.map[self._agent_pos[0]][self._agent_pos[1]] == "G":
            terminateds["__all__"] = True
            rewards = {"high_level_agent": 10.0, name: float(here == target)}
            return high, rewards, terminateds, truncateds, {}
        if here == target:
            rewards = {"high_level_agent": 1.0, name: 1.0}
            return high, rewards, terminateds, truncateds, {}
        if self._low_level_steps >= self.max_steps_low_level:
            rewards = {name: -0.01, "high_level_agent": -0.01}
            return high, rewards, terminateds, truncateds, {}
        walking: MultiAgentDict = {name: (here, target)}
        return walking, {name: -0.01}, terminateds, truncateds, {}


__all__ = ["MAPS", "HierarchicalSixRoomEnv", "SixRoomEnv"]
