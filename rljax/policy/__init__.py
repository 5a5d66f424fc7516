"""Per-policy specs for multi-agent configs."""

from rljax.policy.policy import PolicySpec

__all__ = ["PolicySpec"]
