"""RLlib's ``FrameStackingLearner``, the learner half of frame stacking.

RLlib stacks frames twice: on the runners for acting (``FrameStackingEnvToModule``) and again in
the learner from the episodes' single frames, so its batches hold each frame once. rljax's
``FrameStackingEnvToModule`` stores the stacked observation the policy acted on in the train
batch, so the learner already trains on stacked frames: ``.training(learner_connector=...)``
that gives only this piece is accepted and changes nothing (``rljax.algorithms.rllib_only``).
"""

from __future__ import annotations

from typing import Any

from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError


class FrameStackingLearner:
    """RLlib's learner-side frame stacking: accepted beside ``FrameStackingEnvToModule``, whose
    stacked observations the learner trains on as they are (see the module docstring)."""

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        num_frames: int = 1,
        multi_agent: bool = False,
        **kwargs: Any,
    ):
        if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 1:
            raise ConfigError(
                f"FrameStackingLearner num_frames={describe(num_frames)}; it takes an int >= 1"
            )
        self.num_frames = num_frames
        self.multi_agent = bool(multi_agent)


def only_frame_stacking(factory: Any) -> bool:
    """Whether a ``learner_connector`` setting (RLlib's function of the spaces, or pieces)
    gives nothing but ``FrameStackingLearner`` pieces."""
    try:
        built = factory(None, None) if callable(factory) else factory
    except Exception:  # a function that needs real spaces builds something else
        return False
    items = built if isinstance(built, list | tuple) else [built]
    return bool(items) and all(isinstance(i, FrameStackingLearner) for i in items)


__all__ = ["FrameStackingLearner", "only_frame_stacking"]
