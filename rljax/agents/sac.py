"""RLlib 1.x's ``ray.rllib.agents.sac``: ``SACTrainer`` (SAC with the old dict config,
results and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.multi_agent_off_policy import MultiAgentSAC
from rljax.algorithms.sac import SAC


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class SACTrainer(OldAPITrainer, SAC):  # type: ignore[misc]
    """SAC from RLlib 1.x's dict config (old keys: ``rljax.agents.config_table.OLD_KEYS``)."""

    algo_name = "SAC"

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        return MultiAgentSACTrainer


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class MultiAgentSACTrainer(OldAPITrainer, MultiAgentSAC):  # type: ignore[misc]
    """Multi-agent SAC from RLlib 1.x's ``"multiagent"`` dict (what ``SACTrainer`` builds for
    one)."""

    algo_name = "SAC"
    single_agent_trainer = SACTrainer


DEFAULT_CONFIG: dict[str, Any] = default_config("SAC")

__all__ = ["DEFAULT_CONFIG", "MultiAgentSACTrainer", "SACTrainer"]
