"""Rock-paper-scissors for two simultaneous players (as RLlib's example env of that name)."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from rljax.env.multi_agent_env import AgentID, MultiAgentEnv


class RockPaperScissors(MultiAgentEnv):
    """Two players, ``"player1"`` and ``"player2"``, play rock-paper-scissors simultaneously.

    Both players act at every step (both are in every observation dict). Each move is zero-sum:
    the winner gets +1.0, the loser -1.0, a draw 0.0 to both. After ``config["num_moves"]``
    moves (default 10, as RLlib's) the episode ends with ``terminateds["__all__"] = True``; that
    last step's observation dict is empty (nobody moves next; a terminal observation is never
    used) and its rewards dict holds both players' rewards for the last move.

    Actions are ``Discrete(3)``: 0 rock, 1 paper, 2 scissors.

    Observations differ from RLlib's (``Discrete(3)``, the opponent's last move): rljax's
    vectorized multi-agent sampling needs numpy observations of a ``Box`` space, so each player
    observes the opponent's last move one-hot, ``Box(0, 1, (3,), float32)``, all zeros at reset
    (before any move).
    """

    ROCK = 0
    PAPER = 1
    SCISSORS = 2

    #: (move1, move2) -> (reward1, reward2).
    WIN_MATRIX: ClassVar[dict[tuple[int, int], tuple[float, float]]] = {
        (ROCK, ROCK): (0.0, 0.0),
        (ROCK, PAPER): (-1.0, 1.0),
        (ROCK, SCISSORS): (1.0, -1.0),
        (PAPER, ROCK): (1.0, -1.0),
        (PAPER, PAPER): (0.0, 0.0),
        (PAPER, SCISSORS): (-1.0, 1.0),
        (SCISSORS, ROCK): (-1.0, 1.0),
        (SCISSORS, PAPER): (1.0, -1.0),
        (SCISSORS, SCISSORS): (0.0, 0.0),
    }

    def __init__(self, config: dict | None = None):
        """Args:
        config: ``{"num_moves": int}`` (default 10): the moves per episode.
        """
        super().__init__()
        config = config if config is not None else {}
        self.num_moves_per_episode = int(config.get("num_moves", 10))
        if self.num_moves_per_episode < 1:
            raise ValueError(f"num_moves must be >= 1, got {self.num_moves_per_episode}")
        self.possible_agents = ["player1", "player2"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {
            a: gym.spaces.Box(0.0, 1.0, (3,), np.float32) for a in self.possible_agents
        }
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.possible_agents}
        self.num_moves = 0

    @staticmethod
    def _one_hot(move: int | None) -> np.ndarray:
        obs = np.zeros(3, np.float32)
        if move is not None:
            obs[move] = 1.0
        return obs

    def reset(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[AgentID, np.ndarray], dict[AgentID, dict]]:
        """Starts a game: both players observe zeros (no move yet)."""
        gym.Env.reset(self, seed=seed)  # seeds self.np_random
        self.num_moves = 0
        self.agents = list(self.possible_agents)
        return {a: self._one_hot(None) for a in self.possible_agents}, {}

    def step(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, action_dict: dict[AgentID, Any]
    ) -> tuple[dict, dict, dict, dict, dict]:
        """Plays one move of both players; each then observes the other's move."""
        move1, move2 = int(action_dict["player1"]), int(action_dict["player2"])
        for move in (move1, move2):
            if move not in (self.ROCK, self.PAPER, self.SCISSORS):
                raise ValueError(f"a move is 0 (rock), 1 (paper) or 2 (scissors), got {move}")
        self.num_moves += 1
        r1, r2 = self.WIN_MATRIX[move1, move2]
        done = self.num_moves >= self.num_moves_per_episode
        obs = {"player1": self._one_hot(move2), "player2": self._one_hot(move1)}
        if done:
            obs, self.agents = {}, []
        return (
            obs,
            {"player1": r1, "player2": r2},
            {"__all__": done},
            {"__all__": False},
            {},
        )
