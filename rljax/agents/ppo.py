"""RLlib 1.x's ``ray.rllib.agents.ppo``: ``PPOTrainer`` (PPO with the old dict config, results
and methods: ``rljax.agents.trainer``) and ``DEFAULT_CONFIG``."""

from __future__ import annotations

from typing import Any

from rljax.agents.trainer import OldAPITrainer, default_config
from rljax.algorithms.ppo import PPO
from rljax.algorithms.ppo.multi_agent import MultiAgentPPO


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class PPOTrainer(OldAPITrainer, PPO):  # type: ignore[misc]
    """PPO from RLlib 1.x's dict config: ``PPOTrainer(config={"env": "CartPole-v1",
    "num_workers": 2, "sgd_minibatch_size": 64, ...})``; a ``"multiagent"`` dict builds
    multi-agent PPO."""

    algo_name = "PPO"

    @classmethod
    def multi_agent_class(cls) -> type[Any]:
        return MultiAgentPPOTrainer


# save() returns the checkpoint path (RLlib 1.x), not the new API\'s SaveResult.
class MultiAgentPPOTrainer(OldAPITrainer, MultiAgentPPO):  # type: ignore[misc]
    """Multi-agent PPO from RLlib 1.x's ``"multiagent"`` dict (what ``PPOTrainer`` builds for
    one)."""

    algo_name = "PPO"
    single_agent_trainer = PPOTrainer


DEFAULT_CONFIG: dict[str, Any] = default_config("PPO")

__all__ = ["DEFAULT_CONFIG", "MultiAgentPPOTrainer", "PPOTrainer"]
