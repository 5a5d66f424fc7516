"""Environments: the registry, EnvPool and gymnasium vector envs, multi-agent envs."""

from rljax.env.multi_agent_env import MultiAgentEnv, make_multi_agent
from rljax.env.registry import register_env

__all__ = ["MultiAgentEnv", "make_multi_agent", "register_env"]
