"""RLlib 1.x's trainers (``rljax.agents``) as trainables: which trainables are old-API
trainers, ``tune.run``'s choice of one for an old dict config, and the refusal of RLlib 1.x's
result keys as stop criteria of a new-API algorithm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rljax.utils.errors import ConfigError


def is_old_api_trainer(trainable: Any) -> bool:
    """Whether ``trainable`` is one of RLlib 1.x's trainer classes (``rljax.agents``)."""
    from rljax.agents import is_trainer

    return is_trainer(trainable)


def old_api_trainable(trainable: Any, config: Any) -> Any:
    """``tune.run``'s trainable: RLlib 1.x's trainer for an algorithm name whose dict config
    uses an old key (one that is no setting of the algorithm's config), else as given."""
    from rljax.algorithms import registry

    if not (isinstance(trainable, str) and isinstance(config, Mapping)):
        return trainable
    if trainable not in registry.algorithm_names():
        return trainable  # Tuner names what is wrong
    from rljax.agents import trainer_class
    from rljax.agents.config_table import OLD_KEYS

    settings = registry.config_class(trainable).SETTINGS
    if any(isinstance(k, str) and k not in settings and k in OLD_KEYS for k in config):
        return trainer_class(trainable)
    return trainable


def check_stop_keys(stop: Any, old_api: bool) -> None:
    """Before any trial: a stop key of RLlib 1.x's results (``episode_reward_mean``) on a
    new-API algorithm, which never reports it, is refused with its new name."""
    if old_api or not isinstance(stop, Mapping):
        return
    from rljax.agents.trainer import OLD_RESULT_KEYS

    old = {k: OLD_RESULT_KEYS[k] for k in stop if k in OLD_RESULT_KEYS}
    if old:
        shown = ", ".join(f"{k!r} -> {v!r}" for k, v in old.items())
        raise ConfigError(
            f"stop={dict(stop)!r}: {', '.join(map(repr, old))} is RLlib 1.x's result key, "
            f"which the new API stack does not report; use {shown} (or train RLlib 1.x's "
            "trainer, rljax.agents.ppo.PPOTrainer, whose results have the old keys)"
        )


__all__ = ["check_stop_keys", "is_old_api_trainer", "old_api_trainable"]
