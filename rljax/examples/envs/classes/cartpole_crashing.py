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


def _after(name: str, value: Any) -> Any:
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return value
    if (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(isinstance(v, int) for v in value)
    ):
        return tuple(value)
    raise ValueError(f"{name}={value!r}: use a step count or a (low, high) pair of them")


class CartPoleCrashing(CartPoleEnv):
    """CartPole that crashes or stalls, as ``config`` (an ``EnvContext``) sets, with RLlib's
    keys and meanings:

    - ``p_crash`` (0.005) / ``p_crash_reset`` (0.0): the chance of raising ``EnvError`` in each
      ``step()`` / ``reset()``; ``crash_after_n_steps``: raise at exactly that step of an
      episode (a ``(low, high)`` pair: a step drawn per episode); ``crash_on_worker_indices``:
      crash only on those runners.
    - ``p_stall`` / ``p_stall_reset`` (0.0), ``stall_after_n_steps``, ``stall_time_sec`` (a
      number, or ``(low, high)`` to draw from), ``stall_on_worker_indices``: the same for
      sleeping ``stall_time_sec`` seconds instead.
    - ``init_time_s``: sleep this long (or a time drawn from a pair) when built.
    - ``seed``: draw the crashes reproducibly (by default each env built draws afresh, so a
      restarted env does not crash at the same step again).

    Like RLlib's, it has no time limit of its own: wrap it in ``gymnasium.wrappers.TimeLimit``
    (RLlib's example does), or pass ``max_episode_steps`` to cut episodes there.
    """

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        config = config if isinstance(config, EnvContext) else EnvContext(dict(config or {}))
        self.config = config
        seed = config.get("seed")
        self._rng = random.Random(
            None
            if seed is None
            else int(seed) * 1_000_003 + config.worker_index * 1_009 + config.vector_index
        )
        self.max_episode_steps = config.get("max_episode_steps")
        self.p_crash = float(config.get("p_crash", 0.005))
        self.p_crash_reset = float(config.get("p_crash_reset", 0.0))
        self.crash_after_n_steps = _after("crash_after_n_steps", config.get("crash_after_n_steps"))
        crash_on = config.get("crash_on_worker_indices")
        if crash_on and config.worker_index not in crash_on:
            self.p_crash = self.p_crash_reset = 0.0
            self.crash_after_n_steps = None
        self.p_stall = float(config.get("p_stall", 0.0))
        self.p_stall_reset = float(config.get("p_stall_reset", 0.0))
        self.stall_after_n_steps = _after("stall_after_n_steps", config.get("stall_after_n_steps"))
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
        self.timesteps = 0  # of the current episode, as RLlib's
        self._crash_at: int | None = None
        self._stall_at: int | None = None
        init_time = config.get("init_time_s")
        if init_time:
            time.sleep(self._seconds(init_time))

    def _seconds(self, value: Any) -> float:
        return self._rng.uniform(*value) if isinstance(value, tuple | list) else float(value)

    def _step_of(self, after: Any) -> int | None:
        """The episode step an ``*_after_n_steps`` setting picks (drawn for a pair)."""
        if isinstance(after, tuple):
            return self._rng.randrange(after[0], after[1])
        return after

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self.timesteps = 0
        self._crash_at = self._step_of(self.crash_after_n_steps)
        self._stall_at = self._step_of(self.stall_after_n_steps)
        if self._rng.random() < self.p_crash_reset:
            raise EnvError(self._where("reset()"))
        self._stall(self.p_stall_reset)
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        self.timesteps += 1
        if self._rng.random() < self.p_crash or self.timesteps == self._crash_at:
            raise EnvError(self._where("step()"))
        self._stall(self.p_stall, self.timesteps == self._stall_at)
        obs, reward, terminated, truncated, info = super().step(action)
        if self.max_episode_steps is not None and self.timesteps >= self.max_episode_steps:
            truncated = truncated or not terminated
        return obs, reward, terminated, truncated, info

    def _stall(self, p: float, now: bool = False) -> None:
        if self.stall_time_sec is None:
            return
        if self._rng.random() < p or now:
            time.sleep(self._seconds(self.stall_time_sec))

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
