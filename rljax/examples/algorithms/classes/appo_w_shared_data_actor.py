"""RLlib's example classes of
``ray.rllib.examples.algorithms.classes.appo_w_shared_data_actor``
at their path: a custom Algorithm with a Ray actor, which rljax cannot run, so each one refuses where it is
used (``rljax.utils.torch_classes``)."""

from __future__ import annotations

from rljax.utils.torch_classes import CUSTOM_ALGORITHM_INSTEAD, CUSTOM_ALGORITHM_WHY, TorchClass


class APPOWithSharedDataActor(TorchClass):
    """RLlib's example Algorithm ``APPOWithSharedDataActor``: using it raises ``TorchClassError``, which
    says what rljax takes instead."""

    rllib_path = (
        "ray.rllib.examples.algorithms.classes.appo_w_shared_data_actor.APPOWithSharedDataActor"
    )
    instead = CUSTOM_ALGORITHM_INSTEAD
    kind = "Algorithm subclass"
    why = CUSTOM_ALGORITHM_WHY


__all__ = ["APPOWithSharedDataActor"]
