"""Env-to-module connectors: observation transforms between the env and the module.

RLlib runs its connector pipeline in Python on every env step. rljax's connectors are pure
functions of a small state (a pytree), so they run inside the jitted act step of every runner
and of the fused EnvPool rollout, and inside the jitted update:

- ``transform(state, obs)`` maps a batch of observations (any leading dims) to what the
  module sees; acting, evaluation, ``compute_actions`` and exported programs all apply it;
- ``update(state, obs, mask)`` folds the raw observations of a train batch (rows where
  ``mask`` is true) into the state. The learner runs it once per update, after training on
  the batch transformed with the state the runners acted with, so the learner sees exactly
  the observations the policy acted on, and every runner's rows count once (RLlib merges
  its runners' filters the same way, once per iteration).

The state lives in the learner state (``connectors``): it is saved with checkpoints, restored,
and broadcast to the runners with the weights.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import jax

from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError


class EnvToModuleConnector:
    """Base class of rljax's env-to-module connectors (jit-able; see the module docstring).

    A subclass sets ``type_name`` (its name in config dicts and checkpoints) and implements
    ``init_state``, ``transform`` and, if it learns from data, ``update``; ``spec()`` returns
    its constructor's keyword arguments with ``"type"``.
    """

    type_name: ClassVar[str] = ""
    # Every connector type by its type_name (subclasses register themselves).
    types: ClassVar[dict[str, type[EnvToModuleConnector]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("type_name"):  # a user's subclass does not replace rljax's own
            EnvToModuleConnector.types[cls.type_name] = cls

    def output_space(self, space: gym.Space) -> gym.Space:
        """The observation space after this connector."""
        return space

    def check_space(self, space: gym.Space) -> None:
        """Raises ``ConfigError`` when the connector cannot take observations of ``space``."""

    def init_state(self, space: gym.Space) -> Any:
        """The state before any data (a pytree of arrays; ``{}`` for none)."""
        return {}

    def transform(self, state: Any, obs: jax.Array) -> jax.Array:
        raise NotImplementedError

    def update(self, state: Any, obs: jax.Array, mask: jax.Array) -> Any:
        """The state after the rows ``obs [N, *shape]`` where ``mask [N]`` is true."""
        return state

    def spec(self) -> dict[str, Any]:
        raise NotImplementedError


def connector_from_spec(spec: Any, where: str = "env_to_module_connector") -> EnvToModuleConnector:
    """A connector from its ``spec()`` dict (config files and checkpoints): rljax's own
    connector types only, so loading a dict imports no code."""
    registry = EnvToModuleConnector.types
    if isinstance(spec, dict) and "import" in spec:
        raise ConfigError(
            f"{where}: names a user's connector class, which is code; a loaded config imports "
            "it only where the loader allows its module (allow_imports=[...])"
        )
    if not isinstance(spec, dict) or spec.get("type") not in registry:
        raise ConfigError(
            f"{where}: {describe(spec)} is not a connector; a config dict names one as "
            f"{{'type': one of {sorted(registry)}, ...its arguments}}"
        )
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    return registry[spec["type"]](**kwargs)


def check_env_to_module_connector(name: str, value: Any) -> Any:
    """The setting's check: None; a connector, or a list of them; their ``spec()`` dicts (a
    config file, a checkpoint); or RLlib's function ``(env, spaces, device) -> connector(s)``
    (also its older form ``(env) -> connector(s)``), called when the algorithm is built."""
    if value is None:
        return None
    if isinstance(value, EnvToModuleConnector):
        return [value]
    if isinstance(value, list | tuple):
        out: list[Any] = []
        for i, item in enumerate(value):
            if isinstance(item, EnvToModuleConnector):
                out.append(item)
            elif isinstance(item, dict):
                out.append(connector_from_spec(item, f"{name}[{i}]").spec())
            else:
                raise ConfigError(
                    f"{name}[{i}]={describe(item)}; a list holds connectors "
                    "(rljax.connectors.env_to_module) or their config dicts"
                )
        return out
    if callable(value) and not isinstance(value, type):
        return value
    raise ConfigError(
        f"{name}={describe(value)}; use a function (env, spaces, device) -> connector or list of "
        "connectors (RLlib's form, e.g. lambda env, spaces, device: MeanStdFilter()), a "
        "connector, a list of them, or None"
    )


@dataclasses.dataclass(frozen=True)
class EnvToModulePipeline:
    """Connectors composed in order, for observations of ``input_space``."""

    connectors: tuple[EnvToModuleConnector, ...]
    input_space: gym.Space

    @property
    def spaces(self) -> list[gym.Space]:
        """The observation space each connector takes, then the module's."""
        out = [self.input_space]
        for c in self.connectors:
            out.append(c.output_space(out[-1]))
        return out

    @property
    def output_space(self) -> gym.Space:
        return self.spaces[-1]

    def init_state(self) -> tuple[Any, ...]:
        return tuple(c.init_state(s) for c, s in zip(self.connectors, self.spaces, strict=False))

    def transform(self, state: Sequence[Any], obs: jax.Array) -> jax.Array:
        for c, s in zip(self.connectors, state, strict=True):
            obs = c.transform(s, obs)
        return obs

    def update(self, state: Sequence[Any], obs: jax.Array, mask: jax.Array) -> tuple[Any, ...]:
        """Every connector's state after a batch of raw observations ``obs [..., *shape]``
        (rows where ``mask [...]`` is true); each connector learns from its input as the
        connectors before it transformed it with their state before this batch."""
        rows = mask.size
        x = jax.tree.map(lambda o: o.reshape((rows, *o.shape[mask.ndim :])), obs)
        m = mask.reshape((rows,)).astype(bool)
        new = []
        for c, s in zip(self.connectors, state, strict=True):
            new.append(c.update(s, x, m))
            x = c.transform(s, x)
        return tuple(new)

    def specs(self) -> list[dict[str, Any]]:
        return [c.spec() for c in self.connectors]

    def config_value(self) -> list[Any]:
        """What the config keeps after building: rljax's own connectors as their specs (data),
        a user's connector classes (observation preprocessors) as the objects."""
        return [c.spec() if _is_builtin(c) else c for c in self.connectors]


