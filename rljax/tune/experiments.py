"""Tune's oldest entry point: ``tune.Experiment`` and ``tune.run_experiments``, as RLlib 1.x
tutorials and ``rllib train -f`` files use them (``{"name": {"run": "PPO", "env": ...,
"config": {...}, "stop": {...}}}``). Each experiment runs through ``tune.run``.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

from rljax.tune.tuner import run
from rljax.utils.errors import ConfigError

# The keys of an experiment's spec dict (Tune's ``Experiment`` arguments; ``env`` is RLlib's:
# it moves into ``config``).
SPEC_KEYS = (
    "run",
    "env",
    "config",
    "stop",
    "time_budget_s",
    "resources_per_trial",
    "num_samples",
    "storage_path",
    "local_dir",
    "checkpoint_config",
    "checkpoint_freq",
    "checkpoint_at_end",
    "keep_checkpoints_num",
    "checkpoint_score_attr",
    "trial_name_creator",
    "trial_dirname_creator",
    "max_failures",
    "sync_config",
    "log_to_file",
    "export_formats",
    "restore",
)


class Experiment:
    """One experiment (Tune's ``Experiment``): a trainable, its config and when its trials
    stop, with ``tune.run``'s arguments.

    Args:
      name: The experiment's directory under ``storage_path``.
      run: The trainable (an algorithm name or class, a config, a ``tune.Trainable`` or a
        function).
      **kwargs: ``tune.run``'s arguments (``stop``, ``config``, ``num_samples``,
        ``storage_path`` / ``local_dir``, ``checkpoint_config`` or ``checkpoint_freq`` /
        ``checkpoint_at_end`` / ``keep_checkpoints_num``, ``max_failures``, ...).

    Raises:
      ConfigError: an empty name, or a keyword ``tune.run`` does not take.
    """

    def __init__(self, name: str, run: Any, **kwargs: Any):
        if not isinstance(name, str) or not name or os.sep in name:
            raise ConfigError(f"Experiment(name={name!r}): use a directory name")
        unknown = sorted(set(kwargs) - set(SPEC_KEYS))
        if unknown:
            raise ConfigError(
                f"Experiment({name!r}) got unknown keywords {unknown}; it takes {list(SPEC_KEYS)}"
            )
        self.name = name
        self.run_or_experiment = run
        self.spec: dict[str, Any] = dict(kwargs)

    @classmethod
    def from_json(cls, name: str, spec: Mapping[str, Any]) -> Experiment:
        """The experiment a spec dict describes (``{"run": ..., "env": ..., "config": ...,
        "stop": ...}``); RLlib's top-level ``env`` moves into ``config``.

        Raises:
          ConfigError: no ``run``, or a key that is not an experiment's.
        """
        if not isinstance(spec, Mapping):
            raise ConfigError(f"experiment {name!r}: give a dict spec, got {type(spec).__name__}")
        spec = dict(spec)
        if "run" not in spec:
            raise ConfigError(f"experiment {name!r}: no trainable given (its 'run' key)")
        trainable = spec.pop("run")
        if "env" in spec:  # RLlib's shorthand: the env belongs in the config
            config = copy.copy(spec.get("config") or {})
            if not isinstance(config, dict):
                raise ConfigError(
                    f"experiment {name!r}: 'env' goes into a dict 'config'; its config is a "
                    f"{type(config).__name__}"
                )
            config["env"] = spec.pop("env")
            spec["config"] = config
        return cls(name, trainable, **spec)

    def __repr__(self) -> str:
        return f"Experiment({self.name!r}, run={self.run_or_experiment!r})"


def _experiments_of(experiments: Any) -> list[Experiment]:
    if isinstance(experiments, Experiment):
        return [experiments]
    if isinstance(experiments, Mapping):
        return [
            e if isinstance(e, Experiment) else Experiment.from_json(str(n), e)
            for n, e in experiments.items()
        ]
    if (
        isinstance(experiments, Sequence)
        and not isinstance(experiments, str)
        and all(isinstance(e, Experiment) for e in experiments)
    ):
        return list(experiments)
    raise ConfigError(
        f"run_experiments({experiments!r}): give an Experiment, a list of them, or a dict of "
        "name -> spec ({'run': ..., 'config': ..., 'stop': ...})"
    )


def run_experiments(
    experiments: Experiment | Sequence[Experiment] | Mapping[str, Any],
    scheduler: Any = None,
    verbose: int = 2,
    progress_reporter: Any = None,
    resume: bool | str | None = False,
    reuse_actors: bool | None = None,
    raise_on_failed_trial: bool = True,
    concurrent: bool = True,
    callbacks: Sequence[Any] | None = None,
    trial_executor: Any = None,
    **kwargs: Any,
) -> list[Any]:
    """Runs each experiment through ``tune.run``, one after another (Tune's
    ``run_experiments``), and returns every trial's ``Result``.

    ``experiments``: an ``Experiment``, a list of them, or a dict of name -> spec
    (``{"run": "PPO", "env": "CartPole-v1", "config": {...}, "stop": {...}}``).
    ``concurrent`` and ``trial_executor`` are accepted as Tune's; the other arguments go to
    each ``tune.run``.

    Raises:
      ConfigError: a spec that is not an experiment's, or an argument ``tune.run`` refuses.
      TuneError: ``raise_on_failed_trial`` and a trial raised.
    """
    if trial_executor is not None:
        raise ConfigError("run_experiments(trial_executor=...): rljax runs the trials itself")
    if kwargs:
        raise ConfigError(f"run_experiments() got unknown keywords {sorted(kwargs)}")
    trials: list[Any] = []
    for experiment in _experiments_of(experiments):
        analysis = run(
            experiment.run_or_experiment,
            name=experiment.name,
            scheduler=scheduler,
            verbose=verbose,
            progress_reporter=progress_reporter,
            resume=resume,
            reuse_actors=reuse_actors,
            raise_on_failed_trial=raise_on_failed_trial,
            callbacks=list(callbacks) if callbacks else None,
            **experiment.spec,
        )
        trials.extend(analysis.trials)
    return trials


__all__ = ["Experiment", "SPEC_KEYS", "run_experiments"]
