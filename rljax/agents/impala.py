"""RLlib 1.x's ``ray.rllib.agents.impala``: ``ImpalaTrainer`` (IMPALA with the old dict config,
results and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.impala import IMPALA
from rljax.algorithms.impala.multi_agent import MultiAgentIMPALA


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class ImpalaTrainer(OldAPITrainer, IMPALA):  # type: ignore[misc]
    """IMPALA from RLlib 1.x's dict config (old keys: ``rljax.agents.config_table.OLD_KEYS``)."""

    algo_name = "IMPALA"

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        return MultiAgentImpalaTrainer


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class MultiAgentImpalaTrainer(OldAPITrainer, MultiAgentIMPALA):  # type: ignore[misc]
    """Multi-agent IMPALA from RLlib 1.x's ``"multiagent"`` dict (what ``ImpalaTrainer`` builds for
    one)."""

    algo_name = "IMPALA"
    single_agent_trainer = ImpalaTrainer


DEFAULT_CONFIG: dict[str, Any] = default_config("IMPALA")

__all__ = ["DEFAULT_CONFIG", "MultiAgentImpalaTrainer", "ImpalaTrainer"]

ImpalaTrainer.__doc__ = "IMPALA from RLlib 1.x's dict config (RLlib's name ``ImpalaTrainer``)."
