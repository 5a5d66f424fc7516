"""RLlib's ``MemoryLeakingEnv`` (``ray.rllib.examples.envs.classes.memory_leaking_env``): a
``RandomEnv`` that keeps a little memory every episode, for testing leak detection."""

from __future__ import annotations

import uuid
from typing import Any

from rljax.examples.envs.classes.random_env import RandomEnv


class MemoryLeakingEnv(RandomEnv):
    """``RandomEnv`` (same ``config``) that, on the second step of each episode, adds one
    entry to a dict it never clears (``_leak``)."""

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__(config)
        self._leak: dict[str, int] = {}
        self._steps_after_reset = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self._steps_after_reset = 0
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self._steps_after_reset += 1
        if self._steps_after_reset == 2:
            self._leak[uuid.uuid4().hex.upper()] = 1
        return super().step(action)


__all__ = ["MemoryLeakingEnv"]
