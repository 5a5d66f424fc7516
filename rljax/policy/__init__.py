"""Per-policy specs for multi-agent configs, and the loader of exported policies."""

from rljax.policy.loader import ExportedPolicyError, load_exported
from rljax.policy.policy import PolicySpec

__all__ = ["ExportedPolicyError", "PolicySpec", "load_exported"]
