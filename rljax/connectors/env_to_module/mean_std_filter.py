"""RLlib's ``MeanStdFilter``: observations normalised by running statistics, inside jit.

The statistics are RLlib's ``RunningStat`` (count, mean and the sum of squared deviations),
merged batch by batch with Chan et al.'s parallel formula, which gives the statistics of the
whole stream whatever the batches. The standard deviation is RLlib's: the sample one
(``m2 / (n - 1)``) from two observations on, ``|mean|`` for one.

One difference, deliberate: RLlib's runners update their filter with each observation before
normalising it; rljax's learner folds each train batch into the statistics after training on
it (``rljax.connectors.env_to_module.connector``), so a batch is normalised with the
statistics of the batches before it, exactly as the policy acted on it. Before the first
update (no statistics yet) observations pass unchanged.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.connectors.env_to_module.connector import EnvToModuleConnector
from rljax.utils.checks import Bool, Number
from rljax.utils.errors import ConfigError

SMALL_NUMBER = 1e-8  # RLlib's, added to the standard deviation


class MeanStdFilter(EnvToModuleConnector):
    """Normalises observations to mean 0 and standard deviation 1, per dimension.

    Args (RLlib's):
      input_observation_space, input_action_space: Accepted for RLlib's signature; the
        algorithm supplies the spaces.
      multi_agent: RLlib's flag for multi-agent runs: statistics per agent id, kept on the
        host where the env is stepped (``rljax.connectors.env_to_module.multi_agent``).
      de_mean_to_zero: Subtract the running mean.
      de_std_to_one: Divide by the running standard deviation (+1e-8).
      clip_by_value: Clip the result to ``[-clip_by_value, clip_by_value]``; None: no clip.
      update_stats: Learn the statistics from the train batches; False keeps them as they
        are (a restored checkpoint's, say).
    """

    type_name = "MeanStdFilter"

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        de_mean_to_zero: bool = True,
        de_std_to_one: bool = True,
        clip_by_value: float | None = 10.0,
        update_stats: bool = True,
        **kwargs: Any,
    ):
        if kwargs:
            raise ConfigError(
                f"MeanStdFilter got unknown arguments {sorted(kwargs)}; it takes multi_agent, "
                "de_mean_to_zero, de_std_to_one, clip_by_value and update_stats"
            )
        self.multi_agent = Bool()("MeanStdFilter multi_agent", multi_agent)
        self.de_mean_to_zero = Bool()("MeanStdFilter de_mean_to_zero", de_mean_to_zero)
        self.de_std_to_one = Bool()("MeanStdFilter de_std_to_one", de_std_to_one)
        self.clip_by_value = Number(0, low_open=True, optional=True)(
            "MeanStdFilter clip_by_value", clip_by_value
        )
        self.update_stats = Bool()("MeanStdFilter update_stats", update_stats)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.spec().items() if k != "type")
        return f"MeanStdFilter({args})"

    def spec(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "multi_agent": self.multi_agent,
            "de_mean_to_zero": self.de_mean_to_zero,
            "de_std_to_one": self.de_std_to_one,
            "clip_by_value": self.clip_by_value,
            "update_stats": self.update_stats,
        }

    def check_space(self, space: gym.Space) -> None:
        if not isinstance(space, gym.spaces.Box):
            raise ConfigError(
                f"MeanStdFilter normalises Box observations; the observation space is {space}"
            )

    def output_space(self, space: gym.Space) -> gym.Space:
        bound = np.inf if self.clip_by_value is None else float(self.clip_by_value)
        return gym.spaces.Box(-bound, bound, space.shape, np.float32)

    def init_state(self, space: gym.Space) -> dict[str, jax.Array]:
        shape = tuple(space.shape or ())
        return {
            "count": jnp.zeros((), jnp.int32),
            "mean": jnp.zeros(shape, jnp.float32),
            "m2": jnp.zeros(shape, jnp.float32),
        }

    @staticmethod
    def std(state: dict[str, jax.Array]) -> jax.Array:
        """RLlib's ``RunningStat.std``: sample standard deviation; ``|mean|`` for one row."""
        n = state["count"].astype(jnp.float32)
        var = jnp.where(n > 1, state["m2"] / jnp.maximum(n - 1, 1.0), jnp.square(state["mean"]))
        return jnp.sqrt(var)

    def transform(self, state: dict[str, jax.Array], obs: jax.Array) -> jax.Array:
        x = jnp.asarray(obs).astype(jnp.float32)
        y = x
        if self.de_mean_to_zero:
            y = y - state["mean"]
        if self.de_std_to_one:
            y = y / (self.std(state) + SMALL_NUMBER)
        if self.clip_by_value is not None:
            bound = float(self.clip_by_value)
            y = jnp.clip(y, -bound, bound)
        return jnp.where(state["count"] > 0, y, x)

    def update(
        self, state: dict[str, jax.Array], obs: jax.Array, mask: jax.Array
    ) -> dict[str, jax.Array]:
        if not self.update_stats:
            return state
        x = obs.astype(jnp.float32)
        w = mask.astype(jnp.float32).reshape(mask.shape + (1,) * (x.ndim - 1))
        nb = jnp.sum(mask.astype(jnp.int32))
        nbf = nb.astype(jnp.float32)
        mean_b = jnp.sum(w * x, axis=0) / jnp.maximum(nbf, 1.0)
        m2_b = jnp.sum(w * jnp.square(x - mean_b), axis=0)
        n1 = state["count"].astype(jnp.float32)
        n = n1 + nbf
        delta = mean_b - state["mean"]
        share = nbf / jnp.maximum(n, 1.0)
        return {
            "count": state["count"] + nb,
            "mean": state["mean"] + delta * share,
            "m2": state["m2"] + m2_b + jnp.square(delta) * n1 * share,
        }
