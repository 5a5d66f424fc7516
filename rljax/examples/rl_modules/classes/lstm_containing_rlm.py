"""RLlib's example classes of
``ray.rllib.examples.rl_modules.classes.lstm_containing_rlm``
at their path: PyTorch code that rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import LSTM_INSTEAD, TorchClass


class LSTMContainingRLModule(TorchClass):
    """RLlib's example RLModule ``LSTMContainingRLModule``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = "ray.rllib.examples.rl_modules.classes.lstm_containing_rlm.LSTMContainingRLModule"
    instead = LSTM_INSTEAD


__all__ = ["LSTMContainingRLModule"]
