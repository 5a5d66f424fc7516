"""Static and dynamic hyper-parameters and the optimizer built once: moved to
``rljax.learners.hyperparams`` (every learner uses them, on- and off-policy); re-exported here
at their earlier path."""

from rljax.learners.hyperparams import (
    LEARNING_RATE,
    MAX_NORM,
    dynamic_settings,
    learning_rate_of,
    live_layout,
    make_injected_optimizer,
    saved_layout,
    settings_at,
    upgrade_opt_state,
    with_hyperparams,
)

__all__ = [
    "LEARNING_RATE",
    "MAX_NORM",
    "dynamic_settings",
    "learning_rate_of",
    "live_layout",
    "make_injected_optimizer",
    "saved_layout",
    "settings_at",
    "upgrade_opt_state",
    "with_hyperparams",
]
