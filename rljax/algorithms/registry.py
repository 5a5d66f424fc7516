"""The algorithms rljax trains, by name: one entry each, read by checkpoints and the CLI."""

from __future__ import annotations

import importlib
from typing import Any

# name -> "module:ConfigClass"; the modules are rljax's own, imported when first asked for.
_ALGORITHMS = {
    "PPO": "rljax.algorithms.ppo:PPOConfig",
    "DQN": "rljax.algorithms.dqn:DQNConfig",
    "SAC": "rljax.algorithms.sac:SACConfig",
    "TD3": "rljax.algorithms.td3:TD3Config",
    "TQC": "rljax.algorithms.tqc:TQCConfig",
    "IMPALA": "rljax.algorithms.impala:IMPALAConfig",
    "APPO": "rljax.algorithms.appo:APPOConfig",
    "MARWIL": "rljax.algorithms.marwil:MARWILConfig",
    "BC": "rljax.algorithms.marwil:BCConfig",
    "CQL": "rljax.algorithms.cql:CQLConfig",
    "IQL": "rljax.algorithms.iql:IQLConfig",
}


def algorithm_names() -> list[str]:
    return list(_ALGORITHMS)


def config_class(name: str) -> Any:
    """The config class of algorithm ``name`` (exact, upper-case name); KeyError if unknown."""
    module, _, attr = _ALGORITHMS[name].partition(":")
    return getattr(importlib.import_module(module), attr)
