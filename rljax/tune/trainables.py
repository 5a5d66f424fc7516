"""What a ``Tuner``'s arguments stand for: the trainable (an algorithm name, class or config
object, or a function) and the search space of its ``param_space`` over the base config.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rljax.tune.class_trainable import Trainable, run_class_trainable
from rljax.utils.errors import ConfigError

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig


def class_runner(cls: type[Trainable]) -> Callable[[Any], None]:
    """A ``Trainable`` subclass as the function the ``Tuner`` runs for each trial: it runs
    ``cls`` in the trial of the running session (``run_class_trainable``)."""

    def run(config: Any) -> None:
        from rljax.tune import trial_run

        run_class_trainable(cls, config, trial_run._SESSION)

    run.__name__ = run.__qualname__ = cls.__name__
    run.class_trainable = cls  # type: ignore[attr-defined]  # saves checkpoints as asked
    return run


# Names given to ``tune.register_trainable``: what ``Tuner("name")`` and ``tune.run("name")``
# train.
TRAINABLES: dict[str, Any] = {}


def registered_trainable(name: str) -> Any | None:
    """The trainable ``tune.register_trainable`` registered as ``name``, or None."""
    return TRAINABLES.get(name)


def trainable_parts(
    trainable: Any,
) -> tuple[AlgorithmConfig | None, Callable[[Any], Any] | None, str]:
    """What a ``Tuner``'s trainable stands for: ``(base config, function, name)``, the base
    config (a copy) of an algorithm name, class or config object, or the function of a function
    trainable.

    Raises:
      ConfigError: an unknown algorithm name, a class that is no algorithm, or anything else,
        naming what a trainable may be.
    """
    from rljax.algorithms import registry
    from rljax.algorithms.algorithm import Algorithm
    from rljax.algorithms.algorithm_config import AlgorithmConfig

    base: AlgorithmConfig | None = None
    function: Callable[[Any], Any] | None = None
    name: str
    registered = registered_trainable(trainable) if isinstance(trainable, str) else None
    if registered is not None:  # tune.register_trainable's names come first, as Tune's
        base, function, _ = trainable_parts(registered)
        name = trainable
    elif isinstance(trainable, str):
        try:
            base = registry.config_class(trainable)()
        except KeyError:
            raise ConfigError(
                f"trainable {trainable!r} is not an rljax algorithm; use one of "
                f"{registry.algorithm_names()}, a name given to tune.register_trainable, an "
                "algorithm class, a config or a function"
            ) from None
        name = trainable
    elif inspect.isclass(trainable) and issubclass(trainable, Algorithm):
        base = trainable.config_class()
        if base.algo_class is None:
            raise ConfigError(f"trainable {trainable.__name__} is no algorithm to train")
        base.algo_class = trainable
        name = trainable.__name__
    elif inspect.isclass(trainable) and issubclass(trainable, Trainable):
        function = class_runner(trainable)
        name = trainable.__name__
    elif isinstance(trainable, AlgorithmConfig):
        base = trainable.copy()
        name = base.algo_name
    elif callable(trainable) and not inspect.isclass(trainable):
        function = trainable
        name = getattr(trainable, "__name__", type(trainable).__name__)
    else:
        raise ConfigError(
            f"trainable={trainable!r}: use an algorithm name ({registry.algorithm_names()}), "
            "an algorithm class, a config object, a tune.Trainable subclass, or a function "
            "train_fn(config)"
        )
    return base, function, name


def search_space_of(
    param_space: Mapping[str, Any] | AlgorithmConfig | None,
    base: AlgorithmConfig | None,
    function: Callable[[Any], Any] | None,
    name: str,
) -> tuple[AlgorithmConfig | None, AlgorithmConfig | None, dict[str, Any]]:
    """The search space of ``param_space`` over the trainable's ``base`` config, and how a
    variant becomes a trial's config: ``(base, config base, space)``, where a config object as
    ``param_space`` becomes the base (keeping the trainable's algorithm class), and a function
    trainable given a config object gets each variant as that config updated (the config base).

    Raises:
      ConfigError: a config of another algorithm than the trainable's, or a ``param_space``
        that is neither a dict nor a config object.
    """
    from rljax.algorithms.algorithm_config import AlgorithmConfig

    space: dict[str, Any]
    config_base: AlgorithmConfig | None = None
    if isinstance(param_space, AlgorithmConfig):
        if base is not None and type(param_space) is not type(base):
            raise ConfigError(
                f"param_space is a {type(param_space).__name__}, but the trainable "
                f"{name!r} takes a {type(base).__name__}"
            )
        if base is not None and base.algo_class is not None:
            algo_class = base.algo_class
            base = param_space.copy()
            base.algo_class = algo_class
        else:
            base = param_space.copy()
        if function is not None:
            config_base = base
        space = dict(base.search_space())
    elif param_space is None or isinstance(param_space, Mapping):
        space = dict(param_space or {})
        if base is not None:
            space = {**base.search_space(), **space}
    else:
        raise ConfigError(
            f"param_space={param_space!r}: use a dict of values and search spaces, or a "
            "config object"
        )
    return base, config_base, space


__all__ = ["search_space_of", "trainable_parts"]
