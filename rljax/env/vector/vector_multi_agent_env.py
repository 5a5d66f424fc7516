"""RLlib's ``ray.rllib.env.vector.vector_multi_agent_env``: the base class of vector
multi-agent envs, which scripts test with ``isinstance`` (a callback that renders
``env.unwrapped.envs[0]`` whether its env is a gymnasium vector env or a multi-agent one).

rljax's multi-agent runners step ``rljax.env.multi_agent_vector.MultiAgentVectorEnv``, a
subclass: ``envs`` holds its env copies, ``num_envs`` their count, ``unwrapped`` is itself.
"""

from __future__ import annotations

from typing import Any


class VectorMultiAgentEnv:
    """Several copies of a multi-agent env stepped together (RLlib's base class).

    Attributes:
      envs: The env copies (``MultiAgentEnv`` objects), where the vector env holds them.
      num_envs: How many copies.
    """

    metadata: dict[str, Any] = {}
    envs: list[Any] | None = None
    num_envs: int = 0

    @property
    def unwrapped(self) -> VectorMultiAgentEnv:
        """The vector env itself (RLlib's ``env.unwrapped``)."""
        return self


__all__ = ["VectorMultiAgentEnv"]
