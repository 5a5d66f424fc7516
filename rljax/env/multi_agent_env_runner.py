"""RLlib's ``MultiAgentEnvRunner`` at its path (``ray.rllib.env.multi_agent_env_runner``).

The name is what ``.env_runners(env_runner_cls=...)`` takes for a multi-agent config (rljax's
runner threads are the default either way); the class lives beside the algorithms
(``rljax.algorithms.rllib_surface``), above ``rljax.env``: it is imported on first access to
the name, not when this module is, and importing ``rljax.env`` never imports the algorithms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rljax.algorithms.rllib_surface import MultiAgentEnvRunner

__all__ = ["MultiAgentEnvRunner"]


def __getattr__(name: str) -> Any:
    if name == "MultiAgentEnvRunner":
        # Upward on purpose (an RLlib path re-exporting a higher layer's class), and only here.
        from rljax.algorithms.rllib_surface import MultiAgentEnvRunner

        return MultiAgentEnvRunner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
