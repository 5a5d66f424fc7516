"""RLlib's ``MultiAgentConnect4``
(``ray.rllib.examples.envs.classes.multi_agent.pettingzoo_connect4``): PettingZoo's Connect
Four as a ``MultiAgentEnv`` (``pip install pettingzoo``)."""

from __future__ import annotations

import copy
import warnings
from typing import Any

from rljax.env.wrappers.pettingzoo_env import PettingZooEnv


def _copy_game(env: Any) -> Any:
    """A deep copy of a PettingZoo game with its state. (``copy.deepcopy`` alone makes a new,
    unreset game: PettingZoo's envs pickle as their constructor arguments, ``EzPickle``.)"""
    out = object.__new__(type(env))
    out.__dict__.update(copy.deepcopy(env.__dict__))
    return out


class MultiAgentConnect4(PettingZooEnv):
    """PettingZoo's ``connect_four_v3`` (or the AEC game ``env``), played by
    ``player_0`` and ``player_1`` in turn through rljax's ``PettingZooEnv``: each observes
    ``{"observation": int8 [6, 7, 2], "action_mask": int8 [7]}`` on its turn and drops a
    piece into one of the 7 columns; a win pays +1 to the winner and -1 to the loser and ends
    the episode. ``get_state()`` / ``set_state(state)`` copy and restore the game
    (``set_state`` returns the observation of the player to move).

    Args:
      config: Kept as ``config``; the game takes no settings.
      env: Another PettingZoo AEC game whose agents share one observation and one action
        space (default: ``connect_four_v3.raw_env()``).
    """

    def __init__(self, config: dict[str, Any] | None = None, env: Any = None):
        if env is None:
            with warnings.catch_warnings():  # PettingZoo's notice about its old import API
                warnings.filterwarnings(
                    "ignore", "The old environment creation API", DeprecationWarning
                )
                from pettingzoo.classic.connect_four_v3 import raw_env

            env = raw_env()
        super().__init__(env)
        self.config = config
        first = env.possible_agents[0]
        self.observation_space = env.observation_space(first)
        self.action_space = env.action_space(first)
        for agent in env.possible_agents:
            if env.observation_space(agent) != self.observation_space:
                raise ValueError("MultiAgentConnect4: every agent must share one observation space")
            if env.action_space(agent) != self.action_space:
                raise ValueError("MultiAgentConnect4: every agent must share one action space")

    @property
    def agent_selection(self) -> Any:
        """The agent to move."""
        return self.env.agent_selection

    def get_state(self) -> Any:
        """A copy of the game, board and turn included."""
        return _copy_game(self.env)

    def set_state(self, state: Any) -> Any:
        """Continues from a copy of ``state``; returns the observation of the agent to move."""
        self.env = _copy_game(state)
        return self.env.observe(self.env.agent_selection)


__all__ = ["MultiAgentConnect4"]
