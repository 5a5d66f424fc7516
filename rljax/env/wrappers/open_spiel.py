"""OpenSpiel games as rljax ``MultiAgentEnv`` s: ``OpenSpielEnv``, at RLlib's path and with
its constructor (``ray.rllib.env.wrappers.open_spiel``), so a ported script changes only its
imports::

    import pyspiel
    from rljax.env.wrappers.open_spiel import OpenSpielEnv

    register_env("connect_four", lambda cfg: OpenSpielEnv(pyspiel.load_game("connect_four")))

The game's players are agents ``0 .. num_players - 1``; each observes the game's observation
tensor (a float32 ``Box``) and picks one of ``num_distinct_actions`` (a ``Discrete``). As in
RLlib's wrapper:

* A sequential game (``Dynamics.SEQUENTIAL``) returns the observation of the player to move
  only, and takes that player's action; a simultaneous one returns and takes every player's.
  Chance nodes (dice, deals) are resolved by sampling their outcomes.
* An illegal action is replaced by a uniformly drawn legal one and costs its player -0.1 (in
  simultaneous games too, where RLlib's wrapper lets OpenSpiel raise). The episode terminates
  when the game does; it is never truncated.

Each step's rewards are every player's rewards of that step (``state.rewards()``), whose sum
over the game is its returns. RLlib's wrapper gives the returns so far (``state.returns()``)
at every step instead, which is the same for games that pay only at the end (connect four,
chess, go, ...) and counts a game's earlier rewards again at each later step otherwise.

``pyspiel`` is imported when a game is loaded by the caller, so ``rljax`` imports without it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from rljax.env.multi_agent_env import MultiAgentEnv

# RLlib's penalty for an illegal action (which is replaced by a random legal one).
ILLEGAL_ACTION_PENALTY = -0.1


class OpenSpielEnv(MultiAgentEnv):
    """An OpenSpiel game (``pyspiel.load_game(name)``) as a multi-agent env.

    Args:
      env: The loaded game (a ``pyspiel.Game``).

    Raises:
      TypeError: ``env`` is not a game (it has no ``new_initial_state``).
    """

    def __init__(self, env: Any):
        super().__init__()
        if not callable(getattr(env, "new_initial_state", None)):
            raise TypeError(
                f"OpenSpielEnv(env={type(env).__name__}): pass a loaded OpenSpiel game, "
                "pyspiel.load_game('connect_four')"
            )
        self.env = env
        self.agents = self.possible_agents = list(range(env.num_players()))
        self.type = env.get_type()
        self.state: Any = None
        self._rng = np.random.default_rng()
        size = (env.observation_tensor_size(),)
        self.observation_spaces = {
            a: gym.spaces.Box(-np.inf, np.inf, size, np.float32) for a in self.possible_agents
        }
        self.action_spaces = {
            a: gym.spaces.Discrete(env.num_distinct_actions()) for a in self.possible_agents
        }
        # RLlib's form too: Dict spaces keyed by player.
        self.observation_space = gym.spaces.Dict(self.observation_spaces)  # type: ignore[arg-type]
        self.action_space = gym.spaces.Dict(self.action_spaces)  # type: ignore[arg-type]

    @property
    def _sequential(self) -> bool:
        return str(self.type.dynamics) == "Dynamics.SEQUENTIAL"

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[Any, np.ndarray], dict[Any, Any]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.state = self.env.new_initial_state()
        return self._get_obs(), {}

    def step(  # type: ignore[override]  # per-agent dicts: see MultiAgentEnv
        self, action: dict[Any, Any]
    ) -> tuple[dict, dict[Any, float], dict[Any, bool], dict[Any, bool], dict]:
        if self.state is None:
            raise RuntimeError("OpenSpielEnv.step() before reset()")
        self._solve_chance_nodes()
        penalties: dict[Any, float] = {}
        if self._sequential:
            player = self.state.current_player()
            if player not in action:
                raise ValueError(
                    f"OpenSpielEnv.step({list(action)}): it is player {player}'s move; the "
                    "action dict must hold its action"
                )
            move = int(action[player])
            legal = self.state.legal_actions()
            if move not in legal:  # checked here: OpenSpiel would print its error to stderr
                move = int(self._rng.choice(legal))
                penalties[player] = ILLEGAL_ACTION_PENALTY
            self.state.apply_action(move)
        else:
            moves = []
            for agent in self.possible_agents:
                move, legal = int(action[agent]), self.state.legal_actions(agent)
                if move not in legal:
                    move = int(self._rng.choice(legal))
                    penalties[agent] = ILLEGAL_ACTION_PENALTY
                moves.append(move)
            self.state.apply_actions(moves)
        obs = self._get_obs()
        rewards: dict[Any, float] = {a: float(r) for a, r in enumerate(self.state.rewards())}
        for agent, penalty in penalties.items():
            rewards[agent] += penalty
        done = bool(self.state.is_terminal())
        terminateds: dict[Any, bool] = {a: done for a in self.possible_agents}
        terminateds["__all__"] = done
        truncateds: dict[Any, bool] = {a: False for a in self.possible_agents}
        truncateds["__all__"] = False
        return obs, rewards, terminateds, truncateds, {}

    def render(self) -> None:
        """Prints the game's state (OpenSpiel's text form)."""
        print(self.state)

    def _get_obs(self) -> dict[Any, np.ndarray]:
        self._solve_chance_nodes()
        if self.state.is_terminal():
            return {}
        if self._sequential:
            player = self.state.current_player()
            return {player: np.asarray(self.state.observation_tensor(), np.float32).reshape(-1)}
        return {
            a: np.asarray(self.state.observation_tensor(a), np.float32).reshape(-1)
            for a in self.possible_agents
        }

    def _solve_chance_nodes(self) -> None:
        while self.state.is_chance_node():
            actions, probs = zip(*self.state.chance_outcomes(), strict=True)
            self.state.apply_action(int(self._rng.choice(actions, p=probs)))


__all__ = ["ILLEGAL_ACTION_PENALTY", "OpenSpielEnv"]
