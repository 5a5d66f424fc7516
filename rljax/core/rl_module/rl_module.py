"""RLlib's import path for ``RLModule`` (a trained policy's networks for inference, with
``RLModule.from_checkpoint``) and ``RLModuleSpec`` (a user's own Flax module)."""

from rljax.algorithms.algorithm import RLModule
from rljax.core.rl_module.spec import RLModuleSpec

__all__ = ["RLModule", "RLModuleSpec"]
