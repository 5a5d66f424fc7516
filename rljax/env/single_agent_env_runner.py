"""RLlib's ``SingleAgentEnvRunner`` at its path (``ray.rllib.env.single_agent_env_runner``).

The runner builds a module from an algorithm config (``rljax.algorithms.rllib_surface``), so
it sits above ``rljax.env``: it is imported on first access to the name, not when this module
is, and importing ``rljax.env`` never imports the algorithms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rljax.algorithms.rllib_surface import SingleAgentEnvRunner

__all__ = ["SingleAgentEnvRunner"]


def __getattr__(name: str) -> Any:
    if name == "SingleAgentEnvRunner":
        # Upward on purpose (an RLlib path re-exporting a higher layer's class), and only here.
        from rljax.algorithms.rllib_surface import SingleAgentEnvRunner

        return SingleAgentEnvRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
