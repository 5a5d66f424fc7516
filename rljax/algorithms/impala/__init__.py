"""IMPALA (``from rljax.algorithms.impala import IMPALAConfig``) and the V-trace losses APPO
shares (``losses.py``)."""

from rljax.algorithms.impala.impala import IMPALA, IMPALAConfig
from rljax.algorithms.impala.losses import (
    APPOLossConfig,
    VTraceBatch,
    VTraceLossConfig,
    appo_loss,
    impala_loss,
)

__all__ = [
    "IMPALA",
    "APPOLossConfig",
    "IMPALAConfig",
    "VTraceBatch",
    "VTraceLossConfig",
    "appo_loss",
    "impala_loss",
]
