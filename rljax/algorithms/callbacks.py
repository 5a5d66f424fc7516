"""RLlib's older import path for the callback base class (``ray.rllib.algorithms.callbacks``)."""

from rljax.callbacks.callbacks import DefaultCallbacks, RLlibCallback

__all__ = ["DefaultCallbacks", "RLlibCallback"]
