"""BC at RLlib's path (``ray.rllib.algorithms.bc``): behaviour cloning, MARWIL with
``beta=0`` (``rljax.algorithms.marwil``)."""

from rljax.algorithms.marwil.marwil import BC, BCConfig

__all__ = ["BC", "BCConfig"]
