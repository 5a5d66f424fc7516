"""TD3 (Fujimoto et al., 2018): twin critics, target policy smoothing, delayed actor updates."""

from rljax.algorithms.td3.td3 import TD3, TD3Config

__all__ = ["TD3", "TD3Config"]
