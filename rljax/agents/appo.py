"""RLlib 1.x's ``ray.rllib.agents.appo``: ``APPOTrainer`` (APPO with the old dict config,
results and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.appo import APPO
from rljax.algorithms.impala.multi_agent import MultiAgentAPPO


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class APPOTrainer(OldAPITrainer, APPO):  # type: ignore[misc]
    """APPO from RLlib 1.x's dict config (old keys: ``rljax.agents.config_table.OLD_KEYS``)."""

    algo_name = "APPO"

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        return MultiAgentAPPOTrainer


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class MultiAgentAPPOTrainer(OldAPITrainer, MultiAgentAPPO):  # type: ignore[misc]
    """Multi-agent APPO from RLlib 1.x's ``"multiagent"`` dict (what ``APPOTrainer`` builds for
    one)."""

    algo_name = "APPO"
    single_agent_trainer = APPOTrainer


DEFAULT_CONFIG: dict[str, Any] = default_config("APPO")

__all__ = ["DEFAULT_CONFIG", "MultiAgentAPPOTrainer", "APPOTrainer"]