def _is_builtin(connector: EnvToModuleConnector) -> bool:
    return EnvToModuleConnector.types.get(connector.type_name) is type(connector)


def build_env_to_module(
    value: Any,
    observation_space: gym.Space,
    action_space: gym.Space,
    device: Any = None,
) -> EnvToModulePipeline | None:
    """The pipeline of a checked ``env_to_module_connector`` setting, for an env of these
    spaces; RLlib's function form is called here, with an ``env`` that has the spaces
    (``single_observation_space``, ``observation_space``, ...), ``spaces`` as RLlib's
    ``{"__env__": ..., "__env_single__": ...}`` and ``device`` the runners' JAX device."""
    if value is None:
        return None
    items = connector_items(value, observation_space, action_space, device)
    connectors = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            item = connector_from_spec(item)
        if getattr(item, "runs_on_host", False):  # a ConnectorV2 piece: already in the env
            continue
        if not isinstance(item, EnvToModuleConnector):
            raise ConfigError(
                f"env_to_module_connector returned {describe(item)} (item {i}); rljax's "
                "connectors are those of rljax.connectors.env_to_module (e.g. MeanStdFilter), "
                "which run inside the jitted act step"
            )
        bind = getattr(item, "bind_action_space", None)
        if bind is not None:
            bind(action_space)
        connectors.append(item)
    if not connectors:
        return None
    pipeline = EnvToModulePipeline(tuple(connectors), observation_space)
    for c, space in zip(pipeline.connectors, pipeline.spaces, strict=False):
        single_agent_only = getattr(c, "check_multi_agent", None)  # FlattenObservations'
        if single_agent_only is not None:
            single_agent_only()
        c.check_space(space)
    return pipeline


def connector_items(
    value: Any, observation_space: gym.Space, action_space: gym.Space, device: Any = None
) -> list[Any]:
    """The items of a checked ``env_to_module_connector`` setting, in order: RLlib's function
    form called with these spaces (``_call_factory``; None: none), a list as it is, one
    connector as a list of one."""
    if callable(value) and not isinstance(value, list | tuple | EnvToModuleConnector):
        built = _call_factory(value, observation_space, action_space, device)
        if built is None:
            return []
        return list(built) if isinstance(built, list | tuple) else [built]
    return list(value) if isinstance(value, list | tuple) else [value]


def _call_factory(
    factory: Callable[..., Any], obs_space: gym.Space, act_space: gym.Space, device: Any
) -> Any:
    env = types.SimpleNamespace(
        observation_space=obs_space,
        action_space=act_space,
        single_observation_space=obs_space,
        single_action_space=act_space,
    )
    spaces = {"__env__": (obs_space, act_space), "__env_single__": (obs_space, act_space)}
    try:
        params = inspect.signature(factory).parameters.values()
        positional = [
            p
            for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
        takes_three = len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in positional)
    except (TypeError, ValueError):  # a builtin without a signature: RLlib's current form
        takes_three = True
    args = (env, spaces, device) if takes_three else (env,)
    return factory(*args)
