"""RLlib 1.x's trainers (``rljax.agents``) as trainables: which trainables are old-API
trainers, ``tune.run``'s choice of one for an old dict config, and the refusal of RLlib 1.x's
result keys as stop criteria of a new-API algorithm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rljax.algorithms.config_io import STACK_SWITCHES
from rljax.utils.errors import ConfigError


def is_old_api_trainer(trainable: Any) -> bool:
    """Whether ``trainable`` is one of RLlib 1.x's trainer classes (``rljax.agents``)."""
    from rljax.agents import is_trainer

    return is_trainer(trainable)


# RLlib's switches of its API stack: False in a dict config asks for the old stack.
OLD_STACK_SWITCHES = STACK_SWITCHES


def asks_for_old_stack(config: Mapping[str, Any]) -> bool:
    """Whether a dict config asks for RLlib's old API stack, which RLlib's new stack cannot
    run: an API-stack switch set to False, or an old-stack custom model
    (``"model": {"custom_model": ...}``, a ``ModelCatalog`` name or class)."""
    if any(config.get(k) is False for k in OLD_STACK_SWITCHES):
        return True
    model = config.get("model")
    return isinstance(model, Mapping) and model.get("custom_model") is not None


def old_api_trainable(trainable: Any, config: Any, *, old_keys: bool = True) -> Any:
    """The trainable for an algorithm name and a dict config: RLlib 1.x's trainer
    (``rljax.agents``) when the dict asks for the old API stack (:func:`asks_for_old_stack`)
    or, with ``old_keys`` (``tune.run``'s reading), uses an old key (one that is no setting of
    the algorithm's config); else as given. ``Tuner`` passes ``old_keys=False``: as in RLlib
    2.60, its dict configs are the new stack's unless they ask for the old one. A config
    object that asks for the old stack (``api_stack(...=False)``) with its algorithm's name,
    or as the trainable itself, gives that algorithm's trainer."""
    from rljax.algorithms import registry
    from rljax.algorithms.algorithm_config import AlgorithmConfig

    if isinstance(config, AlgorithmConfig) and config.is_old_api_stack:
        # A config object asking for the old stack (api_stack(...=False)): its trainer, which
        # takes the config object as it is, for the algorithm name or config it trains.
        if trainable is config or (isinstance(trainable, str) and trainable == config.algo_name):
            from rljax.agents import trainer_class

            return trainer_class(config.algo_name)
        return trainable
    if not (isinstance(trainable, str) and isinstance(config, Mapping)):
        return trainable
    if trainable not in registry.algorithm_names():
        return trainable  # Tuner names what is wrong
    from rljax.agents import TRAINERS, trainer_class
    from rljax.agents.config_table import OLD_KEYS

    if trainable not in TRAINERS:
        return trainable
    if asks_for_old_stack(config):
        return trainer_class(trainable)
    settings = registry.config_class(trainable).SETTINGS
    if old_keys and any(isinstance(k, str) and k not in settings and k in OLD_KEYS for k in config):
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


__all__ = [
    "OLD_STACK_SWITCHES",
    "asks_for_old_stack",
    "check_stop_keys",
    "is_old_api_trainer",
    "old_api_trainable",
]
