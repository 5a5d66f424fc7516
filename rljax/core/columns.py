"""RLlib's batch column names (``ray.rllib.core.columns.Columns``), for scripts that build
``forward_inference`` inputs and read its outputs by them."""


class Columns:
    """The keys of RLModule inputs and outputs that rljax's modules read or return."""

    OBS = "obs"
    ACTIONS = "actions"
    ACTION_DIST_INPUTS = "action_dist_inputs"
    STATE_IN = "state_in"
    STATE_OUT = "state_out"
    PREV_ACTIONS = "prev_actions"
    PREV_REWARDS = "prev_rewards"


__all__ = ["Columns"]
