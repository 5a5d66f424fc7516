"""Warnings said once per process: the deprecated RLlib names, the RLlib and Tune settings
that change nothing here, the MetricsLogger's lenient readings.

Each caller keeps its keys in a group of its own (``"config"``, ``"rllib_only"``, ...), so two
callers' keys never silence each other. Tests that check a warning start a group afresh with
``monkeypatch.setitem(once.SAID, group, set())``.
"""

from __future__ import annotations

# group -> the keys that have been warned about in this process
SAID: dict[str, set[str]] = {}


def first_time(group: str, key: str) -> bool:
    """True the first time ``key`` of ``group`` asks in this process (the caller warns then);
    False after that."""
    said = SAID.setdefault(group, set())
    if key in said:
        return False
    said.add(key)
    return True


__all__ = ["SAID", "first_time"]
