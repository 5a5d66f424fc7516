"""RLlib's result-key constants (``ray.rllib.utils.metrics``) for the keys rljax reports, so
that scripts written against them read rljax's results; and RLlib's ``MetricsLogger``
(``rljax.utils.metrics.metrics_logger``).

Only the names of keys rljax's results contain are defined here: a script that reaches for
another one fails at its import, not later with a silent ``KeyError``.
"""

from __future__ import annotations

# The ``learners`` results' all-module key (RLlib's ``ALL_MODULES``, also at ``rljax.core``).
ALL_MODULES = "__all_modules__"

# Result-dict sections.
ENV_RUNNER_RESULTS = "env_runners"
EVALUATION_RESULTS = "evaluation"
LEARNER_RESULTS = "learners"
FAULT_TOLERANCE_STATS = "fault_tolerance"
TIMERS = "timers"

# Sampling and training counters.
NUM_ENV_STEPS_SAMPLED = "num_env_steps_sampled"
NUM_ENV_STEPS_SAMPLED_LIFETIME = "num_env_steps_sampled_lifetime"
NUM_ENV_STEPS_SAMPLED_PER_SECOND = "num_env_steps_sampled_per_second"
NUM_ENV_STEPS_TRAINED = "num_env_steps_trained"
NUM_ENV_STEPS_TRAINED_LIFETIME = "num_env_steps_trained_lifetime"
NUM_EPISODES = "num_episodes"
NUM_EPISODES_LIFETIME = "num_episodes_lifetime"

# Episode statistics (under env_runners and evaluation/env_runners).
EPISODE_LEN_MEAN = "episode_len_mean"
EPISODE_LEN_MAX = "episode_len_max"
EPISODE_LEN_MIN = "episode_len_min"
EPISODE_RETURN_MEAN = "episode_return_mean"
EPISODE_RETURN_MAX = "episode_return_max"
EPISODE_RETURN_MIN = "episode_return_min"

# Timers (under timers).
TRAINING_ITERATION_TIMER = "training_iteration"
TRAINING_STEP_TIMER = "training_step"

__all__ = [
    "ALL_MODULES",
    "ENV_RUNNER_RESULTS",
    "EPISODE_LEN_MAX",
    "EPISODE_LEN_MEAN",
    "EPISODE_LEN_MIN",
    "EPISODE_RETURN_MAX",
    "EPISODE_RETURN_MEAN",
    "EPISODE_RETURN_MIN",
    "EVALUATION_RESULTS",
    "FAULT_TOLERANCE_STATS",
    "LEARNER_RESULTS",
    "NUM_ENV_STEPS_SAMPLED",
    "NUM_ENV_STEPS_SAMPLED_LIFETIME",
    "NUM_ENV_STEPS_SAMPLED_PER_SECOND",
    "NUM_ENV_STEPS_TRAINED",
    "NUM_ENV_STEPS_TRAINED_LIFETIME",
    "NUM_EPISODES",
    "NUM_EPISODES_LIFETIME",
    "TIMERS",
    "TRAINING_ITERATION_TIMER",
    "TRAINING_STEP_TIMER",
]
