"""RLlib's ``ray.rllib.env.utils`` path: the episodes' lookback buffer
(``infinite_lookback_buffer``) and the optional imports of OpenSpiel that RLlib's scripts
call (``try_import_pyspiel``, ``try_import_open_spiel``)."""

from __future__ import annotations

import importlib
from typing import Any


def _try_import(module: str, error: bool) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if error:
            raise ImportError(
                f"could not import {module}: install OpenSpiel (pip install open_spiel)"
            ) from e
        return None


def try_import_pyspiel(error: bool = False) -> Any:
    """The ``pyspiel`` module (OpenSpiel's games), or None when it is not installed.

    Raises:
      ImportError: ``error=True`` and OpenSpiel is not installed.
    """
    return _try_import("pyspiel", error)


def try_import_open_spiel(error: bool = False) -> Any:
    """The ``open_spiel`` package, or None when it is not installed.

    Raises:
      ImportError: ``error=True`` and OpenSpiel is not installed.
    """
    return _try_import("open_spiel", error)


__all__ = ["try_import_open_spiel", "try_import_pyspiel"]
