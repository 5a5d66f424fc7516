"""Core building blocks shared by every algorithm (RLlib's ``ray.rllib.core`` paths).

``ALL_MODULES`` and ``DEFAULT_MODULE_ID`` are RLlib's names for the ``learners`` results'
all-module key and a single-agent run's module id.
"""

ALL_MODULES = "__all_modules__"
DEFAULT_MODULE_ID = "default_policy"

__all__ = ["ALL_MODULES", "DEFAULT_MODULE_ID"]
