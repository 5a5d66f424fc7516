"""One algorithm's learners across the processes of a Ray cluster, launched by Ray Train's
``JaxTrainer`` (``ray.train.v2.jax``, Ray 2.60).

``train_with_jax_trainer(config, num_workers=N, stop_iters=K)`` starts N Ray Train workers,
each one JAX process of the run (``rljax.distributed``): every worker builds the algorithm from
``config.to_dict()`` (no rljax state is pickled), trains K iterations, and reports each
iteration's result (already reduced over the processes) through ``ray.train.report``; process
0's last report carries the rljax checkpoint (``save_to_path``, under ``algorithm/`` of a Ray
checkpoint directory).

The JAX process group: on GPUs and TPUs ``JaxTrainer`` initializes ``jax.distributed`` itself
before the workers' loop, and ``rljax.distributed.initialize`` uses that group. On CPUs Ray
Train 2.60 initializes nothing (``JaxConfig`` acts only with ``use_gpu`` or ``use_tpu``), so
worker 0 picks a coordinator port on its node, ``ray.train.collective.broadcast_from_rank_zero``
sends it to the others, and each worker passes its rank, the world size and that address to
``config.learners(...)``. The workers' environment gets ``JAX_PLATFORMS=cpu``, gloo collectives
(``JAX_CPU_COLLECTIVES_IMPLEMENTATION=gloo``) and ``devices_per_worker`` host devices.

Ray is optional: nothing here imports it until ``train_with_jax_trainer`` is called.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Mapping
from typing import Any

from rljax.utils.errors import ConfigError
from rljax.utils.xla_options import with_host_devices

CHECKPOINT_SUBDIR = "algorithm"
"""Where the rljax checkpoint sits inside the Ray checkpoint directory (as for Ray Tune's)."""


def _node_port() -> int:
    """A TCP port free on every interface of this node now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


def _worker_env(devices_per_worker: int, use_gpu: bool) -> dict[str, str]:
    if use_gpu:
        return {}
    return {
        "JAX_PLATFORMS": "cpu",
        "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
        "XLA_FLAGS": with_host_devices(devices_per_worker),
    }


def _make_loop(config_class: Any, settings: dict[str, Any], stop_iters: int) -> Any:
    """The workers' ``train_loop_per_worker``: it holds the config class (pickled by reference)
    and the config's dict, never an algorithm."""

    def train_loop_per_worker() -> None:
        import jax
        import ray.train
        from ray.train import collective

        from rljax import distributed

        context = ray.train.get_context()
        rank, size = context.get_world_rank(), context.get_world_size()
        config = distributed.launch_settings_cleared(config_class.from_dict(settings))
        if size > 1 and not jax.distributed.is_initialized():
            address = None
            if rank == 0:
                address = f"{ray.util.get_node_ip_address()}:{_node_port()}"
            address = collective.broadcast_from_rank_zero(address)
            config.learners(num_processes=size, process_id=rank, coordinator_address=address)
        algo = config.build_algo()
        try:
            for i in range(stop_iters):
                result = algo.train()
                if i < stop_iters - 1:
                    ray.train.report(result)
                    continue
                with tempfile.TemporaryDirectory() as tmp:
                    # Every process takes part in the save (a replay shard is gathered);
                    # process 0 writes it and hands it to Ray.
                    algo.save_to_path(os.path.join(tmp, CHECKPOINT_SUBDIR))
                    checkpoint = ray.train.Checkpoint.from_directory(tmp) if rank == 0 else None
                    ray.train.report(result, checkpoint=checkpoint)
        finally:
            algo.stop()

    return train_loop_per_worker


def train_with_jax_trainer(
    config: Any,
    num_workers: int,
    stop_iters: int,
    resources_per_worker: Mapping[str, float] | None = None,
    devices_per_worker: int = 1,
    storage_path: str | os.PathLike | None = None,
    use_gpu: bool = False,
    name: str | None = None,
) -> dict[str, Any]:
    """Trains ``config``'s algorithm with its learners across ``num_workers`` Ray Train
    workers (one JAX process each, ``JaxTrainer``) for ``stop_iters`` iterations.

    Args:
      config: An rljax ``AlgorithmConfig`` (built in each worker from its ``to_dict()``); its
        ``num_learners`` counts the devices of all workers together, its
        ``num_envs_per_env_runner`` the sub-envs of all of them (each samples its share).
      num_workers: The JAX processes (Ray Train workers), >= 1.
      stop_iters: The training iterations, >= 1.
      resources_per_worker: Ray resources of each worker (Ray Train's default: 1 CPU, or 1 GPU
        with ``use_gpu``).
      devices_per_worker: Host devices of each worker on CPUs
        (``--xla_force_host_platform_device_count``); unused with ``use_gpu``.
      storage_path: Where Ray Train keeps the run and its checkpoint (Ray's default when None).
      use_gpu: Workers on GPUs (``JaxTrainer`` then initializes ``jax.distributed`` itself).
      name: The Ray Train run's name (Ray's default when None).

    Returns:
      Process 0's last result dict (RLlib's keys, env steps and episodes over every process),
      with ``checkpoint_path``: the rljax checkpoint directory process 0 saved at the end
      (``Algorithm.from_checkpoint`` loads it in any number of processes).

    Raises:
      ConfigError: A bad worker count, iteration count or device count.
    """
    for what, value in (
        ("num_workers", num_workers),
        ("stop_iters", stop_iters),
        ("devices_per_worker", devices_per_worker),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{what}={value!r}: allowed is an integer >= 1")
    try:
        from ray.train import RunConfig, ScalingConfig
        from ray.train.v2.jax import JaxConfig, JaxTrainer
    except ImportError as e:
        raise ImportError(
            'train_with_jax_trainer needs Ray Train 2.60: pip install "rljax[ray]"'
        ) from e
    trainer = JaxTrainer(
        train_loop_per_worker=_make_loop(type(config), config.to_dict(), stop_iters),
        jax_config=JaxConfig(use_gpu=use_gpu),
        scaling_config=ScalingConfig(
            num_workers=num_workers,
            use_gpu=use_gpu,
            resources_per_worker=dict(resources_per_worker) if resources_per_worker else None,
        ),
        run_config=RunConfig(
            name=name,
            storage_path=None if storage_path is None else os.fspath(storage_path),
            worker_runtime_env={"env_vars": _worker_env(devices_per_worker, use_gpu)},
        ),
    )
    result = trainer.fit()
    out = dict(result.metrics or {})
    ckpt = result.checkpoint
    out["checkpoint_path"] = None if ckpt is None else os.path.join(ckpt.path, CHECKPOINT_SUBDIR)
    return out


__all__ = ["CHECKPOINT_SUBDIR", "train_with_jax_trainer"]
