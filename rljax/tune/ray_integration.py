"""rljax algorithms as trainables of Ray Tune itself, for experiments that outgrow one machine.

``ray_trainable("PPO")`` returns a ``ray.tune.Trainable`` class that trains an rljax algorithm:
Ray Tune spreads the trials over a Ray cluster (its searchers, schedulers, PBT and fault
tolerance included), and each trial keeps rljax's single-host speed (EnvPool's envs stepped
inside the jitted program). Ray is optional: nothing here imports it until ``ray_trainable`` is
called.

Example:
    ```python
    from ray import tune as ray_tune
    from rljax.tune import ray_trainable

    ray_tune.Tuner(
        ray_trainable("PPO"),
        param_space={"env": "CartPole-v1", "lr": ray_tune.grid_search([1e-3, 3e-4])},
        run_config=ray_tune.RunConfig(stop={"training_iteration": 20}),
    ).fit()
    ```

The trial's ``config`` holds rljax settings by RLlib's names (as ``update_from_dict`` takes
them); ``train()`` returns the algorithm's RLlib result dict, plus ``node_id`` (the Ray node the
trial ran on: nodes of one machine share ``node_ip``).

Resources, as RLlib's trials ask for them: the class's ``default_resource_request(config)`` is
rljax's ``Algorithm.default_resource_request`` of the trial's config (``num_env_runners``,
``num_cpus_per_env_runner``, ``num_learners``, ``num_cpus_per_learner``,
``num_gpus_per_learner``, evaluation env runners) as Ray's ``PlacementGroupFactory``: one bundle
for the trial's process, one per env runner and one per learner. Two differences from RLlib,
because an rljax trial runs its env runners and learners inside its one process: the bundles
are placed ``STRICT_PACK`` (all on one node), and every GPU is in the first bundle (the trial's
process is the one that sees them; Ray gives an actor the GPUs of its own bundle only).

Checkpoints are Ray's (``ray.tune.Checkpoint`` directories that Ray Tune persists in
``RunConfig(storage_path=...)``, by ``CheckpointConfig(checkpoint_frequency=...,
checkpoint_at_end=...)``) with an rljax checkpoint inside (``save_to_path`` /
``restore_from_path``, under ``algorithm/``): no pickle of rljax's state, so PBT's exploit,
``FailureConfig(max_failures=...)`` and ``Tuner.restore`` load them as rljax does.
``reset_config`` builds the next trial's algorithm in the same process, so
``TuneConfig(reuse_actors=True)`` spares PBT and long grids a process start per trial.

A trial never writes over a checkpoint folder that exists: Ray Tune 2.60 numbers a trial's
checkpoint folders from a count that a paused trial's process loses (PBT's own saves are not
counted when the trial resumes), so its next save could land in the folder PBT just gave another
trial to clone, and the clone would load the donor's later state under the earlier iteration. The
trainable moves the count past folders that exist before Ray persists a save.
"""

from __future__ import annotations

import os
from typing import Any

from rljax.utils.errors import ConfigError

# Keys Ray Tune adds to a trial's config for itself; they are no rljax settings.
_TUNE_KEYS = frozenset({"__trial_info__", "__stdout_file__", "__stderr_file__"})
# Keys of rljax's result that Ray Tune's Trainable sets itself (it keeps its own count).
_TRAINABLE_KEYS = ("training_iteration", "time_this_iter_s", "time_total_s", "timestamp", "done")
CHECKPOINT_SUBDIR = "algorithm"
"""Where the rljax checkpoint sits inside a Ray checkpoint directory."""


def _import_ray_tune() -> Any:
    try:
        from ray import tune as ray_tune
    except ImportError as e:
        raise ImportError(
            'rljax.tune.ray_trainable needs Ray Tune: pip install "ray[tune]" (or '
            '"rljax[ray]"; rljax\'s own tune.Tuner needs no Ray)'
        ) from e
    return ray_tune


def _algorithm(algorithm: str | type) -> tuple[Any, type | None, str]:
    """(config class, algorithm class or None, name) of ``algorithm``."""
    from rljax.algorithms import registry
    from rljax.algorithms.algorithm import Algorithm

    if isinstance(algorithm, str):
        try:
            return registry.config_class(algorithm), None, algorithm
        except KeyError:
            raise ConfigError(
                f"ray_trainable({algorithm!r}): not an rljax algorithm; use one of "
                f"{registry.algorithm_names()} or an algorithm class"
            ) from None
    if isinstance(algorithm, type) and issubclass(algorithm, Algorithm):
        return algorithm.config_class, algorithm, algorithm.__name__
    raise ConfigError(
        f"ray_trainable({algorithm!r}): use an algorithm name "
        f"({registry.algorithm_names()}) or an rljax algorithm class"
    )


def _algo_config(config_class: Any, algo_class: type | None, config: dict[str, Any]) -> Any:
    settings = {k: v for k, v in config.items() if k not in _TUNE_KEYS}
    algo_config = config_class().update_from_dict(settings)
    if algo_class is not None:
        algo_config.algo_class = algo_class
    return algo_config


