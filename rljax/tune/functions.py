"""Tune's helpers around function trainables and names: ``register_trainable``,
``with_parameters``, ``get_context`` (``TuneContext``), ``create_scheduler`` and
``create_searcher``, with Ray Tune 2.x's names and signatures.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rljax.tune import trainables
from rljax.tune.class_trainable import Trainable, bind_setup_kwargs
from rljax.utils.errors import ConfigError


def register_trainable(name: str, trainable: Any, warn: bool = True) -> None:
    """Registers ``trainable`` (a function ``train_fn(config)``, an algorithm class or a config)
    under ``name``, so that ``Tuner(name)``, ``tune.run(name)`` and
    ``tune.registry.get_trainable_cls(name)`` find it (Tune's ``register_trainable``). A name
    registered again is replaced. ``warn`` is accepted as Tune's.

    Raises:
      ConfigError: ``name`` is not a non-empty string, or ``trainable`` is none of those.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"register_trainable(name={name!r}): use a non-empty str")
    trainables.trainable_parts(trainable)  # refuses what cannot be trained, naming what may
    trainables.TRAINABLES[name] = trainable


def with_parameters(trainable: Callable[..., Any], **kwargs: Any) -> Any:
    """``trainable`` (a function ``train_fn(config, **kwargs)``) with ``kwargs`` bound: the
    function Tune calls with each trial's config (Tune's ``with_parameters``, which passes
    large objects, such as a dataset, without putting them in the config). For a
    ``tune.Trainable`` subclass, a subclass whose ``setup(config, **kwargs)`` gets them. The objects stay in
    this process's memory, and go to a worker process with the function when trials run in
    workers.

    Raises:
      ConfigError: ``trainable`` is not a function (an rljax algorithm takes its settings in
        its config), or a keyword is not one of its parameters.
    """
    is_class = inspect.isclass(trainable) and issubclass(trainable, Trainable)
    if not is_class and (inspect.isclass(trainable) or not callable(trainable)):
        raise ConfigError(
            f"with_parameters({trainable!r}): use a function train_fn(config, **kwargs) or a "
            "tune.Trainable subclass; an algorithm trainable takes its settings in its config "
            "(param_space)"
        )
    try:
        checked = trainable.setup if is_class else trainable  # type: ignore[attr-defined]
        inspect.signature(checked).bind(*([None] if is_class else []), {}, **kwargs)
    except TypeError as e:
        raise ConfigError(
            f"with_parameters({getattr(trainable, '__name__', trainable)!r}, "
            f"{', '.join(kwargs)}): {e}"
        ) from None
    except ValueError:  # no signature to check (a builtin): the call will tell
        pass

    if is_class:
        return bind_setup_kwargs(trainable, kwargs)  # type: ignore[arg-type]

    @functools.wraps(trainable)
    def bound(config: Any) -> Any:
        return trainable(config, **kwargs)

    return bound


class TuneContext:
    """What a running function trainable may ask about its trial (Tune's ``TuneContext``,
    from ``tune.get_context()``). A trial runs as one process on this host: its world size is
    1 and every rank 0."""

    def __init__(self, trial: Any):
        self._trial = trial

    def get_trial_id(self) -> str:
        return str(self._trial.trial_id)

    def get_trial_name(self) -> str:
        """The trial's name, as Tune's (``str(trial)``: ``<trainable>_<trial_id>`` or
        ``trial_name_creator``'s), where the Tuner named it; else its directory's name."""
        name = getattr(self._trial, "name", None)
        return str(name) if name else Path(self._trial.path).name

    def get_trial_dir(self) -> str:
        return os.fspath(self._trial.path)

    def get_experiment_name(self) -> str:
        return Path(self._trial.path).parent.name

    def get_trial_resources(self) -> dict[str, float]:
        """Nothing is reserved on one host: an empty request."""
        return {}

    def get_metadata(self) -> dict[str, Any]:
        return {}

    def get_storage(self) -> str:
        """The experiment's directory (its ``storage_path/name``)."""
        return os.fspath(Path(self._trial.path).parent)

    def get_world_size(self) -> int:
        return 1

    def get_world_rank(self) -> int:
        return 0

    def get_local_rank(self) -> int:
        return 0

    def get_local_world_size(self) -> int:
        return 1

    def get_node_rank(self) -> int:
        return 0


def get_context() -> TuneContext:
    """The running trial's ``TuneContext`` (Tune's ``tune.get_context()``).

    Raises:
      RuntimeError: called outside a function trainable run by ``Tuner.fit()``.
    """
    from rljax.tune import trial_run

    session = trial_run._SESSION
    if session is None:
        raise RuntimeError(
            "tune.get_context() is called inside a function trainable run by "
            "tune.Tuner(...).fit() or tune.run(...); no trial is running"
        )
    return TuneContext(session)


def _schedulers() -> dict[str, Callable[..., Any]]:
    from rljax.tune import schedulers

    return {
        "fifo": schedulers.FIFOScheduler,
        "async_hyperband": schedulers.AsyncHyperBandScheduler,
        "asynchyperband": schedulers.AsyncHyperBandScheduler,
        "asha": schedulers.ASHAScheduler,
        "median_stopping_rule": schedulers.MedianStoppingRule,
        "medianstopping": schedulers.MedianStoppingRule,
        "hyperband": schedulers.HyperBandScheduler,
        "pbt": schedulers.PopulationBasedTraining,
    }


def _searchers() -> dict[str, Callable[..., Any]]:
    from rljax.tune import search

    return {
        "variant_generator": search.BasicVariantGenerator,
        "random": search.BasicVariantGenerator,
        "optuna": search.OptunaSearch,
    }


def create_scheduler(scheduler: str, **kwargs: Any) -> Any:
    """The scheduler Tune names ``scheduler`` (``"fifo"``, ``"async_hyperband"``,
    ``"median_stopping_rule"``, ``"hyperband"``, ``"pbt"``, ...), built with ``kwargs``.

    Raises:
      ConfigError: a name rljax has no scheduler for, listing those it has.
    """
    return _create("scheduler", scheduler, _schedulers(), kwargs)


def create_searcher(search_alg: str, **kwargs: Any) -> Any:
    """The search algorithm Tune names ``search_alg`` (``"variant_generator"`` / ``"random"``:
    the default generator, ``"optuna"``), built with ``kwargs``.

    Raises:
      ConfigError: a name rljax has no search algorithm for, listing those it has.
    """
    return _create("search_alg", search_alg, _searchers(), kwargs)


def _create(what: str, name: Any, table: dict[str, Callable[..., Any]], kwargs: Any) -> Any:
    if not isinstance(name, str) or name.lower() not in table:
        raise ConfigError(
            f"{what}={name!r}: rljax has {sorted(table)} (Tune's others, such as bohb, pb2 or "
            "hyperopt, need libraries rljax does not use)"
        )
    return table[name.lower()](**kwargs)


__all__ = [
    "TuneContext",
    "create_scheduler",
    "create_searcher",
    "get_context",
    "register_trainable",
    "with_parameters",
]
