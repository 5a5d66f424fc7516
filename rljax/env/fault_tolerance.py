"""Sub-environment restarts: a gymnasium env rebuilt whenever it raises.

``RestartingEnv`` wraps one sub-env (in the runner's thread, or inside its worker process for
ASYNC). When ``step`` raises, the env is closed, rebuilt from its creator and reset; the step
returns the fresh env's first observation with ``info["rljax_restarted"] = True`` (reward 0, not
done). The runner then drops the broken episode: its transitions in the current fragment are
marked invalid (no training on them) and it is not reported in the episode metrics. A ``reset``
that raises is retried on a rebuilt env the same way. An env that keeps failing, ``max_in_a_row``
times without one good step in between, is given up on with the last error.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Callable
from typing import Any

import gymnasium as gym

RESTARTED = "rljax_restarted"

logger = logging.getLogger("rljax")


class RestartingEnv(gym.Env):
    """``env_fn()``, rebuilt and reset whenever it raises in ``step`` or ``reset``."""

    def __init__(self, env_fn: Callable[[], gym.Env], max_in_a_row: int = 20):
        self._env_fn = env_fn
        self._max_in_a_row = max_in_a_row
        self.env = env_fn()
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.metadata = getattr(self.env, "metadata", {})
        self.render_mode = getattr(self.env, "render_mode", None)
        self.num_restarts = 0
        self._fails_in_a_row = 0  # failures since the last good step

    def _rebuild_and_reset(
        self, error: str, seed: int | None = None, options: dict | None = None
    ) -> tuple[Any, dict]:
        while True:
            self._fails_in_a_row += 1
            if self._fails_in_a_row > self._max_in_a_row:
                break
            attempt = self._fails_in_a_row
            self.num_restarts += 1
            logger.warning("sub-env failed; rebuilding it (attempt %d):\n%s", attempt, error)
            with contextlib.suppress(Exception):
                self.env.close()
            try:
                self.env = self._env_fn()
                return self.env.reset(seed=seed, options=options)
            except Exception:  # noqa: BLE001 (retried, then raised below)
                error = traceback.format_exc()
        raise RuntimeError(
            f"a sub-env failed {self._max_in_a_row} times in a row, rebuilt each time; last "
            f"error:\n{error}"
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        try:
            return self.env.reset(seed=seed, options=options)
        except Exception:  # noqa: BLE001
            obs, info = self._rebuild_and_reset(traceback.format_exc(), seed, options)
            return obs, {**info, RESTARTED: True}  # counted by the runner

    def step(self, action: Any):
        try:
            out = self.env.step(action)
        except Exception:  # noqa: BLE001
            obs, info = self._rebuild_and_reset(traceback.format_exc())
            return obs, 0.0, False, False, {**info, RESTARTED: True}
        self._fails_in_a_row = 0
        return out

    def get_state(self) -> dict[str, int]:
        """Its counters (the env inside is saved as a layer of its own: ``rljax.env.state``)."""
        return {"num_restarts": self.num_restarts, "fails_in_a_row": self._fails_in_a_row}

    def set_state(self, state: dict[str, int]) -> None:
        self.num_restarts = int(state["num_restarts"])
        self._fails_in_a_row = int(state["fails_in_a_row"])

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.env.close()


__all__ = ["RESTARTED", "RestartingEnv"]
