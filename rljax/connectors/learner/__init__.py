"""Learner connectors under RLlib's names (``rljax.connectors.learner``)."""

from rljax.connectors.learner.frame_stacking import FrameStackingLearner

__all__ = ["FrameStackingLearner"]
