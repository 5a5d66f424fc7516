"""RLlib's ``ray.rllib.policy.sample_batch`` path: ``SampleBatch`` and ``MultiAgentBatch``, the
old API stack's batch types, which refuse where they are used (``TorchClassError``). rljax's
batches are pytrees of arrays inside each algorithm's jitted update; episodes reach callbacks as
``SingleAgentEpisode`` and ``MultiAgentEpisode``."""

from __future__ import annotations

from rljax.utils.torch_classes import LEARNER_INSTEAD, TorchClass

_WHY = (
    "rljax's batches live inside each algorithm's jitted update; RLlib's SampleBatch feeds its "
    "Learner API (PyTorch learners), which rljax does not have"
)


class SampleBatch(TorchClass):
    """RLlib's batch of one policy: making one raises ``TorchClassError``."""

    rllib_path = "ray.rllib.policy.sample_batch.SampleBatch"
    kind = "batch class"
    why = _WHY
    instead = LEARNER_INSTEAD


class MultiAgentBatch(TorchClass):
    """RLlib's batch of several policies: making one raises ``TorchClassError``."""

    rllib_path = "ray.rllib.policy.sample_batch.MultiAgentBatch"
    kind = "batch class"
    why = _WHY
    instead = LEARNER_INSTEAD


__all__ = ["MultiAgentBatch", "SampleBatch"]
