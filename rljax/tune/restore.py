"""Reading an experiment back for ``Tuner.restore``: its saved state checked as untrusted
data, the base config rebuilt from its saved settings, each trial's variant again, and the
``Tuner`` that continues it; and the base config's settings as the state saves them.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rljax.tune import experiment_state as es
from rljax.utils.errors import ConfigError
from rljax.utils.search_space import Domain

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig


def base_config_data(base: AlgorithmConfig | None) -> dict[str, Any] | None:
    """A base config's settings as JSON data for the experiment state (searched settings left
    out: each trial's variant sets them); None when they are not plain data."""
    if base is None:
        return None
    data = {k: v for k, v in base.to_dict().items() if not isinstance(v, Domain)}
    try:
        return dict(json.loads(json.dumps(data)))
    except (TypeError, ValueError):
        return None


def base_config_from_data(trainable: Any, state: es.ExperimentState) -> AlgorithmConfig:
    """The experiment's base config again, from its saved settings, for an algorithm name or
    class (``from_dict``: nothing is imported unless registered in this process)."""
    from rljax.algorithms import registry
    from rljax.algorithms.algorithm import Algorithm

    if isinstance(trainable, str):
        try:
            cls = registry.config_class(trainable)
        except KeyError:
            raise ConfigError(
                f"trainable {trainable!r} is not an rljax algorithm; use one of "
                f"{registry.algorithm_names()}"
            ) from None
    elif inspect.isclass(trainable) and issubclass(trainable, Algorithm):
        cls = type(trainable.config_class())
    else:
        raise ConfigError(
            f"{state.path}: the experiment trained the algorithm {state.trainable!r}; pass its "
            "name, its class or a config object as trainable"
        )
    assert state.base_config is not None
    try:
        config = cls.from_dict(state.base_config)
    except ConfigError as e:
        raise ConfigError(
            f"{state.path}: its saved base config does not load ({e}); pass the config object "
            "as trainable: Tuner.restore(path, trainable=config)"
        ) from None
    if inspect.isclass(trainable):
        config.algo_class = trainable
    return config


def variants_over(param_space: Mapping[str, Any], state: es.ExperimentState) -> list[Any]:
    """Each trial's variant as ``param_space`` with its searched values replaced by the saved
    ones (for values JSON could not keep)."""
    from rljax.tune.variants import _copy_tree, _replace

    variants = []
    for saved in state.variants:
        variant = _copy_tree(dict(param_space))
        for path in state.searched:
            value: Any = saved
            try:
                for key in path:
                    value = value[key]
                variant = _replace(variant, tuple(path), _copy_tree(value))
            except (KeyError, IndexError, TypeError):
                raise ConfigError(
                    f"param_space has no key path {path!r} that the experiment searched; pass "
                    "the original param_space"
                ) from None
        variants.append(variant)
    return variants


def _saved_trainer(trainable: Any, state: Any) -> Any:
    """The trainable to restore with: RLlib 1.x's trainer where the experiment trained it
    for this algorithm name (a dict config that asked for the old stack: ``Tuner("PPO",
    param_space={"model": {"custom_model": ...}})`` trains ``PPOTrainer``), else as given."""
    if not isinstance(trainable, str) or state.kind != "algorithm" or state.trainable == trainable:
        return trainable
    from rljax.agents import TRAINERS, trainer_class

    if trainable in TRAINERS and trainer_class(trainable).__name__ == state.trainable:
        return trainer_class(trainable)
    return trainable


def restore_tuner(
    cls: Any,
    path: str | os.PathLike[str],
    trainable: Any,
    param_space: Mapping[str, Any] | AlgorithmConfig | None,
    resume_unfinished: bool,
    resume_errored: bool,
    restart_errored: bool,
    stop: Any,
    callbacks: list[Any] | None,
    scheduler: Any = None,
) -> Any:
    """``Tuner.restore``: a ``cls`` (``Tuner``) that continues the experiment at ``path``, its
    directory read as untrusted data before anything in it changes (see ``Tuner.restore``)."""
    from rljax.algorithms.algorithm_config import AlgorithmConfig, check_loaded_env_settings

    state = es.ExperimentState.load(path)
    es.check_trial_files(state)  # every file read back is checked before anything changes
    for index, saved in enumerate(state.variants):  # settings read from a file
        if isinstance(saved, Mapping):
            try:
                check_loaded_env_settings(saved)
            except ConfigError as e:
                raise ConfigError(f"{state.path}: trial {index}: {e}") from None
    trainable = _saved_trainer(trainable, state)
    tune_config, run_config = es.restored_configs(state, stop, scheduler)
    if callbacks is not None:
        run_config = dataclasses.replace(run_config, callbacks=callbacks)
    # The base settings: a config given again, else (an algorithm) the saved ones.
    base_space = param_space if isinstance(param_space, AlgorithmConfig) else None
    if state.kind == "algorithm" and not isinstance(trainable, AlgorithmConfig):
        if base_space is None and state.base_config is None:
            raise ConfigError(
                f"{state.path}: the base config of {state.trainable!r} held objects that "
                "could not be saved; pass the config again: Tuner.restore(path, "
                "trainable=config)"
            )
        if base_space is None:
            base_space = base_config_from_data(trainable, state)
    if state.kind == "function" and state.base_config is not None and base_space is None:
        raise ConfigError(
            f"{state.path}: the function trainable {state.trainable!r} took a config object; "
            "pass it again: Tuner.restore(path, trainable, param_space=config)"
        )
    tuner = cls(
        trainable,
        param_space=base_space,
        tune_config=dataclasses.replace(tune_config, num_samples=1),
        run_config=run_config,
    )
    kind = "function" if tuner._function is not None else "algorithm"
    if kind != state.kind or (kind == "algorithm" and tuner.trainable_name != state.trainable):
        raise ConfigError(
            f"{state.path}: the experiment trained {state.kind} {state.trainable!r}; "
            f"got the {kind} {tuner.trainable_name!r}"
        )
    tuner.tune_config = tune_config
    # Results show whole configs as the experiment's did (older states: what this restore has).
    whole = state.tune_config.get("whole_config")
    if isinstance(whole, bool):
        tuner._whole_config = tuner._config_dict if whole else None
    tuner._searched = [tuple(p) for p in state.searched]
    if isinstance(param_space, Mapping):
        tuner._variants = variants_over(param_space, state)
    elif state.variants_exact:
        tuner._variants = state.variants
    else:
        raise ConfigError(
            f"{state.path}: the variants held values JSON cannot keep (objects, tuples); "
            "pass the original param_space again: Tuner.restore(path, trainable, "
            "param_space=...)"
        )
    if tuner._function is None:
        assert tuner._base is not None
        # Each variant as the experiment read it (an old-API trainer's: its dict config).
        tuner._algo_configs = [tuner._variant_config(v) for v in tuner._variants]
    tuner._restored = (
        state,
        es.ResumeFlags(bool(resume_unfinished), bool(resume_errored), bool(restart_errored)),
    )
    return tuner


__all__ = ["base_config_data", "base_config_from_data", "restore_tuner", "variants_over"]
