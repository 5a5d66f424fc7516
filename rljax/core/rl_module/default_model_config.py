"""RLlib's ``DefaultModelConfig`` at its path (``ray.rllib.core.rl_module.default_model_config``):
the settings of the built-in networks, defined in ``rljax.networks.model_config``."""

from rljax.networks.model_config import (
    IGNORED_MODEL_KEYS,
    INITIALIZER_FIELDS,
    OLD_MODEL_KEYS,
    DefaultModelConfig,
)

__all__ = ["IGNORED_MODEL_KEYS", "INITIALIZER_FIELDS", "OLD_MODEL_KEYS", "DefaultModelConfig"]
