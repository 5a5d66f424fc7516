"""Rock-paper-scissors heuristics (RLlib's
``ray.rllib.examples.rl_modules.classes.rock_paper_scissors_heuristic_rlm``), as pure jax
forward passes over a batch of observations.

Observations are the opponent's last move: rljax's ``RockPaperScissors`` gives it one-hot,
``Box(0, 1, (3,))`` (all zeros before the first move); RLlib's ``Discrete(4)`` integers (3 before
the first move) are read too.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from rljax.algorithms.algorithm import RLModule
from rljax.core.columns import Columns


def opponent_last_move(obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(move [B] int32, whether there was one [B] bool)`` from one-hot or integer obs."""
    obs = jnp.asarray(obs)
    if obs.ndim == 2:  # one-hot [B, 3]
        return jnp.argmax(obs, axis=-1).astype(jnp.int32), obs.sum(axis=-1) > 0
    move = obs.reshape(obs.shape[0]).astype(jnp.int32)
    return move, move < 3


class BeatLastHeuristicRLM(RLModule):
    """Plays the move that beats the opponent's last one (rock -> paper -> scissors -> rock);
    a random move before the opponent has moved."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        move, seen = opponent_last_move(batch[Columns.OBS])
        random = jax.random.randint(kwargs["rng"], move.shape, 0, 3)
        return {Columns.ACTIONS: jnp.where(seen, (move + 1) % 3, random)}


class AlwaysSameHeuristicRLM(RLModule):
    """Always plays the same move: ``model_config["action"]`` (0 rock, 1 paper, 2 scissors;
    default 0).

    RLlib's module picks its move at random at each episode's start and keeps it for the
    episode, in host state per env copy; a pure jitted forward pass has no such state, so this
    one keeps one move for its life.
    """

    def setup(self) -> None:
        self.action = int(self.model_config.get("action", 0))
        if self.action not in (0, 1, 2):
            raise ValueError(
                f"AlwaysSameHeuristicRLM model_config['action']={self.action}; allowed: 0, 1, 2"
            )

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        move, _ = opponent_last_move(batch[Columns.OBS])
        return {Columns.ACTIONS: jnp.full(move.shape, self.action, jnp.int32)}


__all__ = ["AlwaysSameHeuristicRLM", "BeatLastHeuristicRLM"]
