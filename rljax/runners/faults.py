"""What a runner group does when a runner fails: restart it, drop it, or give up on the run.

The rules and their counters only; the group carries the decisions out (it builds the
replacement, retires the thread). Sub-env restarts inside one runner are
``rljax.env.fault_tolerance.RestartingEnv``'s; both use ``RepeatedFailures`` to tell a bug in
the env (the same failure every time) from one that fails at random.
"""

from __future__ import annotations

import logging
from typing import Any

from rljax.env.failures import (
    REPEATS_OF_A_BUG,
    EnvBugError,
    EnvRunnerError,
    Failure,
    RepeatedFailures,
    runner_name,
)

logger = logging.getLogger("rljax")

# Restarts of a runner slot in a row, none delivering one env step, before it is given up on.
# A flaky env's replacement can fail on its very first step by chance: with n sub-envs each
# failing on a fraction p of steps, it does with probability 1 - (1 - p)^n (15% for p = 1% and
# n = 16). A limit of three ended such runs within a few hundred restarts; ten in a row has odds
# of 6e-9. An env that fails every time costs ten quick restarts.
MAX_FRESH_FAILURES = 10


class FaultPolicy:
    """Restart, drop and give-up rules for ``num_runners`` runner slots, with their counters.

    Args:
      num_runners: Runner slots.
      max_restarts: Restarts allowed over the run, all slots together (0: none).
      ignore_failures: A runner that failed and cannot be restarted is dropped (its columns of
        later batches are empty rows) instead of ending the run, while another one is healthy.
      probe_timeout_s: How long building a replacement (its envs made and reset) may take.
      local: The one runner is the driver's own (``num_env_runners=0``): messages name it so,
        not "env runner 1".

    A slot whose runners keep failing without delivering one env step is given up on after
    ``MAX_FRESH_FAILURES`` restarts in a row; a runner that delivered steps since its last
    restart starts the count again. A runner whose env raises the same exception from the same
    place after the same number of env steps ``REPEATS_OF_A_BUG`` times in a row is not
    restarted again: ``repeated`` says so, and the group raises ``EnvBugError``.
    """

    def __init__(
        self,
        num_runners: int,
        max_restarts: int = 0,
        ignore_failures: bool = False,
        probe_timeout_s: float = 30.0,
        local: bool = False,
    ):
        self.num_runners = num_runners
        self.max_restarts = max_restarts
        self.ignore_failures = ignore_failures
        self.probe_timeout_s = probe_timeout_s
        self.local = local and num_runners == 1
        self.num_restarts = 0
        self.dropped: dict[int, str] = {}  # runner index -> why it was dropped
        # Restarts of a slot since it last delivered an env step.
        self._fresh_restarts = [0] * num_runners
        self._repeats = [RepeatedFailures() for _ in range(num_runners)]

    def name(self, i: int) -> str:
        """Runner ``i`` as messages name it."""
        return runner_name(0 if self.local else i + 1)

    def repeated(self, i: int, error: BaseException, steps: int) -> str | None:
        """Counts runner ``i``'s failure (``error``, after ``steps`` env steps since the runner
        was built); returns the message of the ``EnvBugError`` to raise when it is the same
        failure ``REPEATS_OF_A_BUG`` times in a row, else None."""
        repeats = self._repeats[i]
        repeats.record(error, steps)
        return repeats.bug_message(self.name(i)) if repeats.is_bug else None

    @property
    def num_healthy(self) -> int:
        return self.num_runners - len(self.dropped)

    def progressed(self, i: int) -> None:
        """Runner ``i`` delivered env steps: its earlier failures are not "in a row"."""
        self._fresh_restarts[i] = 0

    def repeat_line(self, i: int) -> str | None:
        """The one log line of runner ``i``'s last failure when one of its kind came before (the
        first of a kind is logged whole, with its traceback), else None."""
        return self._repeats[i].repeat_line(self.name(i), "restarting it")

    def try_restart(self, i: int, why: str, line: str | None = None) -> bool:
        """Whether runner ``i`` (which ``why``) may be restarted once more; counts it if so, and
        logs ``why``, or ``line`` instead where given (a repeated failure's one line)."""
        if self.num_restarts >= self.max_restarts or self._fresh_restarts[i] >= MAX_FRESH_FAILURES:
            return False
        self.num_restarts += 1
        self._fresh_restarts[i] += 1
        if line is not None:
            logger.warning(line)
        else:  # a new failure: with its traceback
            logger.warning("%s %s; restarting it", self.name(i), why)
        return True

    def give_up(self, i: int, why: str) -> str | None:
        """Runner ``i`` failed (``why``) and will not be restarted: records it as dropped and
        returns None when the run may go on without it, else the message to raise."""
        name = self.name(i)
        if self._fresh_restarts[i] >= MAX_FRESH_FAILURES:
            n = self._fresh_restarts[i]
            message = (
                f"{name} failed again after {n} restarts in a row, and none of the {n} "
                "replacements delivered a single env step before it failed: the env fails every "
                f"time, so restarting cannot help ({self.num_restarts} of "
                f"max_num_env_runner_restarts={self.max_restarts} restarts used). "
                f"Last failure: {why}"
            )
        else:
            message = f"{name} {why.rstrip()}"
            if self.max_restarts:
                message += (
                    f"\nNo restart left: {self.num_restarts} of max_num_env_runner_restarts="
                    f"{self.max_restarts} used."
                )
        if self.ignore_failures and self.num_healthy > 1:
            self.drop(i, message)
            return None
        if self.ignore_failures:
            message = f"every env runner has failed (ignore_env_runner_failures=True); {message}"
        return message

    def drop(self, i: int, why: str) -> None:
        """Gives up on runner ``i`` for the rest of the run."""
        logger.warning(
            "%s; dropping it (ignore_env_runner_failures=True): %d of %d env runners remain",
            why,
            self.num_healthy - 1,
            self.num_runners,
        )
        self.dropped[i] = why

    # ---------------------------------------------------------------- state
    def get_state(self) -> dict[str, Any]:
        return {
            "dropped": {str(i): why for i, why in self.dropped.items()},
            "num_restarts": self.num_restarts,
        }

    def check_state(self, state: dict[str, Any], error: type[Exception]) -> None:
        """Raises ``error`` unless the saved dropped runners fit this run (changing nothing)."""
        dropped = state.get("dropped", {})
        bad = [i for i in dropped if not (i.isdigit() and int(i) < self.num_runners)]
        if bad:
            raise error(
                f"the saved state drops env runner(s) {bad[:5]}; this run has {self.num_runners}"
            )
        if dropped and not self.ignore_failures:
            raise error(
                "the saved run had dropped env runners (ignore_env_runner_failures=True); this "
                "run does not drop runners"
            )
        if len(set(dropped) | {str(i) for i in self.dropped}) >= self.num_runners:
            raise error("the saved state drops every env runner")

    def newly_dropped(self, state: dict[str, Any]) -> list[tuple[int, str]]:
        """The runners dropped in the saved run and not in this one, with why."""
        return [
            (int(i), f"dropped before the checkpoint: {why[:300]}")
            for i, why in state.get("dropped", {}).items()
            if int(i) not in self.dropped
        ]


__all__ = [
    "MAX_FRESH_FAILURES",
    "REPEATS_OF_A_BUG",
    "EnvBugError",
    "EnvRunnerError",
    "Failure",
    "FaultPolicy",
    "RepeatedFailures",
    "runner_name",
]
