"""``register_env(name, creator)``, as ``ray.tune.registry.register_env``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_REGISTRY: dict[str, Callable[[dict[str, Any]], Any]] = {}


def register_env(name: str, env_creator: Callable[[dict[str, Any]], Any]) -> None:
    """Registers ``env_creator(env_config) -> gymnasium.Env`` under ``name``.

    Args:
      name: The id to pass to ``config.environment(name)``.
      env_creator: A callable taking the ``env_config`` dict and returning a gymnasium env. A
        lambda or a class defined in a script or notebook works, in ASYNC mode too.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_env: name must be a non-empty string; got {name!r}")
    if not callable(env_creator):
        raise TypeError(f"register_env: env_creator must be callable; got {env_creator!r}")
    _REGISTRY[name] = env_creator


def registered_creator(name: str) -> Callable[[dict[str, Any]], Any] | None:
    return _REGISTRY.get(name)


def registered_names() -> list[str]:
    return list(_REGISTRY)
