"""rljax algorithms as trainables of Ray Tune itself, for experiments that outgrow one machine.

``ray_trainable("PPO")`` returns a ``ray.tune.Trainable`` class that trains an rljax algorithm:
Ray Tune spreads the trials over a Ray cluster (its searchers, schedulers, PBT and fault
tolerance included), and each trial keeps rljax's single-host speed (EnvPool's envs stepped
inside the jitted program). Ray is optional: nothing here imports it until ``ray_trainable`` is
called.

Example::

    from ray import tune as ray_tune
    from rljax.tune import ray_trainable

    ray_tune.Tuner(
        ray_trainable("PPO"),
        param_space={"env": "CartPole-v1", "lr": ray_tune.grid_search([1e-3, 3e-4])},
        run_config=ray_tune.RunConfig(stop={"training_iteration": 20}),
    ).fit()

The trial's ``config`` holds rljax settings by RLlib's names (as ``update_from_dict`` takes
them); ``train()`` returns the algorithm's RLlib result dict; checkpoints are rljax checkpoints
(``save_to_path`` / ``restore_from_path``), so PBT's exploit and Tune's restore work.
"""

from __future__ import annotations

import os
from typing import Any

from rljax.utils.errors import ConfigError

# Keys Ray Tune adds to a trial's config for itself; they are no rljax settings.
_TUNE_KEYS = frozenset({"__trial_info__", "__stdout_file__", "__stderr_file__"})
# Keys of rljax's result that Ray Tune's Trainable sets itself (it keeps its own count).
_TRAINABLE_KEYS = ("training_iteration", "time_this_iter_s", "time_total_s", "timestamp", "done")


def ray_trainable(algorithm: str | type) -> type:
    """A ``ray.tune.Trainable`` class training rljax's ``algorithm`` (a name such as ``"PPO"``,
    or an rljax algorithm class).

    Raises:
      ImportError: Ray Tune is not installed (``pip install "ray[tune]"``).
      ConfigError: ``algorithm`` is not an rljax algorithm.
    """
    try:
        from ray import tune as ray_tune  # type: ignore[import-not-found]
    except ImportError as e:
        raise ImportError(
            'rljax.tune.ray_trainable needs Ray Tune: pip install "ray[tune]" (rljax\'s own '
            "tune.Tuner needs no Ray)"
        ) from e
    from rljax.algorithms import registry
    from rljax.algorithms.algorithm import Algorithm

    if isinstance(algorithm, str):
        try:
            config_class = registry.config_class(algorithm)
        except KeyError:
            raise ConfigError(
                f"ray_trainable({algorithm!r}): not an rljax algorithm; use one of "
                f"{registry.algorithm_names()} or an algorithm class"
            ) from None
        algo_class = None
        name = algorithm
    elif isinstance(algorithm, type) and issubclass(algorithm, Algorithm):
        config_class, algo_class, name = algorithm.config_class, algorithm, algorithm.__name__
    else:
        raise ConfigError(
            f"ray_trainable({algorithm!r}): use an algorithm name "
            f"({registry.algorithm_names()}) or an rljax algorithm class"
        )

    class RljaxTrainable(ray_tune.Trainable):
        """Trains one rljax algorithm per trial (see ``rljax.tune.ray_integration``)."""

        def setup(self, config: dict[str, Any]) -> None:
            settings = {k: v for k, v in config.items() if k not in _TUNE_KEYS}
            algo_config = config_class().update_from_dict(settings)
            if algo_class is not None:
                algo_config.algo_class = algo_class
            self.algo = algo_config.build_algo()

        def step(self) -> dict[str, Any]:
            result = self.algo.train()
            for key in _TRAINABLE_KEYS:
                result.pop(key, None)
            return result

        def save_checkpoint(self, checkpoint_dir: str) -> str:
            self.algo.save_to_path(os.path.join(checkpoint_dir, "algorithm"))
            return checkpoint_dir

        def load_checkpoint(self, checkpoint: str | dict[str, Any]) -> None:
            path = checkpoint if isinstance(checkpoint, str) else checkpoint["path"]
            self.algo.restore_from_path(os.path.join(path, "algorithm"))

        def cleanup(self) -> None:
            self.algo.stop()

    RljaxTrainable.__name__ = RljaxTrainable.__qualname__ = f"rljax_{name}"
    return RljaxTrainable


__all__ = ["ray_trainable"]
