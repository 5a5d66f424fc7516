"""SAC (Haarnoja et al., 2018): twin critics, a squashed Gaussian actor, a learned temperature."""

from rljax.algorithms.sac.sac import SAC, SACConfig

__all__ = ["SAC", "SACConfig"]
