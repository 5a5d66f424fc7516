"""RL modules: the default model config and user-supplied modules."""

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec


def __getattr__(name: str):  # RLlib's ``from ray.rllib.core.rl_module import RLModule``
    if name == "RLModule":
        from rljax.core.rl_module.rl_module import RLModule

        return RLModule
    raise AttributeError(f"module 'rljax.core.rl_module' has no attribute {name!r}")


__all__ = ["DefaultModelConfig", "MultiRLModule", "MultiRLModuleSpec", "RLModule", "RLModuleSpec"]
