"""Device selection for learners and runners, with clear errors instead of hangs."""

from __future__ import annotations

import logging
import math
import os

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from rljax.utils import once
from rljax.utils.errors import ConfigError

DATA_AXIS = "data"
logger = logging.getLogger("rljax")


def _platform_devices(platform: str) -> list[jax.Device]:
    try:
        return list(jax.devices(platform))
    except RuntimeError:
        return []


def describe_devices() -> str:
    by_kind: dict[str, int] = {}
    for d in jax.devices():
        by_kind[d.platform] = by_kind.get(d.platform, 0) + 1
    return ", ".join(f"{n} {p}" for p, n in by_kind.items())


def learner_devices(num_learners: int, num_gpus_per_learner: float) -> list[jax.Device]:
    """The devices of the learner mesh: ``max(1, num_learners)`` of them.

    ``num_gpus_per_learner > 0`` asks for GPUs; a fraction lets several learners share one GPU
    (``ceil(num_learners * fraction)`` GPUs in all), which on one host means they are one learner.
    On the CPU, more learners than devices share one device, as RLlib's learner processes
    share a machine's cores: the batch keeps one shard per learner and one program computes
    every shard's part of each update (the same updates as on a device per learner). As in
    RLlib, where each learner takes a core, there are at most as many as the machine has.
    """
    n = max(1, num_learners)
    if num_gpus_per_learner > 0:
        gpus = _platform_devices("gpu")
        needed = math.ceil(n * num_gpus_per_learner) if num_gpus_per_learner < 1 else n
        if len(gpus) < needed:
            raise ConfigError(
                f"num_learners={num_learners} with num_gpus_per_learner={num_gpus_per_learner} asks for "
                f"{needed} GPU(s), but JAX sees {len(gpus)} (devices: {describe_devices()}); set "
                "num_gpus_per_learner=0 to learn on the CPU"
            )
        if num_gpus_per_learner < 1:
            return gpus[:needed] if needed >= n else gpus[:1]
        return gpus[:n] if jax.process_count() == 1 else _gpus_across(gpus, n)
    cpus = _platform_devices("cpu")
    default = jax.devices()
    pool = default if default[0].platform == "cpu" else cpus
    if jax.process_count() > 1:  # every process's devices (rljax.distributed)
        from rljax.distributed import learner_devices as across_processes

        return across_processes(pool, n)
    if len(pool) < n:
        cores = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1
        )
        if n > cores:
            raise ConfigError(
                f"num_learners={num_learners} asks for {n} devices, but JAX sees {len(pool)} "
                f"{pool[0].platform if pool else 'cpu'} device(s) (devices: {describe_devices()}), "
                f"and learners that share a device take a core each (RLlib's "
                f"num_cpus_per_learner=1): this machine has {cores}. Lower num_learners, or set "
                "XLA_FLAGS=--xla_force_host_platform_device_count=N before JAX is imported"
            )
        if once.first_time("learners", f"{n}/{len(pool)}"):
            logger.warning(
                "num_learners=%d on %d CPU device(s): the %d learners share one device, each "
                "with its shard of the batch, in one program (the same updates as %d devices; "
                "XLA_FLAGS=--xla_force_host_platform_device_count=%d before JAX is imported "
                "gives each its own)",
                n,
                len(pool),
                n,
                n,
                n,
            )
        return pool[:1]
    return pool[:n]


def population_devices(num_gpus_per_learner: float) -> list[jax.Device]:
    """This process's devices a population's trials are split over
    (``rljax.execution.population``), where its trials learn: the GPUs when they ask for one
    (``num_gpus_per_learner > 0``), else the CPU devices (host devices where
    ``--xla_force_host_platform_device_count`` asked for several)."""
    if num_gpus_per_learner > 0:
        gpus = _local(_platform_devices("gpu"))
        if not gpus:
            raise ConfigError(
                f"num_gpus_per_learner={num_gpus_per_learner} asks for a GPU, but JAX sees none "
                f"(devices: {describe_devices()}); set num_gpus_per_learner=0"
            )
        return gpus
    default = jax.local_devices()
    cpus = default if default[0].platform == "cpu" else _local(_platform_devices("cpu"))
    return cpus or default[:1]


def _gpus_across(gpus: list[jax.Device], n: int) -> list[jax.Device]:
    from rljax.distributed import learner_devices as across_processes

    return across_processes(gpus, n)


def runner_device(num_gpus_per_env_runner: float) -> jax.Device:
    if num_gpus_per_env_runner > 0:
        gpus = _platform_devices("gpu")
        if not gpus:
            raise ConfigError(
                f"num_gpus_per_env_runner={num_gpus_per_env_runner} asks for a GPU, but JAX sees none "
                f"(devices: {describe_devices()}); set num_gpus_per_env_runner=0"
            )
        return gpus[-1] if jax.process_count() == 1 else _local(gpus)[-1]
    cpus = _platform_devices("cpu")
    if jax.process_count() > 1:  # this process's own device
        return (_local(cpus) or jax.local_devices())[0]
    return cpus[0] if cpus else jax.devices()[0]


def _local(devices: list[jax.Device]) -> list[jax.Device]:
    return [d for d in devices if d.process_index == jax.process_index()]


def make_mesh(devices: list[jax.Device]) -> Mesh:
    return Mesh(np.asarray(devices), (DATA_AXIS,))


def data_sharding(mesh: Mesh) -> NamedSharding:
    """Leading axis split over the learners."""
    return NamedSharding(mesh, PartitionSpec(DATA_AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())
