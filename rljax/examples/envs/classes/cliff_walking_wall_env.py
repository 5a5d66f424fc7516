"""RLlib's ``CliffWalkingWallEnv`` (``ray.rllib.examples.envs.classes.cliff_walking_wall_env``):
Gymnasium's CliffWalking with a wall where the cliff was."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium import spaces

ACTION_UP = 0
ACTION_RIGHT = 1
ACTION_DOWN = 2
ACTION_LEFT = 3

START, GOAL, COLS = 36, 47, 12


class CliffWalkingWallEnv(gym.Env):
    """A 4x12 grid; the state is ``row * 12 + col``. The episode starts at 36 (bottom left) and
    terminates at 47 (bottom right), paying +10 there and -1 on every other step. The cells
    37..46 between them are a wall: a move into it (right from the start, down from the row
    above, left from the goal) or off the grid leaves the agent where it is.

    ``seed`` seeds the spaces' sampling (RLlib's argument).
    """

    def __init__(self, seed: int = 42) -> None:
        self.observation_space = spaces.Discrete(48)
        self.action_space = spaces.Discrete(4)
        self.observation_space.seed(seed)
        self.action_space.seed(seed)
        self.position = START

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self.position = START
        return self.position, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        row, col = divmod(self.position, COLS)
        a = int(action)
        if a == ACTION_UP:
            row = max(row - 1, 0)
        elif a == ACTION_RIGHT:
            if self.position != START:
                col = min(col + 1, COLS - 1)
        elif a == ACTION_DOWN:
            if not 25 <= self.position <= 34:  # the row above the wall
                row = min(row + 1, 3)
        elif a == ACTION_LEFT:
            if self.position != GOAL:
                col = max(col - 1, 0)
        else:
            raise ValueError(f"action {action!r} not in {self.action_space}")
        self.position = row * COLS + col
        done = self.position == GOAL
        return self.position, 10.0 if done else -1.0, done, False, {}


__all__ = [
    "ACTION_DOWN",
    "ACTION_LEFT",
    "ACTION_RIGHT",
    "ACTION_UP",
    "CliffWalkingWallEnv",
]
