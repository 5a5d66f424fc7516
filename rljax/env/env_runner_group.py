"""RLlib's ``EnvRunnerGroup`` at its path (``ray.rllib.env.env_runner_group``).

``EnvRunnerGroup`` is an algorithm's view of its runners (``rljax.algorithms.rllib_surface``),
so it sits above ``rljax.env``: it is imported on first access to the name, not when this
module is, and importing ``rljax.env`` never imports the algorithms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rljax.algorithms.rllib_surface import EnvRunnerGroup

__all__ = ["EnvRunnerGroup"]


def __getattr__(name: str) -> Any:
    if name == "EnvRunnerGroup":
        # Upward on purpose (an RLlib path re-exporting a higher layer's class), and only here.
        from rljax.algorithms.rllib_surface import EnvRunnerGroup

        return EnvRunnerGroup
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
