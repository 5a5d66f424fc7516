"""Env-to-module connectors on multi-agent PPO: stateless pieces, applied on the host.

A multi-agent env is stepped by Python on the host (``rljax.env.multi_agent_vector``), and its
observations are dicts keyed by agent id, so the pieces run there, on each observation dict
the env returns, before the agents' rows are gathered for the jitted act step, as RLlib runs
them per env step. The env the runners (and evaluation) step is the user's env wrapped in
``ConnectedMultiAgentEnv``, whose spaces are the pieces' output spaces, so the modules, the
batches and the learner see only the transformed observations (one copy, as on the other
paths).

The pieces, in the order given:

- ``FlattenObservations(multi_agent=True, agent_ids=None)``: each listed agent's observation
  (all agents for None) flattened as the single-agent connector does (Box leaves flattened,
  Discrete and MultiDiscrete one-hot, Dict keys sorted);
- a ``SingleAgentObservationPreprocessor`` subclass: applied to each agent's observation, with
  that agent's spaces;
- a ``MultiAgentObservationPreprocessor`` subclass: applied to the whole dict
  (``preprocess(observations, episode)``), its output space a ``Dict`` keyed by agent id.

Pieces with a state learned from data (``MeanStdFilter``) are refused on multi-agent PPO.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import jax
import numpy as np

from rljax.connectors.env_to_module.connector import connector_from_spec, connector_items
from rljax.connectors.env_to_module.flatten_observations import FlattenObservations, _leaves
from rljax.connectors.env_to_module.observation_preprocessor import (
    MultiAgentObservationPreprocessor,
    SingleAgentObservationPreprocessor,
    _NoEpisode,
)
from rljax.env.multi_agent_env import MultiAgentEnv
from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError

AgentSpaces = dict[Any, gym.Space]


def flatten_observation(space: gym.Space, obs: Any) -> np.ndarray:
    """One observation of ``space`` as ``FlattenObservations`` flattens it, in NumPy."""
    parts = []
    for leaf, x in zip(_leaves(space), jax.tree.leaves(obs), strict=True):
        x = np.asarray(x)
        if isinstance(leaf, gym.spaces.Discrete):
            one = np.zeros(int(leaf.n), np.float32)
            one[int(x) - int(leaf.start)] = 1.0
            parts.append(one)
        elif isinstance(leaf, gym.spaces.MultiDiscrete):
            for value, n, start in zip(
                x.reshape(-1), leaf.nvec.reshape(-1), leaf.start.reshape(-1), strict=True
            ):
                one = np.zeros(int(n), np.float32)
                one[int(value) - int(start)] = 1.0
                parts.append(one)
        else:
            parts.append(x.astype(np.float32).reshape(-1))
    return np.concatenate(parts) if parts else np.zeros((0,), np.float32)


class _Piece:
    """One piece bound to the agents' spaces: ``spaces`` (the output) and ``__call__``."""

    spaces: AgentSpaces

    def __call__(self, obs: dict[Any, Any]) -> dict[Any, Any]:
        raise NotImplementedError


class _Flatten(_Piece):
    def __init__(self, piece: FlattenObservations, spaces: AgentSpaces):
        ids = piece.agent_ids
        unknown = [a for a in ids or () if a not in spaces]
        if unknown:
            raise ConfigError(
                f"FlattenObservations(agent_ids={sorted(map(str, ids or ()))}) names agents "
                f"{unknown} the env does not have; its agents are {list(spaces)}"
            )
        self.agents = set(spaces) if ids is None else set(ids)
        self.inputs = dict(spaces)
        for agent in self.agents:
            piece.check_space(spaces[agent])
        self.spaces = {
            a: piece.output_space(s) if a in self.agents else s for a, s in spaces.items()
        }

    def __call__(self, obs: dict[Any, Any]) -> dict[Any, Any]:
        return {
            a: flatten_observation(self.inputs[a], o) if a in self.agents else o
            for a, o in obs.items()
        }


class _PerAgent(_Piece):
    def __init__(
        self, piece: SingleAgentObservationPreprocessor, spaces: AgentSpaces, acts: AgentSpaces
    ):
        self.piece = piece
        self.spaces = {
            a: piece.recompute_output_observation_space(s, acts.get(a)) for a, s in spaces.items()
        }

    def __call__(self, obs: dict[Any, Any]) -> dict[Any, Any]:
        episode = _NoEpisode(type(self.piece).__name__)
        return {a: self.piece.preprocess(o, episode) for a, o in obs.items()}


class _WholeDict(_Piece):
    def __init__(
        self, piece: MultiAgentObservationPreprocessor, spaces: AgentSpaces, acts: AgentSpaces
    ):
        self.piece = piece
        name = type(piece).__name__
        out = piece.recompute_output_observation_space(
            gym.spaces.Dict(spaces), gym.spaces.Dict(acts)
        )
        if not isinstance(out, gym.spaces.Dict) or set(out.spaces) != set(spaces):
            raise ConfigError(
                f"{name}.recompute_output_observation_space returned {describe(out)}; a "
                f"multi-agent preprocessor returns a gymnasium.spaces.Dict keyed by the env's "
                f"agents {list(spaces)}"
            )
        self.spaces = dict(out.spaces)

    def __call__(self, obs: dict[Any, Any]) -> dict[Any, Any]:
        return dict(self.piece.preprocess(obs, _NoEpisode(type(self.piece).__name__)))


