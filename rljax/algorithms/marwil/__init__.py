"""MARWIL and BC on offline data (``from rljax.algorithms.marwil import MARWILConfig, BCConfig``)."""

from rljax.algorithms.marwil.marwil import BC, MARWIL, BCConfig, MARWILConfig

__all__ = ["BC", "BCConfig", "MARWIL", "MARWILConfig"]
