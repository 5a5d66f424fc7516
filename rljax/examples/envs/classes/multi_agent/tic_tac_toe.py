"""Tic-tac-toe for two players taking turns (as RLlib's example env of that name)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.env.multi_agent_env import AgentID, MultiAgentEnv

#: The eight lines of three cells that win: rows, columns, diagonals.
WIN_LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),
    (0, 4, 8),
    (2, 4, 6),
)


class TicTacToe(MultiAgentEnv):
    """Players ``"player1"`` and ``"player2"`` take turns placing marks on a 3x3 board::

        | 0 | 1 | 2 |
        | 3 | 4 | 5 |
        | 6 | 7 | 8 |

    Only the player to move is in the observation dict. Its observation is the board from its
    own perspective, ``Box(-1, 1, (9,), float32)``: +1 its own marks, -1 the opponent's, 0 empty
    (RLlib's example documents this but hands both players the same board, player1's marks +1).
    The action is the cell to mark, ``Discrete(9)``.

    Rewards, as RLlib's example scaled to a win of 1 (RLlib pays 5 for each):

    - a move that completes a line wins: +1.0 to the mover, -1.0 to the opponent, and the episode
      ends (``terminateds["__all__"] = True``);
    - a move that fills the board without a line is a draw: 0.0 to both, and the episode ends;
    - a move on an occupied cell is illegal: -1.0 to the mover, the board stays as it was and
      the turn passes to the opponent (as in RLlib's). With ``config["action_mask"]`` (the
      default) illegal moves cannot happen: the observation is RLlib's action-masking dict
      ``{"action_mask": Box(0, 1, (9,)), "observations": the board}`` (1 for the empty
      cells), rljax's default model gives occupied cells probability 0, and a move on one
      raises ``ValueError``;
    - any other move: 0.0 to the mover.

    The step that ends the game puts both players' rewards in its rewards dict and returns an
    empty observation dict (nobody moves next). Since illegal moves change nothing, a game could
    go on forever; unlike RLlib's, it is cut after ``config["max_moves"]`` moves (default 100)
    with ``truncateds["__all__"] = True``.

    The first mover is ``config["first_player"]`` (``"player1"`` or ``"player2"``), or when that is
    None (default) a random one as in RLlib's, drawn from ``np_random`` (seeded by ``reset``).
    """

    WIN_REWARD = 1.0
    LOSS_REWARD = -1.0
    DRAW_REWARD = 0.0
    ILLEGAL_MOVE_REWARD = -1.0

    def __init__(self, config: dict | None = None):
        """Args:
        config: ``{"first_player": "player1" | "player2" | None, "max_moves": int,
            "action_mask": bool}``.
        """
        super().__init__()
        config = config if config is not None else {}
        self.possible_agents = ["player1", "player2"]
        self.agents = list(self.possible_agents)
        self.first_player: AgentID | None = config.get("first_player")
        if self.first_player is not None and self.first_player not in self.possible_agents:
            raise ValueError(
                f"first_player must be 'player1', 'player2' or None, got {self.first_player!r}"
            )
        self.max_moves = int(config.get("max_moves", 100))
        if self.max_moves < 9:
            raise ValueError(f"max_moves must be >= 9 (a full board), got {self.max_moves}")
        self.action_mask = bool(config.get("action_mask", True))
        board_space = gym.spaces.Box(-1.0, 1.0, (9,), np.float32)
        space: gym.Space = board_space
        if self.action_mask:
            space = gym.spaces.Dict(
                {
                    "action_mask": gym.spaces.Box(0.0, 1.0, (9,), np.float32),
                    "observations": board_space,
                }
            )
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(9) for a in self.possible_agents}
        # player1's marks are +1, player2's -1.
        self.board = np.zeros(9, np.float32)
        self.current_player: AgentID = "player1"
        self.num_moves = 0

    @staticmethod
    def _sign(agent: AgentID) -> float:
        return 1.0 if agent == "player1" else -1.0

    @staticmethod
    def _other(agent: AgentID) -> AgentID:
        return "player2" if agent == "player1" else "player1"

    def _obs(self, agent: AgentID) -> Any:
        """The board from ``agent``'s perspective: its marks +1, the opponent's -1 (with the
        action mask: and 1 for each empty cell)."""
        board = (self.board * self._sign(agent) + 0.0).astype(np.float32)  # + 0.0: no -0.0
        if not self.action_mask:
            return board
        return {"action_mask": (self.board == 0).astype(np.float32), "observations": board}

    def reset(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[AgentID, np.ndarray], dict[AgentID, dict]]:
        """Empties the board; the observation dict holds only the first mover."""
        gym.Env.reset(self, seed=seed)  # seeds self.np_random
        self.board = np.zeros(9, np.float32)
        self.num_moves = 0
        self.agents = list(self.possible_agents)
        if self.first_player is not None:
            self.current_player = self.first_player
        else:
            self.current_player = self.possible_agents[int(self.np_random.integers(2))]
        return {self.current_player: self._obs(self.current_player)}, {}

    def _wins(self, agent: AgentID) -> bool:
        sign = self._sign(agent)
        return any(all(self.board[c] == sign for c in line) for line in WIN_LINES)

    def step(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, action_dict: dict[AgentID, Any]
    ) -> tuple[dict, dict, dict, dict, dict]:
        """The player to move (the only key of ``action_dict``) marks a cell."""
        mover = self.current_player
        if set(action_dict) != {mover}:
            raise ValueError(
                f"it is {mover!r}'s turn; got actions for {sorted(action_dict, key=repr)}"
            )
        cell = int(action_dict[mover])
        if not 0 <= cell < 9:
            raise ValueError(f"a move is a cell 0..8, got {cell}")
        opponent = self._other(mover)
        self.num_moves += 1
        rewards: dict[AgentID, float] = {mover: 0.0}
        terminated = False
        if self.board[cell] != 0 and self.action_mask:
            raise ValueError(f"cell {cell} is taken: the action mask forbids it")
        if self.board[cell] != 0:
            rewards[mover] = self.ILLEGAL_MOVE_REWARD
        else:
            self.board[cell] = self._sign(mover)
            if self._wins(mover):
                rewards = {mover: self.WIN_REWARD, opponent: self.LOSS_REWARD}
                terminated = True
            elif not (self.board == 0).any():
                rewards = {mover: self.DRAW_REWARD, opponent: self.DRAW_REWARD}
                terminated = True
        truncated = not terminated and self.num_moves >= self.max_moves
        self.current_player = opponent
        if terminated or truncated:
            self.agents = []
            obs = {}
        else:
            obs = {opponent: self._obs(opponent)}
        return obs, rewards, {"__all__": terminated}, {"__all__": truncated}, {}
