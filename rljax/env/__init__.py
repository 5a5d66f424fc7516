"""Environments: the registry, EnvPool and gymnasium vector envs, multi-agent envs."""

from rljax.env.multi_agent_env import MultiAgentEnv, make_multi_agent
from rljax.env.registry import register_env
from rljax.env.single_agent_episode import SingleAgentEpisode

__all__ = ["MultiAgentEnv", "SingleAgentEpisode", "make_multi_agent", "register_env"]
