"""What the actor-critic algorithms (PPO, IMPALA, APPO) share, and the next on-policy
algorithm builds on without PPO: the policy (``policy.py``) and the static/dynamic split of
the hyper-parameters with the optimizer built once (``rljax.learners.hyperparams``, re-exported)."""

from rljax.algorithms.actor_critic.policy import (
    POLICY_ID,
    ActorCriticState,
    OnPolicyBatch,
    adapt_kl_coeff,
    build_policy,
    make_actor_critic_parts,
    make_recurrent_policy_parts,
    masked_mean,
    one_step,
    recurrent_spec_of,
)
from rljax.learners.hyperparams import (
    dynamic_settings,
    live_layout,
    make_injected_optimizer,
    saved_layout,
    settings_at,
    upgrade_opt_state,
    with_hyperparams,
)

__all__ = [
    "POLICY_ID",
    "ActorCriticState",
    "OnPolicyBatch",
    "adapt_kl_coeff",
    "build_policy",
    "dynamic_settings",
    "live_layout",
    "make_actor_critic_parts",
    "make_recurrent_policy_parts",
    "make_injected_optimizer",
    "masked_mean",
    "one_step",
    "recurrent_spec_of",
    "saved_layout",
    "settings_at",
    "upgrade_opt_state",
    "with_hyperparams",
]
