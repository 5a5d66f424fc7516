"""Tune's registry (``ray.tune.registry``): ``register_env``, ``register_trainable`` and
``get_trainable_cls``."""

from __future__ import annotations

from typing import Any

from rljax.env.registry import register_env
from rljax.tune.functions import register_trainable
from rljax.tune.trainables import registered_trainable
from rljax.utils.errors import ConfigError


def get_trainable_cls(trainable_name: str) -> type[Any]:
    """The algorithm class registered as ``trainable_name`` (``"PPO"``, ``"DQN"``, ...), as
    Tune's registry returns it: ``get_trainable_cls("PPO").get_default_config()``; a name given
    to ``register_trainable`` returns what was registered."""
    from rljax.algorithms import registry

    if not isinstance(trainable_name, str):
        raise ConfigError(f"get_trainable_cls({trainable_name!r}): use an algorithm's name")
    registered = registered_trainable(trainable_name)
    if registered is not None:
        return registered
    try:
        config_class = registry.config_class(trainable_name)
    except KeyError:
        names = registry.algorithm_names()
        upper = [n for n in names if n == trainable_name.upper()]
        hint = f" (did you mean {upper[0]!r}?)" if upper else ""
        raise ConfigError(
            f"get_trainable_cls({trainable_name!r}): no such algorithm{hint}; rljax has {names}"
        ) from None
    algo_class: type[Any] = config_class().algo_class
    return algo_class


__all__ = ["get_trainable_cls", "register_env", "register_trainable"]
