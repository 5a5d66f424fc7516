"""RLlib's ``CartPoleCrashing`` (``ray.rllib.examples.envs.classes.cartpole_crashing``): a
CartPole that raises (or stalls) now and then, for trying out fault tolerance
(``.fault_tolerance(restart_failed_env_runners=True)``,
``restart_failed_sub_environments=True``)."""

from __future__ import annotations

import random
import time
from typing import Any

from gymnasium.envs.classic_control import CartPoleEnv

from rljax.env.env_context import EnvContext
from rljax.env.multi_agent_env import make_multi_agent
from rljax.utils.error import EnvError


class CartPoleCrashing(CartPoleEnv):
    """CartPole-v1 that crashes or stalls, as ``config`` (an ``EnvContext``) sets, with
    RLlib's keys:

    - ``p_crash`` (0.005) / ``p_crash_reset`` (0.0): the chance of raising ``EnvError`` in each
      ``step()`` / ``reset()``; ``crash_after_n_steps``: raise at exactly that step instead
      (counted over the env's life); ``crash_on_worker_indices``: crash only on those runners.
    - ``p_stall`` / ``p_stall_reset`` (0.0), ``stall_after_n_steps``, ``stall_time_sec`` (a
      number, or ``(low, high)`` to draw from), ``stall_on_worker_indices``: the same for
      sleeping ``stall_time_sec`` seconds instead.
    - ``max_episode_steps`` (500): episodes are cut there, as CartPole-v1's.
    - ``init_time_s``: sleep this long when built; ``seed``: draw the crashes reproducibly
      (by default each env built draws afresh).
    """

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        config = config if isinstance(config, EnvContext) else EnvContext(dict(config or {}))
        self.config = config
        self.max_episode_steps = int(config.get("max_episode_steps", 500))
        self.p_crash = float(config.get("p_crash", 0.005))
        self.p_crash_reset = float(config.get("p_crash_reset", 0.0))
        self.crash_after_n_steps = config.get("crash_after_n_steps")
        crash_on = config.get("crash_on_worker_indices")
        if crash_on and config.worker_index not in crash_on:
            self.p_crash = self.p_crash_reset = 0.0
            self.crash_after_n_steps = None
        self.p_stall = float(config.get("p_stall", 0.0))
        self.p_stall_reset = float(config.get("p_stall_reset", 0.0))
        self.stall_after_n_steps = config.get("stall_after_n_steps")
        stall_time = config.get("stall_time_sec")
        if not (
            stall_time is None
            or isinstance(stall_time, int | float)
            or (isinstance(stall_time, tuple | list) and len(stall_time) == 2)
        ):
            raise ValueError(f"stall_time_sec={stall_time!r}: use seconds or a (low, high) pair")
        self.stall_time_sec = stall_time
        stall_on = config.get("stall_on_worker_indices")
        if stall_on and config.worker_index not in stall_on:
            self.p_stall = self.p_stall_reset = 0.0
            self.stall_after_n_steps = None
        # Crashes are drawn afresh by each env built (a restarted env does not crash at the
        # same step again), or from env_config's "seed" where one is given (reproducible).
        seed = config.get("seed")
        self._rng = random.Random(
            None
            if seed is None
            else int(seed) * 1_000_003 + config.worker_index * 1_009 + config.vector_index
        )
        # RLlib's init_time_s: a slow constructor (seconds), for health-probe timeouts.
        if config.get("init_time_s"):
            time.sleep(float(config["init_time_s"]))
        self._lifetime_steps = 0
        self._episode_steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self._episode_steps = 0
        if self._rng.random() < self.p_crash_reset:
            raise EnvError(self._where("reset()"))
        self._stall(self.p_stall_reset, None)
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        self._lifetime_steps += 1
        self._episode_steps += 1
        if self._rng.random() < self.p_crash or self._lifetime_steps == self.crash_after_n_steps:
            raise EnvError(self._where("step()"))
        self._stall(self.p_stall, self.stall_after_n_steps)
        obs, reward, terminated, truncated, info = super().step(action)
        truncated = truncated or (not terminated and self._episode_steps >= self.max_episode_steps)
        return obs, reward, terminated, truncated, info

    def _stall(self, p: float, after: int | None) -> None:
        if self.stall_time_sec is None:
            return
        if self._rng.random() < p or (after is not None and self._lifetime_steps == after):
            t = self.stall_time_sec
            time.sleep(self._rng.uniform(*t) if isinstance(t, tuple | list) else float(t))

    def _where(self, call: str) -> str:
        return (
            f"Simulated env crash on worker={self.config.worker_index} "
            f"env-idx={self.config.vector_index} during {call}"
        )


def _crashing(config: Any) -> CartPoleCrashing:
    return CartPoleCrashing(config)


MultiAgentCartPoleCrashing = make_multi_agent(_crashing)
MultiAgentCartPoleCrashing.__module__ = __name__
MultiAgentCartPoleCrashing.__qualname__ = MultiAgentCartPoleCrashing.__name__ = (
    "MultiAgentCartPoleCrashing"
)

__all__ = ["CartPoleCrashing", "EnvError", "MultiAgentCartPoleCrashing"]
