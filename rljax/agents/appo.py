"""RLlib 1.x's ``ray.rllib.agents.appo``: ``APPOTrainer`` (APPO with the old dict config,
results and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.appo import APPO


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class APPOTrainer(OldAPITrainer, APPO):  # type: ignore[misc]
    """APPO from RLlib 1.x's dict config (old keys: ``rljax.agents.config_table.OLD_KEYS``)."""

    algo_name = "APPO"


DEFAULT_CONFIG: dict[str, Any] = default_config("APPO")

__all__ = ["DEFAULT_CONFIG", "APPOTrainer"]
