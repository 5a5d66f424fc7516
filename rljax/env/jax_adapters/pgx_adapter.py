"""Pgx's two-player games (``"pgx:connect_four"``, ``"pgx:tic_tac_toe"``, ``"pgx:go_9x9"``, ...)
as turn-based ``JaxMultiAgentEnv``s.

The agents are ``"player_0"`` and ``"player_1"`` (Pgx's player ids; which one moves first is
Pgx's draw at reset). ``acting(state)`` is the player to move, so multi-agent PPO's rollout
credits each player's rewards to its own last move (``rljax.env.jax_multi_agent``). Each agent
observes the board from its own side (``env.observe(state, player)``), as float32.
``terminated`` is the game's end, ``truncated`` Pgx's step limit; ``env_config`` holds
``pgx.make``'s keyword arguments, and ``"action_mask"`` (default True): each agent observes
RLlib's action-masking Dict, ``{"action_mask": Box(0, 1, (num_actions,)), "observations":
board}``, with Pgx's legal moves as the mask of the player to move (all ones for the other,
whose action is not taken), so rljax's default networks never sample an illegal move.
``"action_mask": False`` gives the board alone, and an illegal move ends the game as Pgx rules
it (the mover loses).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.errors import ConfigError, closest


def two_player_ids() -> list[str]:
    """Pgx's games for two players."""
    import pgx

    not_two = ("2048", "minatar", "bridge_bidding", "sparrow_mahjong")  # 1, 4 and 3 players
    return sorted(e for e in pgx.available_envs() if not e.startswith(not_two))


class PgxEnv:
    """One Pgx game for two players (it follows ``rljax.env.jax_multi_agent``'s protocol,
    turn-based).

    Args:
      env_id: A Pgx id (``two_player_ids()``).
      env_config: ``pgx.make``'s keyword arguments, and ``"action_mask"`` (bool, default
        True: RLlib's action-masking observations).
    """

    def __init__(self, env_id: str, env_config: dict[str, Any]):
        import pgx

        env_config = dict(env_config)
        masked = env_config.pop("action_mask", True)
        if not isinstance(masked, bool):
            raise ConfigError(
                f"pgx env {env_id!r}: env_config['action_mask']={masked!r}; use True (RLlib's "
                "action-masking observations, the default) or False (the board alone)"
            )
        self.masked = masked

        ids = two_player_ids()
        if env_id not in ids:
            raise ConfigError(
                f"pgx env {env_id!r}: rljax runs Pgx's two-player games {ids}{closest(env_id, ids)} (Pgx's "
                "single-player MinAtar and 2048 are single-agent: use gymnax's MinAtar; bridge "
                "bidding and sparrow mahjong have 4 and 3 players)"
            )
        try:
            self.env = pgx.make(env_id, **env_config)
        except TypeError as e:
            raise ConfigError(
                f"pgx env {env_id!r} does not take env_config {sorted(env_config)}: {e}"
            ) from e
        if self.env.num_players != 2:
            raise ConfigError(f"pgx env {env_id!r} has {self.env.num_players} players, not 2")
        self.agents = ["player_0", "player_1"]
        shape = tuple(self.env.observation_shape)
        space: gym.Space = gym.spaces.Box(-np.inf, np.inf, shape, np.float32)
        if masked:
            mask = gym.spaces.Box(0.0, 1.0, (self.env.num_actions,), np.float32)
            space = gym.spaces.Dict({"action_mask": mask, "observations": space})
        self.observation_spaces = dict.fromkeys(self.agents, space)
        actions: gym.spaces.Discrete[Any] = gym.spaces.Discrete(self.env.num_actions)
        self.action_spaces = dict.fromkeys(self.agents, actions)

    def _obs(self, state: Any) -> dict[str, Any]:
        boards = {
            a: jnp.asarray(self.env.observe(state, jnp.int32(i)), jnp.float32)
            for i, a in enumerate(self.agents)
        }
        if not self.masked:
            return boards
        legal = jnp.asarray(state.legal_action_mask, jnp.float32)
        ones = jnp.ones_like(legal)
        return {
            a: {
                "action_mask": jnp.where(state.current_player == i, legal, ones),
                "observations": boards[a],
            }
            for i, a in enumerate(self.agents)
        }

    def reset(self, key: jax.Array) -> tuple[Any, dict[str, Any]]:
        state = self.env.init(key)
        return state, self._obs(state)

    def acting(self, state: Any) -> jax.Array:
        """``[2]`` bool: the player to move."""
        return jnp.arange(2) == state.current_player

    def step(
        self, state: Any, actions: dict[str, Any], key: jax.Array
    ) -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any], dict]:
        moves = jnp.stack([jnp.asarray(actions[a], jnp.int32) for a in self.agents])
        state = self.env.step(state, moves[jnp.clip(state.current_player, 0, 1)], key)
        rewards = {a: jnp.asarray(state.rewards[i], jnp.float32) for i, a in enumerate(self.agents)}
        terminated = dict.fromkeys(self.agents, jnp.asarray(state.terminated, bool))
        truncated = dict.fromkeys(self.agents, jnp.asarray(state.truncated, bool))
        return state, self._obs(state), rewards, terminated, truncated, {}


def make(env_id: str, env_config: dict[str, Any]) -> PgxEnv:
    """``"pgx:<id>"``'s env."""
    return PgxEnv(env_id, env_config)


__all__ = ["PgxEnv", "make", "two_player_ids"]
