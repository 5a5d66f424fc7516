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

from rljax.callbacks.callbacks import HOOKS
from rljax.callbacks.dispatch import Callbacks
from rljax.callbacks.runner_hooks import RunnerCallbacks
from rljax.connectors.env_to_module import build_env_to_module
from rljax.env.vector import EnvSpec
from rljax.learners.devices import learner_devices, make_mesh, runner_device
from rljax.utils.memory import check_fits
from rljax.utils.metrics.metrics_logger import MetricsLogger


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
    """The learner devices, their mesh (more than one) and the runner device of ``config``."""
    learners = learner_devices(config.num_learners, config.num_gpus_per_learner)
    return Devices(
        learner_devices=learners,
        mesh=make_mesh(learners) if len(learners) > 1 else None,
        runner_device=runner_device(config.num_gpus_per_env_runner),
    )


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
        config.env_to_module_connector = connector.config_value()
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


def callback_parts(config: Any, population_member: bool) -> CallbackParts:
    """The callbacks of ``config`` and their metrics loggers."""
    callbacks = Callbacks(
        config.callbacks_class, {h: getattr(config, f"callbacks_{h}") for h in HOOKS}
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
    "env_to_module",
    "run_seed",
]
