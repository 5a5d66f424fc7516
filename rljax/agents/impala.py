"""RLlib 1.x's ``ray.rllib.agents.impala``: ``ImpalaTrainer`` (IMPALA with the old dict config,
results and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.impala import IMPALA


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class ImpalaTrainer(OldAPITrainer, IMPALA):  # type: ignore[misc]
    """IMPALA from RLlib 1.x's dict config (old keys: ``rljax.agents.config_table.OLD_KEYS``)."""

    algo_name = "IMPALA"


DEFAULT_CONFIG: dict[str, Any] = default_config("IMPALA")

__all__ = ["DEFAULT_CONFIG", "ImpalaTrainer"]

ImpalaTrainer.__doc__ = "IMPALA from RLlib 1.x's dict config (RLlib's name ``ImpalaTrainer``)."
