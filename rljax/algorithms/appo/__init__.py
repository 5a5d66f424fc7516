"""APPO (``from rljax.algorithms.appo import APPOConfig``)."""

from rljax.algorithms.appo.appo import APPO, APPOConfig

__all__ = ["APPO", "APPOConfig"]
