"""RLlib's names that a config takes or refuses: deprecated names it still accepts (with a
one-time warning), old names it refuses with the new one, and the hints its errors give.

``AlgorithmConfig``'s setters, ``update_from_dict`` and ``from_dict`` read these tables;
``rljax.algorithms.algorithm_config`` re-exports ``DEPRECATED`` and ``RENAMED``.
"""

from __future__ import annotations

import logging
from typing import Any

from rljax.utils import once
from rljax.utils.errors import best_match
from rljax.utils.old_api_trainers import trainer_path

logger = logging.getLogger("rljax")

# RLlib's deprecated names it still accepts: the same setting, with a one-time warning.
DEPRECATED = {
    "model_config_dict": "model_config",
    "mini_batch_size_per_learner": "minibatch_size",
    "num_sgd_iter": "num_epochs",  # .training(num_sgd_iter=...): RLlib 2.60 still takes it
    "evaluation_num_workers": "evaluation_num_env_runners",  # RLlib 2.60 warns and maps it
}

# Old-API-stack names that RLlib users still type, and what they are called now.
RENAMED = {
    "num_workers": "num_env_runners",
    "num_rollout_workers": "num_env_runners",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "num_sgd_iter": "num_epochs",
    "sgd_minibatch_size": "minibatch_size",
    "lambda": "lambda_",
    "learning_rate": "lr",
    "num_gpus": "num_gpus_per_learner",
    "model": "model_config",  # in .training(), RLlib's old model dict (old_model_dict.py)
    "rollouts": "env_runners",
    "buffer_size": "replay_buffer_config={'capacity': ...}",
    "learning_starts": "num_steps_sampled_before_learning_starts",
    "exploration_fraction": "epsilon (a schedule [(timestep, value), ...])",
    "exploration_final_eps": "epsilon (a schedule [(timestep, value), ...])",
    "exploration_config": "epsilon (DQN: a schedule [(timestep, value), ...]) or exploration_noise (TD3)",
    "timesteps_per_iteration": "min_sample_timesteps_per_iteration",
    "q_model_config": "model_config",
    "policy_model_config": "model_config",
    "optimization": "actor_lr, critic_lr and alpha_lr",
    "optimization_config": "actor_lr, critic_lr and alpha_lr",
    "prioritized_replay": "replay_buffer_config={'type': 'PrioritizedEpisodeReplayBuffer'}",
}


def warn_once(key: str, message: str, *args: Any) -> None:
    """Logs ``message % args`` as a warning the first time ``key`` says something in this
    process (group ``"config"`` of ``rljax.utils.once``): RLlib's deprecated names and
    settings that change nothing."""
    if once.first_time("config", key):
        logger.warning(message, *args)


def deprecated_names(where: str, values: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """``values`` with RLlib's deprecated names (``DEPRECATED``) under their current ones,
    each said once in a warning."""
    out = {}
    for key, value in values.items():
        new = DEPRECATED.get(key) if isinstance(key, str) else None
        if new is not None and new in keys:
            warn_once(key, "%s: %r is deprecated (as in RLlib); use %r", where, key, new)
            key = new
        out[key] = value
    return out


def unknown_key_hint(name: str, keys: Any) -> str:
    """What an unknown setting probably meant: an old RLlib name (exact or misspelled), or the
    closest current one."""
    if name in RENAMED:
        return f"; RLlib's new API stack calls it {RENAMED[name]!r}"
    match = best_match(name, [*keys, *RENAMED])
    if match in RENAMED:
        return f"; did you mean {RENAMED[match]!r} (RLlib's old name {match!r})?"
    return f"; did you mean {match!r}?" if match else ""


def old_api_hint(algo: str, unknown: list[Any]) -> str:
    """Where a dict of RLlib 1.x's keys goes as it is: the algorithm's old-API trainer."""
    old = {"num_workers", "num_envs_per_worker", "sgd_minibatch_size", "num_sgd_iter", "lambda"}
    old.update(("buffer_size", "learning_starts", "exploration_fraction", "multiagent"))
    path = trainer_path(algo)
    if path is None or not any(k in old for k in unknown):
        return ""
    return f" (a whole dict of RLlib 1.x's keys: {path}(config=d) translates them)"


__all__ = [
    "DEPRECATED",
    "RENAMED",
    "deprecated_names",
    "old_api_hint",
    "unknown_key_hint",
    "warn_once",
]
