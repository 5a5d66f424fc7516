"""RLlib's ``ray.rllib.utils.replay_buffers`` names that scripts import for their configs
(``StorageUnit``); rljax's replay buffers themselves are in ``rljax.replay``."""

from rljax.utils.replay_buffers.replay_buffer import StorageUnit

__all__ = ["StorageUnit"]
