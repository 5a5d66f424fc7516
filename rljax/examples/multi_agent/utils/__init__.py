"""RLlib's self-play example helpers at their path
(``ray.rllib.examples.multi_agent.utils``): ``SelfPlayCallback``, which grows a league of
frozen copies of ``main`` through ``Algorithm.add_module``, and ``ask_user_for_action``.

RLlib's league-based callback changes its env runners' and learners' mapping and trained
modules in place (``env_runner.config.multi_agent(...)``), and its old-stack callbacks add
policies through the old API (``add_policy``); rljax's runners and learner are rebuilt through
``add_module`` instead, so those three refuse when built, naming what to use.
"""

from __future__ import annotations

import sys
from typing import Any

from rljax.callbacks.callbacks import RLlibCallback
from rljax.examples.multi_agent.utils.self_play_callback import SelfPlayCallback
from rljax.utils.errors import ConfigError


def ask_user_for_action(time_step: Any) -> int:
    """Asks on the command line for one of the legal actions of an OpenSpiel ``time_step``'s
    current player until one is given, and returns it."""
    pid = time_step.observations["current_player"]
    legal_moves = time_step.observations["legal_actions"][pid]
    choice = -1
    while choice not in legal_moves:
        print(f"Choose an action from {legal_moves}:")
        sys.stdout.flush()
        try:
            choice = int(input())
        except ValueError:
            continue
    return choice


class _Refused(RLlibCallback):
    why = ""

    def __init__(self, *args: Any, **kwargs: Any):
        raise ConfigError(f"{type(self).__name__}: {self.why}")


class SelfPlayCallbackOldAPIStack(_Refused):
    """RLlib's old-stack self-play callback (``add_policy``): refused when built."""

    why = (
        "RLlib's old API stack's self-play adds policies with add_policy, which rljax does not "
        "have; run the script without --old-api-stack (SelfPlayCallback, add_module)"
    )


class SelfPlayLeagueBasedCallback(_Refused):
    """RLlib's league-based self-play callback: refused when built."""

    why = (
        "it changes the env runners' and learners' mapping and trained modules in place "
        "(env_runner.config.multi_agent(...), learner_group.foreach_learner), which rljax's "
        "runners and learner do not take; change them with algorithm.add_module(..., "
        "new_agent_to_module_mapping_fn=..., new_should_module_be_updated=...) as "
        "SelfPlayCallback does"
    )


class SelfPlayLeagueBasedCallbackOldAPIStack(_Refused):
    """RLlib's old-stack league-based callback: refused when built."""

    why = SelfPlayCallbackOldAPIStack.why


__all__ = [
    "SelfPlayCallback",
    "SelfPlayCallbackOldAPIStack",
    "SelfPlayLeagueBasedCallback",
    "SelfPlayLeagueBasedCallbackOldAPIStack",
    "ask_user_for_action",
]
