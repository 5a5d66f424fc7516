"""Environments: the registry, EnvPool and gymnasium vector envs behind one interface."""

from rljax.env.registry import register_env

__all__ = ["register_env"]
