"""Error types and the helpers that make their messages useful."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ConfigError(ValueError):
    """A configuration value or combination that cannot work; raised before anything is built."""


class CheckpointError(ValueError):
    """A path that is not a readable rljax checkpoint."""


def closest(name: str, candidates: Iterable[str]) -> str:
    """Returns ``"; did you mean 'x'?"`` for the closest candidate, or an empty string."""
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.5)
    return f"; did you mean {match[0]!r}?" if match else ""
