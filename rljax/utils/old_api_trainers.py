"""Where RLlib 1.x's old-API trainers live (``rljax.agents``), by algorithm name, as data.

The table sits below the algorithms so that their error messages can point at a trainer
(``rljax.agents.ppo.PPOTrainer`` takes a dict of RLlib 1.x's keys) without importing
``rljax.agents``, which imports the algorithms. ``rljax.agents`` re-exports both names.
"""

from __future__ import annotations

# Algorithm name -> (module, trainer class).
TRAINERS = {
    "PPO": ("rljax.agents.ppo", "PPOTrainer"),
    "DQN": ("rljax.agents.dqn", "DQNTrainer"),
    "SAC": ("rljax.agents.sac", "SACTrainer"),
    "TD3": ("rljax.agents.td3", "TD3Trainer"),
    "IMPALA": ("rljax.agents.impala", "ImpalaTrainer"),
    "APPO": ("rljax.agents.appo", "APPOTrainer"),
}


def trainer_path(algo: str) -> str | None:
    """The import path of algorithm ``algo``'s old-API trainer (``"rljax.agents.ppo.PPOTrainer"``),
    or None for an algorithm without one."""
    if algo not in TRAINERS:
        return None
    module, name = TRAINERS[algo]
    return f"{module}.{name}"


def load_trainer(algo: str) -> type:
    """Algorithm ``algo``'s old-API trainer class, imported when called: a config that asks
    for RLlib's old stack (``api_stack(...=False)``) builds it through this, so the algorithms'
    modules never import ``rljax.agents`` (which imports them). KeyError for an algorithm
    without one."""
    import importlib

    module, name = TRAINERS[algo]
    trainer: type = getattr(importlib.import_module(module), name)
    return trainer


__all__ = ["TRAINERS", "load_trainer", "trainer_path"]
