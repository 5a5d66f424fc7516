"""IMPALA and APPO's pure parts: the V-trace losses (``losses.py``); the algorithms build on them."""

from rljax.algorithms.impala.losses import (
    APPOLossConfig,
    VTraceBatch,
    VTraceLossConfig,
    appo_loss,
    impala_loss,
)

__all__ = ["APPOLossConfig", "VTraceBatch", "VTraceLossConfig", "appo_loss", "impala_loss"]
