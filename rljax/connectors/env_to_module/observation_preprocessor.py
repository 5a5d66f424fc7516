"""RLlib's observation preprocessor base classes: a user's own per-observation transform.

A user subclasses ``SingleAgentObservationPreprocessor`` and implements
``recompute_output_observation_space(input_observation_space, input_action_space)`` and
``preprocess(observation, episode)``, as in RLlib. rljax runs the transform inside the jitted act
step and update like its other connectors, in one of two ways, chosen once when the program is
traced:

- **traced**: ``preprocess`` written with array operations that JAX can trace
  (``observation[..., ::2]``, ``jnp.clip``, ...) is vmapped over the batch and compiled into the
  program, costing nothing extra;
- **on the host**: ``preprocess`` written with NumPy on concrete values (``np.array([obs[0],
  obs[2]])``, as RLlib's examples do) cannot be traced; rljax calls it from the compiled program
  through ``jax.pure_callback``, once per observation, as RLlib calls it once per env step.

``episode`` is not available: rljax keeps no per-step episode objects inside the compiled step, so
a ``preprocess`` that reads it raises an error saying so.
"""

from __future__ import annotations

from typing import Any, NoReturn

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.connectors.env_to_module.connector import EnvToModuleConnector
from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError

# What tracing a NumPy-only ``preprocess`` raises: it then runs on the host.
_NOT_TRACEABLE = (
    jax.errors.TracerArrayConversionError,
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
)


def _import_spec(preprocessor: Any) -> dict[str, Any]:
    """A user's preprocessor in a config or checkpoint: its class's import path (code, loaded
    only where the loader allows its module). Written out, not references.qualified_name:
    references imports this module (to check a loaded class's kind), and the import graph
    allows no cycle."""
    cls = type(preprocessor)
    return {"type": "ObservationPreprocessor", "import": f"{cls.__module__}:{cls.__qualname__}"}


class _NoEpisode:
    """What ``preprocess`` gets as its episode: any use of it says why there is none."""

    def __init__(self, owner: str):
        self._owner = owner

    def _refuse(self, what: str) -> NoReturn:
        raise ConfigError(
            f"{self._owner}.preprocess read episode{what}: rljax runs the preprocessor inside the "
            "compiled act step and update, one observation at a time, with no episode object; "
            "compute the value from the observation alone, or keep the history in the env (a "
            "gymnasium wrapper) or in the model (use_lstm=True)"
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse(f".{name}")

    def __getitem__(self, key: Any) -> Any:
        self._refuse(f"[{key!r}]")

    def __len__(self) -> int:
        self._refuse(" (len)")


class SingleAgentObservationPreprocessor(EnvToModuleConnector):
    """Base class for a user's transform of each observation (RLlib's class of this name).

    Implement ``recompute_output_observation_space`` (the space of what ``preprocess`` returns;
    by default the input space) and ``preprocess(observation, episode)``, which maps one
    observation (an array of the input space's shape) to one of the output space's shape. The
    output space must be a ``Box``. See the module docstring for how it runs and what
    ``episode`` is. Give it to ``.env_runners(env_to_module_connector=lambda env, spaces,
    device: MyPreprocessor())`` on single-agent PPO, IMPALA or APPO.

    A checkpoint stores the class by import path; a config or checkpoint loaded from a file
    imports it only where the loader allows its module (``allow_imports=[...]``).
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        **kwargs: Any,
    ):
        self.input_observation_space = input_observation_space
        self.input_action_space = input_action_space
        # The spaces after this piece (RLlib's ``observation_space`` / ``action_space``), set
        # when the algorithm builds it.
        self.observation_space: gym.Space | None = None
        self.action_space: gym.Space | None = input_action_space
        self._checked: tuple[gym.Space, gym.Space] | None = None  # (input, output) spaces
        self._on_host: bool | None = None  # decided on the first trace

    # ---------------------------------------------------------------- what a user implements
    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        """The observation space after ``preprocess`` (the input space unless overridden)."""
        return input_observation_space

    def preprocess(self, observation: Any, episode: Any) -> Any:
        """One observation, transformed (to be implemented by a subclass)."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement preprocess(self, observation, episode)"
        )

    # ---------------------------------------------------------------- the connector protocol
    @property
    def _name(self) -> str:
        return type(self).__name__

    def bind_action_space(self, action_space: gym.Space) -> None:
        """Called by the pipeline builder: the env's action space, when none was given."""
        if self.input_action_space is None:
            self.input_action_space = action_space

    def output_space(self, space: gym.Space) -> gym.Space:
        out = self.recompute_output_observation_space(space, self.input_action_space)
        if not isinstance(out, gym.spaces.Box):
            raise ConfigError(
                f"{self._name}.recompute_output_observation_space returned {describe(out)}; "
                "rljax's preprocessors return a gymnasium.spaces.Box"
            )
        # RLlib's connector attributes, which preprocess() may read (the output space).
        if self.input_observation_space is None:
            self.input_observation_space = space
        self.observation_space, self.action_space = out, self.input_action_space
        return out

    def check_space(self, space: gym.Space) -> None:
        if not isinstance(space, gym.spaces.Box | gym.spaces.Discrete | gym.spaces.MultiBinary):
            raise ConfigError(
                f"{self._name} takes observations of {describe(space)}; rljax's preprocessors "
                "take Box, Discrete or MultiBinary observations (put FlattenObservations first "
                "for Dict and Tuple spaces)"
            )
        out_space = self.output_space(space)
        # One call on a sample, before anything compiles: a wrong shape is named here.
        sample = np.asarray(space.sample())
        got = np.asarray(self.preprocess(sample, _NoEpisode(self._name)))
        if got.shape != out_space.shape:
            raise ConfigError(
                f"{self._name}.preprocess returned an array of shape {got.shape} for one "
                f"observation of shape {sample.shape}; recompute_output_observation_space says "
                f"{out_space.shape}"
            )
        self._checked = (space, out_space)

    def _spaces(self) -> tuple[gym.Space, gym.Space]:
        if self._checked is None:
            raise ConfigError(f"{self._name} was used before the algorithm built it")
        return self._checked

    def transform(self, state: Any, obs: jax.Array) -> jax.Array:
        in_space, out_space = self._spaces()
        in_shape = tuple(in_space.shape or ())
        lead = obs.shape[: obs.ndim - len(in_shape)]
        if not self._on_host:
            flat = obs.reshape((-1, *in_shape))
            try:
                out = jax.vmap(lambda o: self.preprocess(o, _NoEpisode(self._name)))(flat)
                self._on_host = False
                return jnp.asarray(out, out_space.dtype).reshape((*lead, *(out_space.shape or ())))
            except _NOT_TRACEABLE:
                if self._on_host is False:  # traced before: a later failure is a real error
                    raise
                self._on_host = True
        return self._on_the_host(obs, lead, in_shape, out_space)

    def _on_the_host(
        self, obs: jax.Array, lead: tuple[int, ...], in_shape: tuple[int, ...], out_space: Any
    ) -> jax.Array:
        out_shape, dtype = tuple(out_space.shape), np.dtype(out_space.dtype)

        def host(x: Any) -> np.ndarray:
            x = np.asarray(x)
            front = x.shape[: x.ndim - len(in_shape)]
            rows = x.reshape((-1, *in_shape))
            episode = _NoEpisode(self._name)
            out = np.empty((rows.shape[0], *out_shape), dtype)
            for i, row in enumerate(rows):
                out[i] = np.asarray(self.preprocess(row, episode), dtype)
            return out.reshape((*front, *out_shape))

        result = jax.ShapeDtypeStruct((*lead, *out_shape), dtype)
        return jax.pure_callback(host, result, obs, vmap_method="expand_dims")

    def spec(self) -> dict[str, Any]:
        return _import_spec(self)


