"""The pieces every algorithm is built with, before its own learner (``Algorithm.__init__``):
the run's seed, the memory check, the learner devices and mesh and the runner device, the
observation connectors, and the callbacks with their metrics loggers.

Each builder takes the config (and what was resolved before it) and returns its pieces; none
reads an algorithm.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax

from rljax import distributed
from rljax.callbacks.callbacks import HOOKS
from rljax.callbacks.dispatch import Callbacks
from rljax.callbacks.runner_hooks import RunnerCallbacks
from rljax.connectors.env_to_module import build_env_to_module
from rljax.connectors.env_to_module.connector import connector_from_spec, connector_items
from rljax.connectors.env_to_module.episode_connector import attach_host_pieces, is_host_piece
from rljax.env.vector import EnvSpec, env_spaces, resolve_env
from rljax.learners.devices import learner_devices, make_mesh, runner_device
from rljax.utils import xla_threads
from rljax.utils.errors import ConfigError
from rljax.utils.memory import check_fits
from rljax.utils.metrics.metrics_logger import MetricsLogger


def prepare_process(config: Any, algorithm_class: type) -> None:
    """What an algorithm's build sets for the whole process before its first JAX call: JAX's
    distributed runtime (a no-op for one process; a multi-process run's creates JAX's client)
    and the CPU client's threads (``rljax.utils.xla_threads.choose_at_build``, which leaves a
    client that exists as it is). A chosen size is taken back out of the environment once the
    client has read it, so processes started later choose for themselves."""
    distributed.initialize(config)
    if xla_threads.choose_at_build(config, algorithm_class) is not None:
        jax.devices()  # the client, created now with the chosen pool
        xla_threads.release_choice()


def run_seed(seed: int | None) -> int:
    """The run's seed: the config's, or a random non-negative 31-bit one."""
    return int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little") >> 1


def check_memory(
    config: Any,
    env_spec: EnvSpec | None,
    observation_space: Any,
    action_space: Any,
    inference_only: bool,
) -> None:
    """Estimates what the build allocates (a loaded policy's: its inference terms only) before
    anything is, and raises naming the algorithm and env when the machine lacks it."""
    env_name = (
        getattr(env_spec, "name", None)
        or (config.env if isinstance(config.env, str) else None)
        or getattr(config.env, "__name__", "the env")
    )
    terms = (
        config.inference_memory_terms(observation_space, action_space)
        if inference_only
        else config.memory_terms(observation_space, action_space)
    )
    check_fits(terms, f"{config.algo_name} on {env_name}")


@dataclasses.dataclass(frozen=True)
class Devices:
    """Where a run computes.

    Attributes:
      learner_devices: The learner devices (``num_learners``, ``num_gpus_per_learner``).
      mesh: The learner mesh over them, or None on one device.
      runner_device: Where runner threads act (``num_gpus_per_env_runner``).
    """

    learner_devices: list[jax.Device]
    mesh: jax.sharding.Mesh | None
    runner_device: jax.Device


def devices(config: Any) -> Devices:
    """The learner devices, their mesh (more than one) and the runner device of ``config``.

    With one learner and no runner actors (``num_env_runners=0``), acting on the learner's
    platform shares the learner's device (the fused path is one program there; on a machine of
    several GPUs the runner's own pick is the last one, the learner's the first)."""
    learners = learner_devices(config.num_learners, config.num_gpus_per_learner)
    runner = runner_device(config.num_gpus_per_env_runner)
    if (
        len(learners) == 1
        and config.num_env_runners == 0
        and runner.platform == learners[0].platform
        and jax.process_count() == 1
    ):
        runner = learners[0]
    return Devices(
        learner_devices=learners,
        mesh=make_mesh(learners) if len(learners) > 1 else None,
        runner_device=runner,
    )


def batch_placement(
    learner: jax.Device, runner: jax.Device
) -> jax.sharding.SingleDeviceSharding | None:
    """Where a batch goes before one learner's update: the learner's device when acting is on
    another (the one-GPU setting: the update on the GPU, runner threads on the CPU); None when
    they share it, or across processes (``rljax.distributed`` places those batches)."""
    if learner == runner or jax.process_count() > 1:
        return None
    return jax.sharding.SingleDeviceSharding(learner)


def env_and_spaces(
    config: Any, saved_spaces: dict[str, Any] | None, connectors_in_env: bool
) -> tuple[EnvSpec | None, Any, Any]:
    """``(env_spec, observation_space, action_space)`` of an algorithm: a module loaded for
    inference has its checkpoint's spaces (``saved_spaces``) and no env; otherwise the config's
    env, with its ``ConnectorV2`` pieces run in it (``host_connectors``) unless the algorithm
    runs its connectors in the env itself (``connectors_in_env``: multi-agent PPO)."""
    if saved_spaces is not None:
        observation_space, action_space = saved_spaces["spaces"]
        return None, observation_space, action_space
    given = (getattr(config, "observation_space", None), getattr(config, "action_space", None))
    if config.env is None and None not in given:  # offline learning from the spaces alone
        return None, given[0], given[1]
    spec = resolve_env(config.env, config.env_config)
    observation_space, action_space = env_spaces(spec)
    for name, space, env_space in zip(
        ("observation_space", "action_space"), given, (observation_space, action_space), strict=True
    ):
        if space is not None and space != env_space:
            raise ConfigError(
                f"environment({name}={space}) differs from the env's {env_space}; leave it None "
                "(the env's) or give the env's"
            )
    if not connectors_in_env:  # ConnectorV2 pieces that read episodes: in the env
        spec, observation_space = host_connectors(config, spec, observation_space, action_space)
    return spec, observation_space, action_space


def host_connectors(
    config: Any, env_spec: EnvSpec, observation_space: Any, action_space: Any
) -> tuple[EnvSpec, Any]:
    """The env with the leading ``ConnectorV2`` pieces of ``config.env_to_module_connector``
    (RLlib's episode-reading pieces: ``PrevActionsPrevRewards``, ``FrameStackingEnvToModule``, a
    user's subclass) run in each of its gymnasium sub-envs, and the observation space they give
    (``rljax.connectors.env_to_module.episode_connector``); unchanged without such pieces.

    RLlib's function form is called here, once; the setting becomes the list it gave (the host
    pieces first), so the compiled connectors after them are built on the pieces' output space.
    """
    value = config.env_to_module_connector
    if value is None:
        return env_spec, observation_space
    items = connector_items(value, observation_space, action_space)
    items = [connector_from_spec(i) if isinstance(i, dict) else i for i in items]
    spec, space = attach_host_pieces(items, env_spec, observation_space, action_space)
    if spec is not env_spec:
        config.env_to_module_connector = items
    return spec, space


def env_to_module(
    config: Any, observation_space: Any, action_space: Any, device: jax.Device
) -> Any:
    """The observation connectors of ``config.env_to_module_connector`` (None: none), built
    once; stored back in the config as their specs, so the checkpoint's config rebuilds them
    without code (a user's preprocessor classes stay objects: they are code)."""
    connector = build_env_to_module(
        config.env_to_module_connector, observation_space, action_space, device
    )
    if connector is not None:
        value = config.env_to_module_connector
        hosted = [i for i in value if is_host_piece(i)] if isinstance(value, list) else []
        config.env_to_module_connector = hosted + connector.config_value()
    return connector


@dataclasses.dataclass(frozen=True)
class CallbackParts:
    """The user's callbacks (``config.callbacks``) and what they log to.

    Attributes:
      callbacks: The callbacks, by hook.
      metrics: RLlib's ``algo.metrics``: the top level of the next result.
      env_runner_metrics: What episode hooks log: under ``env_runners``.
      record_episodes: Whether the sampled steps reach the host once per iteration for episode
        hooks (a population's trials never).
      runner_callbacks: The env runners' hooks (``rljax.callbacks.runner_hooks``).
    """

    callbacks: Callbacks
    metrics: MetricsLogger
    env_runner_metrics: MetricsLogger
    record_episodes: bool
    runner_callbacks: RunnerCallbacks


def callback_parts(config: Any, population_member: bool, recorder: Any = None) -> CallbackParts:
    """The callbacks of ``config`` and their metrics loggers; ``recorder``: the episode hook
    of ``offline_data(output=...)`` (``rljax.offline.recording``), called after the user's."""
    built_in = [] if recorder is None else [("offline_data(output)", recorder)]
    callbacks = Callbacks(
        config.callbacks_class, {h: getattr(config, f"callbacks_{h}") for h in HOOKS}, built_in
    )
    env_runner_metrics = MetricsLogger()
    return CallbackParts(
        callbacks=callbacks,
        metrics=MetricsLogger(),
        env_runner_metrics=env_runner_metrics,
        record_episodes=callbacks.wants_episodes and not population_member,
        runner_callbacks=RunnerCallbacks(callbacks, config, env_runner_metrics),
    )


__all__ = [
    "CallbackParts",
    "Devices",
    "callback_parts",
    "check_memory",
    "devices",
    "env_and_spaces",
    "env_to_module",
    "host_connectors",
    "run_seed",
]
