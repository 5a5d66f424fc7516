"""Names for code that configs and checkpoints refer to, registered in this process.

``register_env(name, creator)`` is ``ray.tune.registry.register_env``. ``register_module_class``
and ``register_policy_mapping_fn`` do the same for custom Flax modules and multi-agent mapping
functions. A config file or checkpoint may name any of them (by the registered name, or by the
import path the object was saved under): registering is how a process says it trusts that code,
so loading a file never imports code the file names (see ``rljax.utils.references``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_REGISTRY: dict[str, Callable[[dict[str, Any]], Any]] = {}
_MODULES: dict[str, type] = {}
_MAPPING_FNS: dict[str, Callable[..., Any]] = {}


def _check(kind: str, name: Any, obj: Any) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"{kind}: name must be a non-empty string; got {name!r}")
    if not callable(obj):
        raise TypeError(f"{kind}: the object must be callable; got {obj!r}")


def register_env(name: str, env_creator: Callable[[dict[str, Any]], Any]) -> None:
    """Registers ``env_creator(env_config) -> gymnasium.Env`` under ``name``.

    Args:
      name: The id to pass to ``config.environment(name)``.
      env_creator: A callable taking the ``env_config`` dict and returning a gymnasium env. A
        lambda or a class defined in a script or notebook works, in ASYNC mode too. A JAX env
        (``rljax.env.jax_env.JaxEnv``, ``JaxMultiAgentEnv``) is registered as its class, which
        rljax builds with the ``env_config``.
    """
    _check("register_env", name, env_creator)
    _REGISTRY[name] = env_creator


def register_module_class(name: str, module_class: type) -> None:
    """Registers a Flax module class for ``RLModuleSpec(module_class=...)``, so that configs
    and checkpoints naming it (by ``name`` or its import path) load in this process."""
    _check("register_module_class", name, module_class)
    _MODULES[name] = module_class


def register_policy_mapping_fn(name: str, fn: Callable[..., Any]) -> None:
    """Registers a multi-agent ``policy_mapping_fn``, so that configs and checkpoints naming it
    (by ``name`` or its import path) load in this process."""
    _check("register_policy_mapping_fn", name, fn)
    _MAPPING_FNS[name] = fn


def registered_creator(name: str) -> Callable[[dict[str, Any]], Any] | None:
    return _REGISTRY.get(name)


def registered_names() -> list[str]:
    return list(_REGISTRY)


def registered(kind: str) -> dict[str, Any]:
    """The registered objects of one kind: ``"env"``, ``"module_class"`` or
    ``"policy_mapping_fn"`` (name -> object)."""
    kinds: dict[str, dict[str, Any]] = {
        "env": _REGISTRY,
        "module_class": _MODULES,
        "policy_mapping_fn": _MAPPING_FNS,
    }
    return kinds.get(kind, {})  # callbacks have no registry: passed, or imported when allowed
