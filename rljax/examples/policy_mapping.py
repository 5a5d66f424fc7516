"""Importable policy mapping functions, for configs kept in files (YAML, checkpoints).

A YAML config names one as ``policy_mapping_fn: {import: "rljax.examples.policy_mapping:NAME"}``.
"""

from __future__ import annotations

from typing import Any


def policy_per_agent(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Agent ``i`` plays policy ``"p{i}"`` (``MultiAgentCartPole``'s agents are 0, 1, ...)."""
    return f"p{agent_id}"


__all__ = ["policy_per_agent"]
