"""Saving and restoring a runner group's state as plain data: every runner's envs, pending step
result, actor state and key (``HostRunner.get_state``), and the fault policy's counters.

Runners' state exists only at a fragment boundary, so only groups whose runners rest there
between ``sample()`` calls (synchronous sampling, ``max_policy_lag=0``) can save or restore it;
the fault policy's part (dropped runners, restarts used) is saved always.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from rljax.env.state import EnvStateError, EnvStateMalformed
from rljax.runners.faults import FaultPolicy


class StatefulRunner(Protocol):
    busy: bool

    def get_state(self) -> dict[str, Any]: ...

    def check_state(self, state: dict[str, Any]) -> list[Any]: ...

    def set_state(self, state: dict[str, Any], checked: list[Any] | None = None) -> None: ...


class GroupState:
    """``get_state`` / ``check_state`` / ``set_state`` of a group of ``runners``.

    Args:
      runners: The group's runner slots (the group's own list: replacements show up here).
      faults: The group's fault policy (its dropped runners and restart count are saved).
      resting: Whether runners rest at a fragment boundary between samples (``max_policy_lag=0``).
      drop: The group's action that gives up on a runner (a restored run drops again the runners
        the saved one had dropped).
    """

    def __init__(
        self,
        runners: Sequence[StatefulRunner],
        faults: FaultPolicy,
        resting: bool,
        drop: Callable[[int, str], None],
    ):
        self._runners = runners
        self._faults = faults
        self._resting = resting
        self._drop = drop

    def _check_resting(self, what: str) -> None:
        if not self._resting:
            raise EnvStateError(
                f"env runners' state cannot be {what} with sample_async=True: a runner is always "
                "in the middle of its next fragment"
            )

    def get_state(self, include_envs: bool = True) -> dict[str, Any]:
        """Each runner's state at the fragment boundary where it rests (None for a dropped one;
        ``runners`` None without ``include_envs``), the dropped runners and the restart count.

        Raises ``EnvStateError`` when runners do not rest between samples, a runner is stepping
        (a ``sample()`` was interrupted) or an env's state cannot be saved as plain data.
        """
        meta: dict[str, Any] = {"runners": None, **self._faults.get_state()}
        if not include_envs:
            return meta
        self._check_resting("saved")
        dropped = self._faults.dropped
        for i, runner in enumerate(self._runners):
            if i not in dropped and runner.busy:
                raise EnvStateError(
                    f"{self._faults.name(i)} is in the middle of a fragment (an interrupted "
                    "sample()); its state can be saved only between iterations"
                )
        meta["runners"] = [
            None if i in dropped else r.get_state() for i, r in enumerate(self._runners)
        ]
        return meta

    def check_state(self, state: dict[str, Any]) -> list[Any] | None:
        """Raises ``EnvStateError`` unless ``get_state`` output ``state`` fits these runners
        (changing nothing); returns each runner's checked arrays (None: no env state saved)."""
        self._faults.check_state(state, EnvStateError)
        runners = state["runners"]
        if runners is None:
            return None
        self._check_resting("restored")
        if len(runners) != len(self._runners):
            raise EnvStateError(
                f"the saved state has {len(runners)} env runner(s); this run has "
                f"{len(self._runners)}"
            )
        if any(r.busy for r in self._runners):
            raise EnvStateError("env runners are stepping; restore between iterations")
        try:
            return [
                None if s is None else self._runners[i].check_state(s)
                for i, s in enumerate(runners)
            ]
        except EnvStateError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
            raise EnvStateMalformed(
                f"the saved runner state is malformed ({type(e).__name__})"
            ) from None

    def set_state(self, state: dict[str, Any], checked: list[Any] | None = None) -> None:
        """Puts ``get_state``'s output back (same number of runners and envs). Everything is
        checked before anything changes (``checked``: ``check_state``'s result, when the caller
        has checked already); runners dropped in the saved run are dropped again."""
        runners = state["runners"]
        if checked is None:
            checked = self.check_state(state)
        if runners is not None and checked is not None:
            for i, (s, arrays) in enumerate(zip(runners, checked, strict=True)):
                if s is not None:
                    self._runners[i].set_state(s, arrays)
        for i, why in self._faults.newly_dropped(state):
            self._drop(i, why)
        self._faults.num_restarts = int(state.get("num_restarts", 0))


__all__ = ["GroupState"]
