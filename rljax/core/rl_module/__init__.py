"""RL modules: the default model config and user-supplied Flax modules."""

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.spec import RLModuleSpec

__all__ = ["DefaultModelConfig", "RLModuleSpec"]
