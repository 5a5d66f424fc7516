"""Callbacks: RLlib's ``RLlibCallback`` hooks (``rljax.callbacks.callbacks``)."""

from rljax.callbacks.callbacks import DefaultCallbacks, RLlibCallback

__all__ = ["DefaultCallbacks", "RLlibCallback"]
