"""RLlib 1.x's ``ray.rllib.agents.td3``: ``TD3Trainer`` (TD3 with the old dict config,
results and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.td3 import TD3


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class TD3Trainer(OldAPITrainer, TD3):  # type: ignore[misc]
    """TD3 from RLlib 1.x's dict config (old keys: ``rljax.agents.config_table.OLD_KEYS``)."""

    algo_name = "TD3"


DEFAULT_CONFIG: dict[str, Any] = default_config("TD3")

__all__ = ["DEFAULT_CONFIG", "TD3Trainer"]