class MultiAgentObservationPreprocessor(EnvToModuleConnector):
    """Base class for a user's transform of each multi-agent observation dict (RLlib's class
    of this name), for multi-agent PPO.

    Implement ``recompute_output_observation_space(input_observation_space,
    input_action_space)``, which gets the ``Dict`` of every agent's observation (and action)
    space and returns the ``Dict`` of what ``preprocess`` gives each agent, and
    ``preprocess(observations, episode)``, which maps one env step's observation dict (the
    agents acting in it) to the transformed dict. It runs on the host, on every env step, as
    RLlib runs it (``rljax.connectors.env_to_module.multi_agent``); ``episode`` is not available
    (see ``SingleAgentObservationPreprocessor``).
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        **kwargs: Any,
    ):
        self.input_observation_space = input_observation_space
        self.input_action_space = input_action_space
        # The ``Dict`` of the agents' spaces after this piece (RLlib's attributes), set when
        # the algorithm builds it.
        self.observation_space: gym.Space | None = None
        self.action_space: gym.Space | None = input_action_space

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space, input_action_space: gym.Space | None
    ) -> gym.Space:
        """The ``Dict`` of every agent's observation space after ``preprocess``."""
        return input_observation_space

    def preprocess(self, observations: dict[Any, Any], episode: Any) -> dict[Any, Any]:
        """One env step's observation dict, transformed (to be implemented by a subclass)."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement preprocess(self, observations, episode)"
        )

    def check_space(self, space: gym.Space) -> None:
        raise ConfigError(
            f"{type(self).__name__} is a MultiAgentObservationPreprocessor: it transforms "
            "multi-agent observation dicts and runs on multi-agent PPO (.multi_agent(...)); "
            "for a single-agent env subclass SingleAgentObservationPreprocessor"
        )

    def transform(self, state: Any, obs: jax.Array) -> jax.Array:
        raise ConfigError(f"{type(self).__name__} runs on multi-agent PPO only")

    def spec(self) -> dict[str, Any]:
        return _import_spec(self)
