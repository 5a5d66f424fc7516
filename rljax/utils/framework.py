"""RLlib's framework probes (``ray.rllib.utils.framework``): scripts call them to import
PyTorch or TensorFlow when present. rljax's models run in JAX; these return the library if
it is installed (for a script's own use). Without TensorFlow they return ``None``
placeholders, as RLlib's do.

Without PyTorch, ``try_import_torch()`` returns stand-ins instead of ``None`` (both falsy):
RLlib's example scripts name torch's initializers in their model configs
(``fcnet_kernel_initializer=nn.init.xavier_uniform_``), which rljax maps to its own by name,
so ``nn.init.<name>`` is a named reference to rljax's initializer of that name. Anything else
taken from them (``torch.from_numpy``, ``nn.Module``) raises one error naming what the script
used and that rljax runs JAX, instead of an ``AttributeError`` on ``None``."""

from __future__ import annotations

import importlib
from typing import Any

from rljax.utils.torch_classes import MODULE_INSTEAD, TorchClassError


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


class MissingTorch:
    """A stand-in for ``torch`` (or ``torch.nn``, ``torch.nn.init``) when PyTorch is not
    installed: falsy; ``torch.nn.init.<name>`` gives a named reference to rljax's initializer
    (for model configs); anything else raises ``TorchClassError`` naming what was used."""

    def __init__(self, path: str = "torch"):
        self._path = path

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<{self._path}: PyTorch is not installed>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        path = f"{self._path}.{name}"
        if path in ("torch.nn", "torch.nn.init"):
            return MissingTorch(path)
        if self._path == "torch.nn.init":
            return _initializer_reference(name)
        return _refuse_torch(path)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _refuse_torch(f"{self._path}(...)")


def _refuse_torch(what: str) -> Any:
    raise TorchClassError(
        f"this script uses {what}, which is PyTorch; PyTorch is not installed, and rljax runs "
        f"JAX, not PyTorch code (initializers in model_config, nn.init.<name>, are the one "
        f"use it maps). For a network of your own, {MODULE_INSTEAD}"
    )


def _initializer_reference(name: str) -> Any:
    def reference(*args: Any, **kwargs: Any) -> Any:
        return _refuse_torch(f"torch.nn.init.{name}(...)")

    reference.__name__ = reference.__qualname__ = name
    reference.__doc__ = f"rljax's {name.rstrip('_')} initializer, named as torch.nn.init names it."
    return reference


def try_import_torch(error: bool = False) -> tuple[Any, Any]:
    """``(torch, torch.nn)``; without PyTorch, falsy stand-ins (see the module docstring), or
    ``ImportError`` with ``error=True``."""
    torch = _optional("torch")
    if torch is None:
        if error:
            raise ImportError("PyTorch is not installed: pip install torch")
        return MissingTorch("torch"), MissingTorch("torch.nn")
    return torch, torch.nn


def try_import_tf(error: bool = False) -> tuple[Any, Any, Any]:
    """``(tf1, tf, version)``, or ``(None, None, None)`` without TensorFlow."""
    tf = _optional("tensorflow")
    if tf is None:
        if error:
            raise ImportError("TensorFlow is not installed")
        return None, None, None
    return tf.compat.v1, tf, 2


def try_import_jax(error: bool = False) -> tuple[Any, Any]:
    """``(jax, flax)``: rljax's own framework, always there."""
    import flax
    import jax

    return jax, flax


__all__ = ["MissingTorch", "try_import_jax", "try_import_tf", "try_import_torch"]
