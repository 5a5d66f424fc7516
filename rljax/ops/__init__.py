"""Single-purpose, shape-checked numerical ops shared by the algorithms."""

from rljax.ops.gae import gae_advantages, gae_advantages_time_major

__all__ = ["gae_advantages", "gae_advantages_time_major"]
