"""Adapters that expose other multi-agent env APIs as rljax ``MultiAgentEnv`` s.

``rljax.env.wrappers.pettingzoo_env`` holds ``ParallelPettingZooEnv`` and ``PettingZooEnv``;
PettingZoo itself is imported only when one of them is built.
"""

from rljax.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv

__all__ = ["ParallelPettingZooEnv", "PettingZooEnv"]