class MultiAgentConnectors:
    """The pieces of a multi-agent ``env_to_module_connector``, bound to the env's spaces.

    Args:
      pieces: The connector pieces, in order.
      observation_spaces, action_spaces: Each agent's spaces, as the env gives them.
    """

    def __init__(
        self, pieces: list[Any], observation_spaces: AgentSpaces, action_spaces: AgentSpaces
    ):
        self.pieces = list(pieces)
        self.input_spaces = dict(observation_spaces)
        bound: list[_Piece] = []
        spaces = dict(observation_spaces)
        for i, piece in enumerate(self.pieces):
            if isinstance(piece, dict):
                piece = self.pieces[i] = connector_from_spec(piece)
            bound.append(_bind(piece, spaces, action_spaces, i))
            spaces = bound[-1].spaces
        self._bound = bound
        self.observation_spaces = spaces

    def check(self, observations: dict[Any, Any]) -> None:
        """One call on an observation dict of the env (its first reset's), before anything
        compiles: what each agent gets must have its output space's shape.

        Raises:
          ConfigError: An agent's transformed observation does not fit its output space.
        """
        out = self(observations)
        for agent, space in self.observation_spaces.items():
            if agent not in observations:
                continue
            got = np.asarray(out[agent]) if agent in out else None
            if isinstance(space, gym.spaces.Box) and (got is None or got.shape != space.shape):
                raise ConfigError(
                    f"env_to_module_connector gave agent {agent!r} an observation of shape "
                    f"{None if got is None else got.shape}; its output space says {space.shape}"
                )

    def __call__(self, obs: dict[Any, Any]) -> dict[Any, Any]:
        for piece in self._bound:
            obs = piece(obs)
        return obs

    def config_value(self) -> list[Any]:
        """What the config keeps: rljax's pieces as specs, a user's classes as the objects."""
        return [p.spec() if isinstance(p, FlattenObservations) else p for p in self.pieces]


def _bind(piece: Any, spaces: AgentSpaces, acts: AgentSpaces, i: int) -> _Piece:
    if isinstance(piece, FlattenObservations):
        return _Flatten(piece, spaces)
    if isinstance(piece, MultiAgentObservationPreprocessor):
        return _WholeDict(piece, spaces, acts)
    if isinstance(piece, SingleAgentObservationPreprocessor):
        return _PerAgent(piece, spaces, acts)
    raise ConfigError(
        f"env_to_module_connector item {i} is {describe(piece)}; multi-agent PPO runs stateless "
        "connectors on each env step's observations: FlattenObservations(multi_agent=True), "
        "SingleAgentObservationPreprocessor and MultiAgentObservationPreprocessor subclasses "
        "(MeanStdFilter keeps statistics learned from data and runs on single-agent PPO, "
        "IMPALA and APPO)"
    )


def build_multi_agent_connectors(
    value: Any, observation_spaces: AgentSpaces, action_spaces: AgentSpaces
) -> MultiAgentConnectors | None:
    """The pieces of a checked ``env_to_module_connector`` setting for an env with these
    agents' spaces (RLlib's function form is called with the Dict spaces), or None."""
    if value is None:
        return None
    obs_dict, act_dict = gym.spaces.Dict(observation_spaces), gym.spaces.Dict(action_spaces)
    items = connector_items(value, obs_dict, act_dict)
    if not items:
        return None
    return MultiAgentConnectors(list(items), observation_spaces, action_spaces)


class ConnectedMultiAgentEnv(MultiAgentEnv):
    """A multi-agent env whose observations pass through ``connectors``; its observation
    spaces are theirs. Anything else is the wrapped env's (``env``)."""

    def __init__(self, env: MultiAgentEnv, connectors: MultiAgentConnectors):
        self.env = env
        self.connectors = connectors
        self.possible_agents = list(env.possible_agents)
        self.observation_spaces = dict(connectors.observation_spaces)
        self.action_spaces = {a: env.get_action_space(a) for a in self.possible_agents}
        super().__init__()

    @property
    def agents(self) -> list[Any]:  # type: ignore[override]
        return list(self.env.agents)

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return self.connectors(obs), infos

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:  # type: ignore[override]
        obs, rewards, terminateds, truncateds, infos = self.env.step(action_dict)
        return self.connectors(obs), rewards, terminateds, truncateds, infos

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("env", "connectors"):
            raise AttributeError(name)
        return getattr(self.env, name)


class ConnectedCreator:
    """``creator(context)`` of the user's env, each env wrapped with the connectors."""

    def __init__(self, creator: Callable[[Any], Any], connectors: MultiAgentConnectors):
        self.creator, self.connectors = creator, connectors

    def __call__(self, context: Any) -> Any:
        env = self.creator(context)
        if not isinstance(env, MultiAgentEnv):
            return env  # the caller says what is wrong with it
        return ConnectedMultiAgentEnv(env, self.connectors)


__all__ = [
    "ConnectedCreator",
    "ConnectedMultiAgentEnv",
    "MultiAgentConnectors",
    "build_multi_agent_connectors",
    "flatten_observation",
]
