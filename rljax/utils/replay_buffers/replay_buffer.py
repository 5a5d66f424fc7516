"""RLlib's ``StorageUnit``, the unit of a replay buffer's slots, for
``replay_buffer_config={"storage_unit": StorageUnit.TIMESTEPS, ...}``.

rljax's replay buffers (``rljax.replay``) store time steps in per-sub-env rings and build
n-step windows when they sample, which is what RLlib's ``TIMESTEPS`` unit (its default) gives
a feed-forward Q-network; ``rljax.algorithms.off_policy.check_replay_buffer_config`` takes that
unit and refuses the others, saying why.
"""

from __future__ import annotations

from enum import Enum


class StorageUnit(Enum):
    """How a replay buffer's slots are cut (RLlib's names and values)."""

    TIMESTEPS = "timesteps"
    SEQUENCES = "sequences"
    EPISODES = "episodes"
    FRAGMENTS = "fragments"


__all__ = ["StorageUnit"]
