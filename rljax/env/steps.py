"""``StepResult``: what every vector env returns for one batch of sub-envs (defined in
``rljax.types``, re-exported here)."""

from __future__ import annotations

from rljax.types import StepResult

__all__ = ["StepResult"]
