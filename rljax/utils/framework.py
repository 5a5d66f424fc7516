"""RLlib's framework probes (``ray.rllib.utils.framework``): scripts call them to import
PyTorch or TensorFlow when present. rljax's models run in JAX; these return the library if
it is installed (for a script's own use) and ``None`` placeholders otherwise, as RLlib's do."""

from __future__ import annotations

import importlib
from typing import Any


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def try_import_torch(error: bool = False) -> tuple[Any, Any]:
    """``(torch, torch.nn)``, or ``(None, None)`` when PyTorch is not installed (``error``:
    raise ImportError instead)."""
    torch = _optional("torch")
    if torch is None:
        if error:
            raise ImportError("PyTorch is not installed: pip install torch")
        return None, None
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


__all__ = ["try_import_jax", "try_import_tf", "try_import_torch"]
