"""RLlib 1.x's ``ray.rllib.agents.td3``: ``TD3Trainer`` (TD3 with the old dict config,
results and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.multi_agent_off_policy import MultiAgentTD3
from rljax.algorithms.td3 import TD3


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class TD3Trainer(OldAPITrainer, TD3):  # type: ignore[misc]
    """TD3 from RLlib 1.x's dict config (old keys: ``rljax.agents.config_table.OLD_KEYS``)."""

    algo_name = "TD3"

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        return MultiAgentTD3Trainer


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class MultiAgentTD3Trainer(OldAPITrainer, MultiAgentTD3):  # type: ignore[misc]
    """Multi-agent TD3 from RLlib 1.x's ``"multiagent"`` dict (what ``TD3Trainer`` builds for
    one)."""

    algo_name = "TD3"
    single_agent_trainer = TD3Trainer


DEFAULT_CONFIG: dict[str, Any] = default_config("TD3")

__all__ = ["DEFAULT_CONFIG", "MultiAgentTD3Trainer", "TD3Trainer"]
