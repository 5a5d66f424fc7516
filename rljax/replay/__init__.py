"""Replay buffers on device: n-step episode replay and frame-deduplicated stacks, uniform or
proportional prioritized.

Each factory closes over static settings and returns a NamedTuple of pure, jit-able functions
(``init``, ``add``, ``sample`` and, when prioritized, ``update_priorities``) over a
``flax.struct.dataclass`` state.
"""

from rljax.replay.base import PrioritizedReplayBuffer, ReplayBuffer
from rljax.replay.episode import make_episode_buffer, make_frame_stack_episode_buffer
from rljax.replay.frame_stack import (
    FrameStackBufferState,
    make_frame_stack_buffer,
    make_prioritized_frame_stack_buffer,
)

__all__ = [
    "FrameStackBufferState",
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "make_episode_buffer",
    "make_frame_stack_episode_buffer",
    "make_frame_stack_buffer",
    "make_prioritized_frame_stack_buffer",
]
