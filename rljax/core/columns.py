"""RLlib's batch column names (``ray.rllib.core.columns.Columns``), for scripts that build
``forward_inference`` inputs and read its outputs by them."""


class Columns:
    """The keys of RLModule inputs and outputs that rljax's modules read or return, and of the
    batch a learner's ``compute_loss_for_module`` gets."""

    OBS = "obs"
    ACTIONS = "actions"
    ACTION_DIST_INPUTS = "action_dist_inputs"
    STATE_IN = "state_in"
    STATE_OUT = "state_out"
    PREV_ACTIONS = "prev_actions"
    PREV_REWARDS = "prev_rewards"
    # A learner's batch (``rljax.algorithms.ppo.ppo_learner``).
    ACTION_LOGP = "action_logp"
    VF_PREDS = "vf_preds"
    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"
    LOSS_MASK = "loss_mask"


__all__ = ["Columns"]
