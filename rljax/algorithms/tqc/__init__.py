"""TQC, SAC with truncated quantile critics (``from rljax.algorithms.tqc import TQCConfig``)."""

from rljax.algorithms.tqc.tqc import TQC, TQCConfig

__all__ = ["TQC", "TQCConfig"]
