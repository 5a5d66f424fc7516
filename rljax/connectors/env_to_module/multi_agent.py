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

- ``MeanStdFilter(multi_agent=True)``: RLlib's running mean and standard deviation per agent
  id, each observation folded into its agent's statistics before it is normalised (RLlib's
  runners do the same). The statistics are shared by every copy of the env the runner threads
  step (RLlib's runners each keep their own and merge them after each iteration), saved in
  checkpoints, and frozen for an evaluation (a copy taken when it starts, as RLlib's evaluation
  runners get the training runners' state).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import jax
import numpy as np

from rljax.connectors.env_to_module.connector import connector_from_spec, connector_items
from rljax.connectors.env_to_module.flatten_observations import FlattenObservations, _leaves
from rljax.connectors.env_to_module.mean_std_filter import SMALL_NUMBER, MeanStdFilter
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
        outs = list(self.spaces.values())
        if outs and all(o == outs[0] for o in outs):  # one space for every agent: RLlib's
            piece.observation_space = outs[0]  # attribute, which preprocess() may read

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
        piece.observation_space = out
        piece.action_space = gym.spaces.Dict(acts)

    def __call__(self, obs: dict[Any, Any]) -> dict[Any, Any]:
        return dict(self.piece.preprocess(obs, _NoEpisode(type(self.piece).__name__)))


class _MeanStd(_Piece):
    """``MeanStdFilter(multi_agent=True)``: RLlib 2.60's ``MeanStdFilter`` per agent (its
    ``RunningStat``: count, mean and the sum of squared deviations in float64, the variance 0
    until two observations), each observation folded in before it is normalised, as RLlib's
    runners do. Thread-safe: the runner threads share it."""

    def __init__(self, piece: MeanStdFilter, spaces: AgentSpaces):
        for space in spaces.values():
            piece.check_space(space)
        self.piece = piece
        self.spaces = {a: piece.output_space(s) for a, s in spaces.items()}
        self.stats: dict[Any, dict[str, np.ndarray]] = {
            a: {
                "count": np.zeros((), np.int64),
                "mean": np.zeros(tuple(s.shape or ()), np.float64),
                "m2": np.zeros(tuple(s.shape or ()), np.float64),
            }
            for a, s in spaces.items()
        }
        self.updating = piece.update_stats
        self.lock = threading.Lock()

    def __call__(self, obs: dict[Any, Any]) -> dict[Any, Any]:
        with self.lock:
            return {a: self._one(self.stats[a], o) for a, o in obs.items()}

    def _one(self, stat: dict[str, np.ndarray], obs: Any) -> np.ndarray:
        x = np.asarray(obs, np.float64)
        if self.updating:
            n = int(stat["count"]) + 1
            if n == 1:
                stat["mean"] = x.copy()
            else:
                delta = x - stat["mean"]
                stat["mean"] = stat["mean"] + delta / n
                stat["m2"] = stat["m2"] + delta * (x - stat["mean"])
            stat["count"] = np.asarray(n, np.int64)
        n = int(stat["count"])
        # RLlib's RunningStat.var: 0 for n <= 1, else m2 / (n - 1), in float32.
        var = np.zeros_like(stat["mean"]) if n <= 1 else stat["m2"] / (n - 1.0)
        std = np.sqrt(np.maximum(0.0, var.astype(np.float32)))
        piece = self.piece
        if piece.de_mean_to_zero:
            x = x - stat["mean"]
        if piece.de_std_to_one:
            x = x / (std + SMALL_NUMBER)
        if piece.clip_by_value is not None:
            x = np.clip(x, -float(piece.clip_by_value), float(piece.clip_by_value))
        return x.astype(np.float32)

    def frozen(self) -> _MeanStd:
        """A copy with the statistics as they are now, not updated."""
        new = copy.copy(self)
        new.stats = self.get_state()  # copies
        new.updating = False
        new.lock = threading.Lock()
        return new

    def get_state(self) -> dict[Any, dict[str, np.ndarray]]:
        """Each agent's statistics (copies): ``{agent: {"count", "mean", "m2"}}``."""
        with self.lock:
            return {a: {k: np.array(v) for k, v in st.items()} for a, st in self.stats.items()}

    def set_state(self, state: dict[Any, dict[str, Any]]) -> None:
        with self.lock:
            for a, st in state.items():
                self.stats[a] = {k: np.asarray(v, self.stats[a][k].dtype) for k, v in st.items()}


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

    @property
    def stateful(self) -> bool:
        """Whether a piece keeps statistics learned from the observations (``MeanStdFilter``)."""
        return any(isinstance(p, _MeanStd) for p in self._bound)

    def frozen(self) -> MultiAgentConnectors:
        """A copy whose statistics are a snapshot of these, not updated (for an evaluation)."""
        new = copy.copy(self)
        new._bound = [p.frozen() if isinstance(p, _MeanStd) else p for p in self._bound]
        return new

    def get_state(self) -> list[dict[str, Any]]:
        """The statistics of each stateful piece, in order: ``{"0": {"count", "mean", "m2"},
        "1": ...}``, keyed by each agent's place in the env's agents (their observation
        shapes may differ)."""
        out = []
        for piece in self._bound:
            if isinstance(piece, _MeanStd):
                stats = piece.get_state()
                out.append({str(i): stats[a] for i, a in enumerate(stats)})
        return out

    def set_state(self, state: list[dict[str, Any]]) -> None:
        """Sets what ``get_state`` returned (the same pieces and agents)."""
        pieces = [p for p in self._bound if isinstance(p, _MeanStd)]
        if len(state) != len(pieces):
            raise ValueError(
                f"{len(state)} connector states given for {len(pieces)} stateful pieces"
            )
        for piece, st in zip(pieces, state, strict=True):
            piece.set_state({a: st[str(i)] for i, a in enumerate(piece.stats)})

    def state_template(self) -> list[dict[str, Any]]:
        """``get_state``'s structure, shapes and dtypes (zeros)."""
        return [
            {k: {n: np.zeros_like(v) for n, v in st.items()} for k, st in piece.items()}
            for piece in self.get_state()
        ]

    def check(self, observations: dict[Any, Any]) -> None:
        """One call on an observation dict of the env (its first reset's), before anything
        compiles, that updates no statistics: what each agent gets must have its output
        space's shape.

        Raises:
          ConfigError: An agent's transformed observation does not fit its output space.
        """
        out = self.frozen()(observations)
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
        return [
            p.spec() if isinstance(p, (FlattenObservations, MeanStdFilter)) else p
            for p in self.pieces
        ]


def _bind(piece: Any, spaces: AgentSpaces, acts: AgentSpaces, i: int) -> _Piece:
    if isinstance(piece, FlattenObservations):
        return _Flatten(piece, spaces)
    if isinstance(piece, MeanStdFilter):
        if not piece.multi_agent:
            raise ConfigError(
                "env_to_module_connector: MeanStdFilter() on a multi-agent env keeps statistics "
                "per agent; pass MeanStdFilter(multi_agent=True), as RLlib requires"
            )
        return _MeanStd(piece, spaces)
    if isinstance(piece, MultiAgentObservationPreprocessor):
        return _WholeDict(piece, spaces, acts)
    if isinstance(piece, SingleAgentObservationPreprocessor):
        return _PerAgent(piece, spaces, acts)
    raise ConfigError(
        f"env_to_module_connector item {i} is {describe(piece)}; multi-agent runs take "
        "FlattenObservations(multi_agent=True), MeanStdFilter(multi_agent=True), and "
        "SingleAgentObservationPreprocessor and MultiAgentObservationPreprocessor subclasses"
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

    def frozen(self) -> ConnectedCreator:
        """The same creator with a snapshot of the connectors' statistics (an evaluation's)."""
        return ConnectedCreator(self.creator, self.connectors.frozen())


__all__ = [
    "ConnectedCreator",
    "ConnectedMultiAgentEnv",
    "MultiAgentConnectors",
    "build_multi_agent_connectors",
    "flatten_observation",
]
