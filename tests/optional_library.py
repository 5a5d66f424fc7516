"""An optional library for a test module: the module is skipped when it is not installed, and the
library is imported when a test first uses it, not while pytest collects (the JAX env libraries
take seconds to import, and every xdist worker collects every module)."""

from __future__ import annotations

import importlib
import importlib.util
import types

import pytest


class _Deferred(types.ModuleType):
    def __getattr__(self, attr: str):
        if attr.startswith("_"):  # what pytest looks up on every module global while collecting
            raise AttributeError(attr)
        return getattr(importlib.import_module(self.__name__), attr)


def deferred_importorskip(name: str) -> types.ModuleType:
    """``pytest.importorskip(name)`` for a test module, but the import waits for first use.
    Only a missing top-level package skips; an installed one that fails to import fails the
    tests that use it."""
    if importlib.util.find_spec(name.split(".")[0]) is None:
        pytest.skip(f"{name.split('.')[0]} is not installed", allow_module_level=True)
    return _Deferred(name)
