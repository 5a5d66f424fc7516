"""RLlib's ``GroupAgentsWrapper`` (``MultiAgentEnv.with_agent_groups``): agents of a
``MultiAgentEnv`` grouped into one agent each, whose observation and action are tuples of the
members'.

A group's observation is the list of its members' observations and its space a ``Tuple`` of
theirs (or the ``obs_space`` given); its action a sequence, one per member, in the group's
order. Its reward is the sum of the members' (each member's reward is kept in the group's info
under ``"_group_rewards"``, the members' infos under ``"_group_info"``); it is terminated or
truncated once all its members are. Agents in no group pass through as they are. A group whose
members are not all in a dict the env returns is an error naming the missing member, as in
RLlib: grouped agents act together.
"""

from __future__ import annotations

from rljax.env.multi_agent_env import GROUP_INFO, GROUP_REWARDS, GroupAgentsWrapper

__all__ = ["GROUP_INFO", "GROUP_REWARDS", "GroupAgentsWrapper"]
