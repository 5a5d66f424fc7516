"""Sub-environment restarts: a gymnasium env rebuilt whenever it raises.

``RestartingEnv`` wraps one sub-env (in the runner's thread, or inside its worker process for
ASYNC). When ``step`` raises, the env is closed, rebuilt from its creator and reset; the step
returns the fresh env's first observation with ``info["rljax_restarted"] = True`` (reward 0, not
done). The runner then drops the broken episode: its transitions in the current fragment are
marked invalid (no training on them) and it is not reported in the episode metrics; the other
sub-envs' episodes go on. A ``reset`` that raises is retried on a rebuilt env the same way. An
env that keeps failing, ``max_in_a_row`` times without one good step in between, is given up on
with the last error.

An env that raises the same exception from the same place after the same number of steps since
it was built ``REPEATS_OF_A_BUG`` times in a row has a bug, which rebuilding cannot help: that
failure is raised as ``EnvBugError`` (its cause the env's exception), which stops the run.
The first failure of a kind is logged with its traceback, its repeats one line each.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rljax.env.failures import REPEATS_OF_A_BUG, EnvBugError, RepeatedFailures

RESTARTED = "rljax_restarted"

logger = logging.getLogger("rljax")


class RestartingEnv(gym.Wrapper):
    """``env_fn()``, rebuilt and reset whenever it raises in ``step`` or ``reset``.

    A gymnasium wrapper of the env built last, so ``unwrapped``, ``get_wrapper_attr`` (a vector
    env's ``call``, ``get_attr``) and ``set_wrapper_attr`` reach the user's env through it; an
    attribute set that way is lost when the env is rebuilt.

    Args:
      env_fn: Builds the env (again after each failure).
      max_in_a_row: Failures without one good step in between before the last is raised.
      name: How messages name this sub-env (e.g. "sub-env 3 of env runner 2 (worker_index=2)").
      repeats: The same failure this many times in a row is raised as ``EnvBugError``.

    It holds no env state: ``rljax.env.state`` saves the env inside it and skips this layer
    (``rljax_stateless``), so a checkpoint does not depend on whether sub-envs restart (a
    restored run's failure counts start from zero).
    """

    rljax_stateless = True

    def __init__(
        self,
        env_fn: Callable[[], gym.Env],
        max_in_a_row: int = 20,
        name: str = "a sub-env",
        repeats: int = REPEATS_OF_A_BUG,
    ):
        super().__init__(env_fn())
        self._env_fn = env_fn
        self._max_in_a_row = max_in_a_row
        self.name = name
        self.num_restarts = 0
        self._fails_in_a_row = 0  # failures since the last good step
        self._steps = 0  # good steps of the env built last
        self._repeats = RepeatedFailures(repeats)

    def _failed(self, error: Exception) -> str:
        """Counts ``error`` (raised by the env built last, after ``_steps`` good steps) and
        logs it; raises ``EnvBugError`` when it is a bug. Returns its traceback."""
        text = "".join(traceback.format_exception(error))
        self._repeats.record(error, self._steps)
        if self._repeats.is_bug:
            raise EnvBugError(self._repeats.bug_message(self.name), text) from error
        attempt = self._fails_in_a_row + 1
        if attempt > self._max_in_a_row:
            return text
        line = self._repeats.repeat_line(self.name, "rebuilding it")
        if line is not None:
            logger.warning(line)
        else:
            logger.warning("%s failed; rebuilding it (attempt %d):\n%s", self.name, attempt, text)
        return text

    def _rebuild_and_reset(
        self, error: Exception, seed: int | None = None, options: dict | None = None
    ) -> tuple[Any, dict]:
        text = self._failed(error)
        while True:
            self._fails_in_a_row += 1
            if self._fails_in_a_row > self._max_in_a_row:
                break
            self.num_restarts += 1
            with contextlib.suppress(Exception):
                self.env.close()
            self._steps = 0
            try:
                self.env = self._env_fn()
                return self.env.reset(seed=seed, options=options)
            except Exception as e:  # noqa: BLE001 (retried, then raised below)
                text = self._failed(e)
        raise RuntimeError(
            f"{self.name} failed {self._max_in_a_row} times in a row, rebuilt each time; last "
            f"error:\n{text}"
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        try:
            return self.env.reset(seed=seed, options=options)
        except Exception as e:  # noqa: BLE001
            obs, info = self._rebuild_and_reset(e, seed, options)
            return obs, {**info, RESTARTED: True}  # counted by the runner

    def step(self, action: Any):
        try:
            out = self.env.step(action)
        except Exception as e:  # noqa: BLE001
            obs, info = self._rebuild_and_reset(e)
            return obs, 0.0, False, False, {**info, RESTARTED: True}
        self._fails_in_a_row = 0
        self._steps += 1
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.env.close()


__all__ = ["RESTARTED", "EnvBugError", "RestartingEnv"]
