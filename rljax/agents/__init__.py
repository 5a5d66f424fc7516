"""RLlib 1.x's old API (``ray.rllib.agents``): trainers that take a dict config.

``rljax.agents.{ppo,dqn,sac,td3,impala,appo}`` hold ``PPOTrainer``, ``DQNTrainer``,
``SACTrainer``, ``TD3Trainer``, ``ImpalaTrainer`` and ``APPOTrainer``, each its new algorithm
with RLlib 1.x's dict config (translated by ``rljax.agents.config_table``), result keys and
methods (``rljax.agents.trainer``), and ``DEFAULT_CONFIG``.
"""

from __future__ import annotations

from typing import Any

from rljax.utils.old_api_trainers import TRAINERS, load_trainer, trainer_path


def trainer_class(algo: str) -> Any:
    """The old-API trainer class of algorithm ``algo`` (``"PPO"``, ...); KeyError if none."""
    return load_trainer(algo)


def is_trainer(obj: Any) -> bool:
    """Whether ``obj`` is an old-API trainer class."""
    from rljax.agents.trainer import OldAPITrainer

    return isinstance(obj, type) and issubclass(obj, OldAPITrainer)


__all__ = ["TRAINERS", "is_trainer", "trainer_class", "trainer_path"]
