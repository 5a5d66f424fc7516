"""How an env's failures are told apart: a bug in the env (the same failure every time) from
one that fails at random, and the errors raised for them.

Shared by sub-env restarts inside a runner (``rljax.env.fault_tolerance.RestartingEnv``) and a
runner group's runner restarts (``rljax.runners.faults``, which re-exports these names).
"""

from __future__ import annotations

import dataclasses
import os
import traceback
from typing import Any

from rljax.utils.error import EnvError

# The same failure this many times in a row, each time after the same number of env steps of a
# freshly built env (or runner), is a bug in the env: it is raised (``EnvBugError``) instead of
# restarted again. An env that fails at random on a fraction p of its steps repeats its last
# failure's step count N - 1 more times with probability about p^(N-1) / N per failure (the
# failures' step counts are geometric), so over a run of S steps (p * S failures) it is taken
# for a bug about p^N * S / N times: with N = 3 that is 8% of the runs of 250k steps of an env
# failing on 1% of them, with N = 5 once in 5,000 runs of 10M steps. A real bug costs N restarts.
REPEATS_OF_A_BUG = 5


class EnvRunnerError(RuntimeError):
    """An env runner failed; the message names the runner and carries the env's traceback."""


class EnvBugError(EnvRunnerError, EnvError):
    """An env raised the same exception (type and message) from the same place after the same
    number of env steps ``REPEATS_OF_A_BUG`` times in a row, rebuilt each time: a bug in the
    env, which restarting cannot help. ``train()`` raises it with the env's exception as its
    ``__cause__`` (and so its traceback), where that exception was raised in this process;
    ``env_traceback`` holds the traceback as text, which survives an env's worker process (an
    ASYNC sub-env), where the exception object does not."""

    message: str
    env_traceback: str

    def __init__(self, message: Any, env_traceback: str = ""):
        if isinstance(message, EnvBugError):  # re-raised as type(e)(e) by gymnasium's workers
            message, env_traceback = message.message, message.env_traceback
        super().__init__(message)
        self.message = str(message)
        self.env_traceback = env_traceback

    def __reduce__(self) -> Any:  # picklable with its traceback text (a worker's pipe)
        return type(self), (self.message, self.env_traceback)


def runner_name(worker_index: int) -> str:
    """How messages name a runner: the driver's own (``worker_index=0``) or env runner n."""
    if worker_index == 0:
        return "the driver's env runner (the local one, worker_index=0)"
    return f"env runner {worker_index} (worker_index={worker_index})"


@dataclasses.dataclass(frozen=True)
class Failure:
    """What identifies an env's failure: the exception's type and message, the place it was
    raised (file, line, function of the innermost frame: the callers above it may differ, as
    a first reset and a rebuilt env's reset do) and the env steps its env (or runner) had taken
    since it was built."""

    kind: str
    message: str
    place: tuple[str, int, str] | None
    steps: int

    @classmethod
    def of(cls, error: BaseException, steps: int) -> Failure:
        frames = traceback.extract_tb(error.__traceback__)
        place = (frames[-1].filename, frames[-1].lineno or 0, frames[-1].name) if frames else None
        return cls(type(error).__qualname__, str(error), place, steps)

    def describe(self) -> str:
        """One line: the exception and where it was raised."""
        text = f"{self.kind}: {self.message}" if self.message else self.kind
        text = text.splitlines()[0] if text else self.kind
        if len(text) > 200:
            text = text[:200] + "..."
        if self.place is not None:
            file, line, name = self.place
            text += f" at {os.path.basename(file)}:{line} in {name}"
        return text


def _steps(n: int) -> str:
    return "1 env step" if n == 1 else f"{n} env steps"


class RepeatedFailures:
    """Counts an env's (or a runner slot's) failures in a row that are the same ``Failure``,
    and remembers the kinds seen (the failure but for its step count), so that only the first
    of each kind is logged with its traceback: an env failing at random logs one line per
    failure after its first."""

    MAX_KINDS = 100  # kinds remembered; past that, a new kind is logged whole again

    def __init__(self, limit: int = REPEATS_OF_A_BUG):
        self.limit = limit
        self.last: Failure | None = None
        self.in_a_row = 0
        self.seen_before = False  # the last failure's kind was seen before
        self._kinds: dict[tuple[str, str, Any], int] = {}  # kind -> failures of it

    def record(self, error: BaseException, steps: int) -> Failure:
        """Counts ``error``, raised after ``steps`` env steps; returns its ``Failure``."""
        failure = Failure.of(error, steps)
        self.in_a_row = self.in_a_row + 1 if failure == self.last else 1
        self.last = failure
        kind = (failure.kind, failure.message, failure.place)
        self.seen_before = kind in self._kinds
        if self.seen_before or len(self._kinds) < self.MAX_KINDS:
            self._kinds[kind] = self._kinds.get(kind, 0) + 1
        return failure

    @property
    def api_mismatch(self) -> bool:
        """The last failure shows an env that does not follow gymnasium's API (an
        ``EnvAPIError``, or a ``reset`` that takes no ``seed``: old gym's), which no rebuild
        changes: raised at its first occurrence."""
        last = self.last
        if last is None:
            return False
        old_reset = last.kind == "TypeError" and any(
            f"reset() got an unexpected keyword argument '{k}'" in last.message
            for k in ("seed", "options")
        )
        return last.kind == "EnvAPIError" or old_reset

    @property
    def is_bug(self) -> bool:
        """The last failure repeated ``limit`` times in a row, or is an API mismatch."""
        return self.in_a_row >= self.limit or self.api_mismatch

    def bug_message(self, who: str) -> str:
        """The message of the ``EnvBugError`` for ``who`` (after ``is_bug``)."""
        assert self.last is not None
        if self.api_mismatch:
            return (
                f"{who} raised {self.last.describe()}: the env does not follow gymnasium's API "
                "(reset(seed=None, options=None) -> (obs, info); step(action) -> (obs, reward, "
                "terminated, truncated, info)), which restarting cannot help. RLlib 1.x's "
                "trainers (rljax.agents) adapt old gym envs; the new API takes gymnasium's."
            )
        return (
            f"{who} raised the same {self.last.describe()} after the same "
            f"{_steps(self.last.steps)} {self.in_a_row} times in a row, rebuilt each time: "
            "this is a bug in the env (a failure at random does not repeat so exactly), and "
            "restarting cannot help."
        )

    def repeat_line(self, who: str, action: str) -> str | None:
        """The one log line of the last failure when its kind was seen before, else None (it
        is to be logged with its traceback)."""
        if not self.seen_before or self.last is None:
            return None
        last = self.last
        kind = self._kinds[(last.kind, last.message, last.place)]
        if self.in_a_row > 1:
            count = (
                f"{self.in_a_row} of {self.limit} in a row before it is raised as a bug in the env"
            )
        else:
            count = f"failure {kind} of this kind, at another step count than the one before"
        return f"{who} failed again with {last.describe()} after {_steps(last.steps)} ({count}); {action}"


__all__ = [
    "REPEATS_OF_A_BUG",
    "EnvBugError",
    "EnvRunnerError",
    "Failure",
    "RepeatedFailures",
    "runner_name",
]
