"""RLlib 1.x's ``ray.rllib.agents.dqn``: ``DQNTrainer`` (DQN with the old dict config,
results and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.dqn import DQN
from rljax.algorithms.multi_agent_off_policy import MultiAgentDQN


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class DQNTrainer(OldAPITrainer, DQN):  # type: ignore[misc]
    """DQN from RLlib 1.x's dict config (old keys: ``rljax.agents.config_table.OLD_KEYS``)."""

    algo_name = "DQN"

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        return MultiAgentDQNTrainer


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class MultiAgentDQNTrainer(OldAPITrainer, MultiAgentDQN):  # type: ignore[misc]
    """Multi-agent DQN from RLlib 1.x's ``"multiagent"`` dict (what ``DQNTrainer`` builds for
    one)."""

    algo_name = "DQN"
    single_agent_trainer = DQNTrainer


DEFAULT_CONFIG: dict[str, Any] = default_config("DQN")

__all__ = ["DEFAULT_CONFIG", "MultiAgentDQNTrainer", "DQNTrainer"]