def trial_bundles(algorithm: str | type, config: dict[str, Any]) -> list[dict[str, float]]:
    """The placement-group bundles a Ray Tune trial of ``algorithm`` with ``config`` asks for:
    rljax's ``Algorithm.default_resource_request`` with every GPU moved into the first bundle
    (the trial's process, where an rljax trial's learners run). Needs no Ray.

    Raises:
      ConfigError: ``algorithm`` is not an rljax algorithm, or ``config`` has a bad setting.
    """
    config_class, algo_class, _ = _algorithm(algorithm)
    algo_config = _algo_config(config_class, algo_class, config)
    algo_config._check_settings()  # each knob's type and range; no env is looked up here
    cls = algo_config.algo_class
    if algo_config.is_multi_agent and cls.multi_agent_class() is not None:
        cls = cls.multi_agent_class()
    request = cls.default_resource_request(algo_config)
    bundles = [dict(b) for b in request.bundles]
    gpus = sum(b.pop("GPU", 0.0) for b in bundles)
    bundles[0]["GPU"] = gpus
    # Zero amounts say nothing; Ray refuses an empty bundle, so one asking for nothing (a 0-CPU
    # env runner) is left out, and the trial's own bundle keeps its CPU entry.
    bundles = [{k: v for k, v in b.items() if v} for b in bundles]
    head = bundles[0] or {"CPU": 0.0}
    return [head, *(b for b in bundles[1:] if b)]


def _skip_taken_checkpoint_folders(storage: Any) -> None:
    """Advances Ray's checkpoint count (``StorageContext.current_checkpoint_index``, which Ray
    raises by one and then persists the save into ``checkpoint_<index>``) until that folder does
    not exist in the trial's folder: an existing one may be a checkpoint another trial restores.
    """
    if storage is None or getattr(storage, "trial_dir_name", None) is None:
        return
    from pyarrow import fs as pa_fs

    def next_folder() -> str:
        name = storage._make_checkpoint_dir_name(storage.current_checkpoint_index + 1)
        return f"{storage.trial_fs_path}/{name}"

    while storage.storage_filesystem.get_file_info(next_folder()).type != pa_fs.FileType.NotFound:
        storage.current_checkpoint_index += 1


def ray_trainable(algorithm: str | type) -> type:
    """A ``ray.tune.Trainable`` class training rljax's ``algorithm`` (a name such as ``"PPO"``,
    or an rljax algorithm class), whose trials ask Ray for the resources their config's knobs
    name (see the module's docstring).

    Raises:
      ImportError: Ray Tune is not installed (``pip install "ray[tune]"``).
      ConfigError: ``algorithm`` is not an rljax algorithm.
    """
    _import_ray_tune()
    from ray import tune as ray_tune

    config_class, algo_class, name = _algorithm(algorithm)

    class RljaxTrainable(ray_tune.Trainable):
        """Trains one rljax algorithm per trial (see ``rljax.tune.ray_integration``)."""

        @classmethod
        def default_resource_request(cls, config: dict[str, Any]) -> Any:
            """The trial's placement group: ``trial_bundles``, ``STRICT_PACK``."""
            bundles = trial_bundles(algo_class or name, config)
            return ray_tune.PlacementGroupFactory(bundles, strategy="STRICT_PACK")

        def setup(self, config: dict[str, Any]) -> None:
            import ray

            self.node_id = ray.get_runtime_context().get_node_id()
            self.algo = _algo_config(config_class, algo_class, config).build_algo()

        def reset_config(self, new_config: dict[str, Any]) -> bool:
            """Starts another trial in this process (``TuneConfig(reuse_actors=True)``, PBT's
            exploit): a new algorithm from ``new_config``, without a new process's start-up."""
            self.algo.stop()
            self.algo = _algo_config(config_class, algo_class, new_config).build_algo()
            return True

        def step(self) -> dict[str, Any]:
            result = self.algo.train()
            for key in _TRAINABLE_KEYS:
                result.pop(key, None)
            result["node_id"] = self.node_id
            return result

        def save_checkpoint(self, checkpoint_dir: str) -> str:
            self.algo.save_to_path(os.path.join(checkpoint_dir, CHECKPOINT_SUBDIR))
            _skip_taken_checkpoint_folders(self._storage)
            return checkpoint_dir

        def load_checkpoint(self, checkpoint: str | dict[str, Any]) -> None:
            path = checkpoint if isinstance(checkpoint, str) else checkpoint["path"]
            self.algo.restore_from_path(os.path.join(path, CHECKPOINT_SUBDIR))

        def cleanup(self) -> None:
            self.algo.stop()

    RljaxTrainable.__name__ = RljaxTrainable.__qualname__ = f"rljax_{name}"
    return RljaxTrainable


__all__ = ["CHECKPOINT_SUBDIR", "ray_trainable", "trial_bundles"]
