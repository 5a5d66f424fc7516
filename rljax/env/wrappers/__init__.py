"""Adapters that expose other multi-agent env APIs as rljax ``MultiAgentEnv`` s.

``rljax.env.wrappers.pettingzoo_env`` holds ``ParallelPettingZooEnv`` and ``PettingZooEnv``;
PettingZoo itself is imported only when one of them is built. ``group_agents_wrapper`` holds
RLlib's ``GroupAgentsWrapper`` (``MultiAgentEnv.with_agent_groups``).
"""

from rljax.env.wrappers.group_agents_wrapper import GroupAgentsWrapper
from rljax.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

__all__ = ["GroupAgentsWrapper", "ParallelPettingZooEnv", "PettingZooEnv"]
