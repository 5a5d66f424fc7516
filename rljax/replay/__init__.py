"""Replay buffers on device: uniform, proportional prioritized, and frame-deduplicated stacks.

Each factory closes over static settings and returns a NamedTuple of pure, jit-able functions
(``init``, ``add``, ``sample`` and, when prioritized, ``update_priorities``) over a
``flax.struct.dataclass`` state.
"""

from rljax.replay.base import PrioritizedReplayBuffer, ReplayBuffer
from rljax.replay.frame_stack import (
    FrameStackBufferState,
    make_frame_stack_buffer,
    make_prioritized_frame_stack_buffer,
)
from rljax.replay.prioritized import PrioritizedBufferState, make_prioritized_buffer
from rljax.replay.uniform import UniformBufferState, make_uniform_buffer

__all__ = [
    "FrameStackBufferState",
    "PrioritizedBufferState",
    "PrioritizedReplayBuffer",
    "ReplayBuffer",
    "UniformBufferState",
    "make_frame_stack_buffer",
    "make_prioritized_buffer",
    "make_prioritized_frame_stack_buffer",
    "make_uniform_buffer",
]
