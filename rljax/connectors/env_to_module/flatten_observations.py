"""RLlib's ``FlattenObservations``: a Dict / Tuple (or Discrete) observation as one vector."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.connectors.env_to_module.connector import EnvToModuleConnector
from rljax.utils.checks import Bool
from rljax.utils.errors import ConfigError


def _leaves(space: gym.Space) -> list[gym.Space]:
    """Leaf spaces in the order ``jax.tree.leaves`` gives an observation's leaves."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for k in sorted(space.spaces) for leaf in _leaves(space.spaces[k])]
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for s in space.spaces for leaf in _leaves(s)]
    return [space]


def _width(space: gym.Space) -> int:
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    return int(np.prod(space.shape or ()))


class FlattenObservations(EnvToModuleConnector):
    """Flattens each observation into one float32 vector, as RLlib's connector does: Box
    leaves flattened, Discrete and MultiDiscrete leaves one-hot, MultiBinary as 0/1, in the
    order of the space's leaves (Dict keys sorted), concatenated.

    Args (RLlib's): ``input_observation_space`` / ``input_action_space`` (the algorithm
    supplies the spaces), ``multi_agent`` (True on multi-agent PPO, where it runs on the host
    on each env step's observation dict: ``rljax.connectors.env_to_module.multi_agent``) and
    ``agent_ids`` (with ``multi_agent``: the agents whose observations it flattens; None: all).
    """

    type_name = "FlattenObservations"

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        agent_ids: Any = None,
        **kwargs: Any,
    ):
        if kwargs:
            raise ConfigError(
                f"FlattenObservations got unknown arguments {sorted(kwargs)}; it takes "
                "multi_agent and agent_ids"
            )
        self.multi_agent = Bool()("FlattenObservations multi_agent", multi_agent)
        if agent_ids is not None and (
            isinstance(agent_ids, str | bytes) or not hasattr(agent_ids, "__iter__")
        ):
            raise ConfigError(
                f"FlattenObservations agent_ids={agent_ids!r}; give a list of agent ids or None"
            )
        if agent_ids is not None and not self.multi_agent:
            raise ConfigError("FlattenObservations agent_ids needs multi_agent=True")
        self.agent_ids: list[Any] | None = None if agent_ids is None else list(agent_ids)
        self._kinds: tuple[Any, ...] = ()

    def spec(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type_name, "multi_agent": self.multi_agent}
        if self.agent_ids is not None:
            out["agent_ids"] = list(self.agent_ids)
        return out

    def check_multi_agent(self) -> None:
        """Raises ``ConfigError`` for ``multi_agent=True`` on a single-agent config."""
        if self.multi_agent:
            raise ConfigError(
                "FlattenObservations(multi_agent=True) is for multi-agent configs "
                "(.multi_agent(...)); a single-agent env takes FlattenObservations()"
            )

    def check_space(self, space: gym.Space) -> None:
        for leaf in _leaves(space):
            ok = isinstance(
                leaf,
                gym.spaces.Box
                | gym.spaces.Discrete
                | gym.spaces.MultiDiscrete
                | gym.spaces.MultiBinary,
            )
            if not ok:
                raise ConfigError(
                    f"FlattenObservations flattens Box, Discrete, MultiDiscrete and MultiBinary "
                    f"leaves; the observation space {space} has {leaf}"
                )

    def output_space(self, space: gym.Space) -> gym.Space:
        width = sum(_width(leaf) for leaf in _leaves(space))
        return gym.spaces.Box(-np.inf, np.inf, (width,), np.float32)

    def init_state(self, space: gym.Space) -> dict[str, Any]:
        # How each leaf is read is static: part of the program, not of the state.
        kinds: list[tuple[Any, ...]] = []
        for leaf in _leaves(space):
            shape = tuple(leaf.shape or ())
            if isinstance(leaf, gym.spaces.Discrete):
                kinds.append(("onehot", shape, (int(leaf.n),), (int(leaf.start),)))
            elif isinstance(leaf, gym.spaces.MultiDiscrete):
                sizes = tuple(int(n) for n in leaf.nvec)
                kinds.append(("onehot", shape, sizes, tuple(int(s) for s in leaf.start)))
            else:
                kinds.append(("flat", shape))
        self._kinds = tuple(kinds)
        return {}

    def transform(self, state: Any, obs: Any) -> jax.Array:
        parts = []
        for x, kind in zip(jax.tree.leaves(obs), self._kinds, strict=True):
            shape = kind[1]
            lead = x.shape[: x.ndim - len(shape)]  # the batch dims, whatever they are
            if kind[0] == "onehot":
                x = x.reshape((*lead, len(kind[2])))
                parts += [
                    jax.nn.one_hot(x[..., j] - start, n, dtype=jnp.float32)
                    for j, (n, start) in enumerate(zip(kind[2], kind[3], strict=True))
                ]
            else:
                parts.append(jnp.asarray(x, jnp.float32).reshape((*lead, -1)))
        return jnp.concatenate(parts, axis=-1)
