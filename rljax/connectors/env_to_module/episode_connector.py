"""RLlib's ``ConnectorV2`` for env-to-module pieces that read episodes: run on the host, in the env.

RLlib's env-to-module pipeline is Python that runs after every env step on the runner's
episodes: a piece reads the episode (its last observation, previous actions and rewards, older
frames) and rewrites the latest observation. rljax's own connectors are pure functions compiled
into the act step (``rljax.connectors.env_to_module.connector``); a piece that needs an
episode's history cannot be one. Such pieces run here instead, in each gymnasium sub-env, as a
wrapper (``EpisodeConnectorEnv``) that keeps the sub-env's current episode and hands it to the
pieces after every reset and step:

- what the pieces return is the observation the runner sees; it is stored in the train batch,
  so the learner trains on exactly what the policy acted on (a piece that stacks frames stores
  the stacked observation: RLlib's learner-side re-stacking is not needed);
- each piece reads an episode of its own input (the env's observations for the first piece,
  the outputs of the piece before it for the next: what RLlib's pieces see, as they write
  their outputs into the episode), with the env's actions and rewards and RLlib's accessors
  (``get_observations(indices, fill=...)``, ``get_actions(..., one_hot_discrete=True)``,
  ``get_rewards``, ``set_observations``);
- pieces come first in ``env_to_module_connector``, before rljax's compiled connectors
  (``FlattenObservations``, ``MeanStdFilter``), which then take the pieces' output space.

They run wherever the env's steps happen in Python: the runners of gymnasium envs, SYNC and
ASYNC (each worker process wraps its own envs). EnvPool's C++ envs and JAX envs step inside
compiled code, where no Python runs per step; a piece on one is refused, naming the backend.
``rl_module`` is None here and ``batch`` an empty dict: the module acts after the env step, in
the compiled act step.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import gymnasium as gym
import jax

from rljax.connectors.env_to_module.connector import EnvToModuleConnector
from rljax.env.single_agent_episode import SingleAgentEpisode, start_episode
from rljax.env.vector import env_spaces
from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError


class ConnectorV2(EnvToModuleConnector):
    """RLlib's connector base (``ray.rllib.connectors.connector_v2.ConnectorV2``).

    Subclass it as in RLlib: implement ``__call__(*, rl_module, batch, episodes, explore,
    shared_data, **kwargs)``, which reads each episode (``self.single_agent_episode_iterator(
    episodes)``) and rewrites its latest observation (``episode.set_observations(new_data=...,
    at_indices=-1)``), and ``recompute_output_observation_space`` when the observation space
    changes. Given to ``.env_runners(env_to_module_connector=...)`` it runs on the host in each
    gymnasium sub-env (see the module docstring); as a learner connector it is refused.

    A checkpoint stores a subclass by import path; a config loaded from a file imports it only
    where the loader allows its module, and rebuilds it with no arguments.
    """

    #: Runs in the env, on the host (``EpisodeConnectorEnv``), not in the compiled act step.
    runs_on_host: ClassVar[bool] = True

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        **kwargs: Any,
    ):
        self._input_observation_space: gym.Space | None = None
        self._input_action_space = input_action_space
        self._observation_space: gym.Space | None = None
        self._action_space: gym.Space | None = None
        if input_observation_space is not None:
            self.input_observation_space = input_observation_space

    # ------------------------------------------------------------------ RLlib's space API
    @property
    def input_observation_space(self) -> gym.Space | None:
        return self._input_observation_space

    @input_observation_space.setter
    def input_observation_space(self, space: gym.Space | None) -> None:
        self._input_observation_space = space
        if space is not None:
            self._observation_space = self.recompute_output_observation_space(
                space, self._input_action_space
            )

    @property
    def input_action_space(self) -> gym.Space | None:
        return self._input_action_space

    @input_action_space.setter
    def input_action_space(self, space: gym.Space | None) -> None:
        self._input_action_space = space
        if space is not None and self._input_observation_space is not None:
            self.input_observation_space = self._input_observation_space

    @property
    def observation_space(self) -> gym.Space | None:
        """The observation space after this piece."""
        return self._observation_space

    @observation_space.setter
    def observation_space(self, space: gym.Space | None) -> None:
        self._observation_space = space

    @property
    def action_space(self) -> gym.Space | None:
        if self._action_space is not None:
            return self._action_space
        return self._input_action_space

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        """The observation space after this piece (the input space unless overridden)."""
        return input_observation_space

    def recompute_output_action_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        return input_action_space

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: Any,
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")

    @staticmethod
    def single_agent_episode_iterator(
        episodes: list[Any], agents_that_stepped_only: bool = True, **kwargs: Any
    ) -> Iterator[Any]:
        """Each single-agent episode of ``episodes`` (RLlib's helper)."""
        yield from episodes

    @staticmethod
    def add_batch_item(
        batch: dict[str, Any], column: str, item_to_add: Any, single_agent_episode: Any = None
    ) -> None:
        """Appends ``item_to_add`` to ``batch[column]`` (RLlib's helper; the batch a host
        piece gets is not the module's input, so only pieces that write the episode change
        what the module sees)."""
        batch.setdefault(column, []).append(item_to_add)

    # ------------------------------------------------------------------ rljax's connector API
    def output_space(self, space: gym.Space) -> gym.Space:
        out = self.recompute_output_observation_space(space, self._input_action_space)
        return out if out is not None else space

    def transform(self, state: Any, obs: jax.Array) -> jax.Array:
        raise ConfigError(
            f"{type(self).__name__} is a ConnectorV2 piece: it runs on the host, in the env "
            "(rljax.connectors.env_to_module.episode_connector), not in the act step"
        )

    def spec(self) -> dict[str, Any]:
        cls = type(self)
        if EnvToModuleConnector.types.get(self.type_name) is cls:
            return {"type": self.type_name, **self._arguments()}
        return {"type": "ConnectorV2", "import": f"{cls.__module__}:{cls.__qualname__}"}

    def _arguments(self) -> dict[str, Any]:
        """rljax's own pieces: their constructor's keyword arguments (their spec)."""
        return {}


def is_host_piece(item: Any) -> bool:
    """Whether ``item`` is a piece that runs in the env on the host (a ``ConnectorV2``)."""
    return isinstance(item, ConnectorV2)


class EpisodeConnectorEnv(gym.Wrapper):
    """A gymnasium env whose observations pass through host ``ConnectorV2`` pieces, which read
    the sub-env's current episode (see the module docstring).

    Each piece reads an episode of its own input: the first piece's holds the env's
    observations, the next one's the first piece's outputs, and so on (as in RLlib, where a
    piece reads what the pieces before it wrote into the episode); the actions and rewards are
    the env's in all of them. ``episode`` is the first one (the env's observations)."""

    def __init__(self, env: gym.Env, pieces: list[ConnectorV2], observation_space: gym.Space):
        super().__init__(env)
        self.pieces = pieces
        self.observation_space = observation_space
        self.episodes: list[SingleAgentEpisode] = []

    @property
    def episode(self) -> SingleAgentEpisode | None:
        return self.episodes[0] if self.episodes else None

    def _connect(self, new_obs: Any, step: tuple[Any, ...] | None, info: dict) -> Any:
        """Runs the pieces on the latest observation ``new_obs`` (the reset's when ``step`` is
        None, else the step's ``(action, reward, terminated, truncated)``)."""
        obs = new_obs
        for i, piece in enumerate(self.pieces):
            if step is None:
                episode = start_episode(
                    obs,
                    info,
                    observation_space=piece.input_observation_space,
                    action_space=self.env.action_space,
                )
                if i < len(self.episodes):
                    self.episodes[i] = episode
                else:
                    self.episodes.append(episode)
            else:
                episode = self.episodes[i]
                action, reward, terminated, truncated = step
                episode.add_env_step(
                    obs, action, reward, info, terminated=terminated, truncated=truncated
                )
            piece(rl_module=None, batch={}, episodes=[episode], explore=True, shared_data={})
            # The piece's output goes on; its episode keeps its input, for its next steps.
            obs, episode.observations[-1] = episode.get_observations(-1), obs
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._connect(obs, None, info), info

    def step(self, action: Any) -> Any:
        if not self.episodes:
            raise RuntimeError("step() before reset()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        out = self._connect(obs, (action, float(reward), terminated, truncated), info)
        return out, reward, terminated, truncated, info


@dataclasses.dataclass
class EpisodeConnectorCreator:
    """``creator(env_config)`` of the user's env, each env wrapped with its own copy of the
    pieces (pickled whole to ASYNC workers)."""

    creator: Callable[[dict[str, Any]], Any]
    pieces: list[ConnectorV2]
    observation_space: gym.Space

    def __call__(self, env_config: Any) -> Any:
        env = self.creator(env_config)
        return EpisodeConnectorEnv(env, copy.deepcopy(self.pieces), self.observation_space)


def bind_host_pieces(
    pieces: list[ConnectorV2], observation_space: gym.Space, action_space: gym.Space
) -> gym.Space:
    """Gives each piece its input spaces in order; returns the last one's observation space."""
    space = observation_space
    for piece in pieces:
        piece._input_action_space = action_space
        piece.input_observation_space = space
        out = piece.observation_space
        if not isinstance(out, gym.Space):
            raise ConfigError(
                f"{type(piece).__name__}.recompute_output_observation_space returned "
                f"{describe(out)}; it returns a gymnasium space"
            )
        space = out
    return space


def attach_host_pieces(
    items: list[Any], env_spec: Any, observation_space: gym.Space, action_space: gym.Space
) -> tuple[Any, gym.Space]:
    """``(env_spec, observation_space)`` with the leading host pieces of ``items`` (connectors
    in order) run in each gymnasium sub-env of ``env_spec`` (fresh copies per env), or both
    unchanged without such pieces. Raises ``ConfigError`` for a piece after a compiled
    connector, or an env whose steps do not run in Python (EnvPool, JAX)."""
    hosted = [i for i in items if is_host_piece(i)]
    if not hosted:
        return env_spec, observation_space
    names = ", ".join(type(p).__name__ for p in hosted)
    first_compiled = next((j for j, i in enumerate(items) if not is_host_piece(i)), len(items))
    if any(is_host_piece(i) for i in items[first_compiled:]):
        raise ConfigError(
            f"env_to_module_connector: {names} read episodes and run in the env, so they come "
            "before rljax's compiled connectors (FlattenObservations, MeanStdFilter, "
            "preprocessors), which take their output"
        )
    if env_spec.backend != "gymnasium":
        raise ConfigError(
            f"env_to_module_connector: {names} read each episode in Python after every env "
            f"step, which runs in the env on the host; {env_spec.name!r} runs on "
            f"{env_spec.backend}, whose steps happen in compiled code. Register a gymnasium "
            "creator for it (register_env('name', lambda cfg: gymnasium.make(...)))"
        )
    space = bind_host_pieces(hosted, observation_space, action_space)
    creator = EpisodeConnectorCreator(env_spec.gymnasium_creator(), hosted, space)
    return dataclasses.replace(env_spec, creator=creator), space


def spec_with_host_pieces(setting: Any, env_spec: Any) -> tuple[Any, tuple[gym.Space, gym.Space]]:
    """``env_spec`` (another env than training's: an evaluation override, ``make_env()``) with
    the host pieces of a built ``env_to_module_connector`` setting (its leading ``ConnectorV2``
    items), and the ``(observation, action)`` spaces the policy then sees."""
    observation_space, action_space = env_spaces(env_spec)
    items = list(setting) if isinstance(setting, list | tuple) else []
    env_spec, observation_space = attach_host_pieces(
        items, env_spec, observation_space, action_space
    )
    return env_spec, (observation_space, action_space)


__all__ = [
    "attach_host_pieces",
    "spec_with_host_pieces",
    "ConnectorV2",
    "EpisodeConnectorCreator",
    "EpisodeConnectorEnv",
    "bind_host_pieces",
    "is_host_piece",
]
