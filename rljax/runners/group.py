"""The group of runner threads that feeds the learner.

Three parts, composed here: ``VersionedQueues`` (runners/versions.py: versioned weights, the lag
bound, one bounded fragment queue per runner), ``FaultPolicy`` (runners/faults.py: when to
restart, drop or give up) and ``GroupState`` (runners/group_state.py: the runners' state as
plain data). The group itself runs the threads: each loops over its runner's fragments, and the
learner's ``sample`` gathers one fragment per runner, replacing failed runners as the policy
says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp

from rljax.runners.acting import Transition
from rljax.runners.faults import EnvBugError, EnvRunnerError, FaultPolicy
from rljax.runners.group_state import GroupState
from rljax.runners.versions import VersionedQueues
from rljax.utils.errors import CallbackError

if TYPE_CHECKING:
    from rljax.runners.fused import FusedRunner
    from rljax.runners.host import HostRunner

    Runner = HostRunner | FusedRunner


@dataclasses.dataclass
class Fragment:
    """One runner's fragment and how it was made."""

    traj: Transition
    version: int
    sample_s: float
    wait_s: float  # time the runner waited for fresh weights or a free queue slot
    stats: Any = None  # the env's statistics of this fragment (HostRunner.last_stats)
    generation: int = 0  # of the runner slot's thread that made it
    index: int = 0  # the runner's fragment number k (sampled with weights >= k - max lag)
    # The env steps that returned in the last runner's part of it (a fragment resumed after a
    # restart: the replacement's part), and the rows used (fewer when its env raised: the rows
    # written and the cut rows after them, HostRunner._cut).
    num_steps: int = 0
    num_rows: int = 0
    error: str | None = None  # that runner's env raised: rows from num_rows on are empty
    exception: BaseException | None = None  # what it raised
    runner_steps: int = 0  # env steps that runner took since it was built (HostRunner's)
    infos: Any = None  # the env's infos per row and column (HostRunner.last_infos), or None


def _joined(head: Fragment, tail: Fragment) -> Fragment:
    """A fragment begun by a runner whose env raised (``head``) and finished by its replacement
    (``tail``, which wrote into the same buffer)."""
    stats = tail.stats
    if head.stats is not None:
        # Env statistics are tuples of additive parts (MultiAgentVectorEnv.drain_stats:
        # finished episodes, env steps).
        stats = (
            head.stats
            if stats is None
            else tuple(a + b for a, b in zip(head.stats, stats, strict=True))
        )
    return dataclasses.replace(
        tail,
        version=min(head.version, tail.version),
        sample_s=head.sample_s + tail.sample_s,
        wait_s=head.wait_s + tail.wait_s,
        stats=stats,
    )


@dataclasses.dataclass
class GroupSample:
    """Fragments of every runner for one update, joined along the sub-env axis."""

    traj: Transition
    versions: list[int]
    sample_s: list[float]
    runner_wait_s: list[float]
    learner_wait_s: float
    stats: list[Any] = dataclasses.field(default_factory=list)  # one per fragment
    # The runner slot of each fragment (``sample``: every slot once, in order).
    slots: list[int] = dataclasses.field(default_factory=list)
    # The env's infos per row and column of ``traj`` ({} where a runner kept none), or None.
    infos: Any = None


class RunnerGroup:
    """``num_env_runners`` runner threads feeding the learner through bounded queues.

    Fragment k of a runner is sampled with weights of version >= k - ``max_policy_lag``: 0 is
    synchronous sampling (every update sees samples of the current policy), 1 lets runners
    sample the next fragment while the learner updates; ``max_queued_fragments`` bounds the
    finished fragments a runner may hold (``VersionedQueues``). The learner takes one fragment
    of every runner per update (``sample``).

    ``max_policy_lag=None`` is free-running, for IMPALA/APPO-style learners: runners sample
    continuously with the newest weights they have, held back only by their full queues, and
    the learner takes the first ``n`` fragments ready from any runner (``sample_any``), so a
    slow runner (a straggler) delays no one.

    With ``make_runner`` and ``max_restarts > 0``, a failed runner is replaced by a new one with
    fresh envs, in its place and thread, and sampling goes on. When its env raised in ``step``,
    the rows it wrote before are kept (real transitions; its unfinished episodes are cut there as
    by a time limit and never reported: ``HostRunner._cut``), and the replacement writes the rest
    of the same fragment: the batch loses about two rows per sub-env per failure (the cut row and
    the replacement's first), not the fragment. When a runner failed otherwise (an exception
    outside its env's ``step``) or returned nothing within ``sample(timeout_s)`` (a hung env),
    its fragment is lost and the replacement starts a new one. A hung thread cannot be stopped;
    it is abandoned (a daemon), and whatever it might still return is ignored (each thread has a
    generation number). A replacement must be built (its envs made and reset: the health probe)
    within ``probe_timeout_s``, or the attempt counts as failed and is abandoned.

    A slot whose runners keep failing without delivering one env step is given up on after
    ``MAX_FRESH_FAILURES`` restarts in a row (``FaultPolicy``): an env that fails every time is
    not restarted until ``max_restarts`` is used up. A runner that delivered steps since its last
    restart starts the count again, so an env that fails now and then is restarted each time.

    ``ignore_failures``: a runner that failed and cannot be restarted is dropped instead of
    stopping the run. Its columns of every later batch are empty rows (``valid`` False), so the
    batch keeps its shape (nothing recompiles) and the learner trains on the healthy runners'
    samples. When every runner is gone, ``sample`` raises.

    A runner whose env raises the same exception from the same place after the same number of
    env steps since it was built ``REPEATS_OF_A_BUG`` times in a row has a bug in its env, which
    restarting cannot help: ``sample`` raises ``EnvBugError`` with the env's exception as its
    cause (``FaultPolicy.repeated``), and so it does at once when a sub-env's restarts found
    such a bug (``RestartingEnv``). Repeats before that are logged one line each.

    ``local_runner``: the one runner is the driver's own (``num_env_runners=0``), as messages
    name it.
    """

    def __init__(
        self,
        runners: list[Runner],
        length: int,
        max_policy_lag: int | None,
        poll_s: float = 0.05,
        make_runner: Callable[[int], Runner] | None = None,
        max_restarts: int = 0,
        ignore_failures: bool = False,
        probe_timeout_s: float = 30.0,
        max_queued_fragments: int | None = None,
        streams_per_runner: int | None = None,
        local_runner: bool = False,
    ):
        """``streams_per_runner``: the stream ids (``env_id``) each runner uses, from
        ``i * streams_per_runner`` on (``sample_any`` renumbers the streams of a batch's
        fragments apart with it); by default the runners' sub-envs."""
        self.runners = runners
        self.replaced: list[int] = []  # the slot of each replacement built, in order
        self._streams_per_runner = streams_per_runner
        self.length = length
        self.max_policy_lag = max_policy_lag
        self._poll_s = poll_s
        self._make_runner = make_runner
        self.exchange: VersionedQueues[Fragment] = VersionedQueues(
            len(runners), max_policy_lag, max_queued_fragments, poll_s
        )
        self.faults = FaultPolicy(
            len(runners),
            max_restarts if make_runner is not None else 0,
            ignore_failures,
            probe_timeout_s,
            local=local_runner,
        )
        self.state_io = GroupState(self.runners, self.faults, max_policy_lag == 0, self._drop)
        self._errors: dict[int, str] = {}
        self._exceptions: dict[int, tuple[BaseException, int]] = {}  # and the runner's steps
        self._threads: list[threading.Thread] = []
        self._generation = [0] * len(runners)
        # When each slot last delivered a fragment (or its thread started): sample_any's hang
        # check. And the slot sample_any looks at first, so that no runner is always first.
        self._last_delivery = [0.0] * len(runners)
        self._next_slot = 0
        self._retired: list[Runner] = []  # replaced runners (closed when replaced)

    # ------------------------------------------------------------------ what callers read
    @property
    def params(self) -> Any:
        """The newest weights published (None before the first)."""
        return self.exchange.params

    @property
    def version(self) -> int:
        return self.exchange.version

    @property
    def num_healthy(self) -> int:
        return self.faults.num_healthy

    @property
    def num_restarts(self) -> int:
        return self.faults.num_restarts

    @property
    def dropped(self) -> dict[int, str]:
        """Runner index -> why it was dropped."""
        return self.faults.dropped

    @property
    def num_sub_env_restarts(self) -> int:
        # Each runner once: a dropped runner is both retired and still in ``runners``.
        unique = {id(r): r for r in (*self.runners, *self._retired)}
        return sum(r.num_sub_env_restarts for r in unique.values())

    # ------------------------------------------------------------------ weights
    def publish(self, params: Any, advance: bool = True, steps: int = 1) -> int:
        """Hands new weights to the runners; returns their version (0 for the first).

        ``advance=False`` swaps the weights without counting a new version (weights set or
        restored between updates): the runners' on-policy schedule, one version per consumed
        fragment, stays as it was, and the next fragment a runner starts uses them. ``steps``:
        free-running only, the versions (updates) the weights advance by.

        With ``max_policy_lag=0`` the runners only get the weights at the next ``sample()``: a
        runner cannot start its next fragment before them anyway, and this way every runner
        rests at a fragment boundary between ``sample()`` calls, where its state can be saved or
        restored (``get_state`` / ``set_state``). The first publish starts the runner threads.
        """
        version = self.exchange.publish(params, advance, steps)
        if self.max_policy_lag != 0:
            self._start_threads()
        return version

    def _start_threads(self) -> None:
        if not self._threads:
            self.exchange.deliver()
            for i in range(len(self.runners)):
                self._threads.append(self._start(i))

    # ------------------------------------------------------------------ state
    def get_state(self, include_envs: bool = True) -> dict[str, Any]:
        """``GroupState.get_state``: only with ``max_policy_lag=0``, between ``sample()`` calls."""
        return self.state_io.get_state(include_envs)

    def check_state(self, state: dict[str, Any]) -> list[Any] | None:
        """``GroupState.check_state``: raises ``EnvStateError`` unless ``state`` fits."""
        return self.state_io.check_state(state)

    def set_state(self, state: dict[str, Any], checked: list[Any] | None = None) -> None:
        """``GroupState.set_state``: everything checked before anything changes."""
        self.state_io.set_state(state, checked)

    # ------------------------------------------------------------------ threads
    def _start(
        self, i: int, start: int | None = None, resume: Fragment | None = None
    ) -> threading.Thread:
        # A replacement starts at the learner's current version, so that it keeps the lag rule
        # (fragment k waits for version k - max_policy_lag) instead of running ahead; one that
        # takes over from a runner whose env raised goes on with that runner's fragment numbers
        # (``start``), first finishing its cut fragment (``resume``).
        k = max(0, self.version) if start is None else start
        self._last_delivery[i] = time.perf_counter()
        t = threading.Thread(
            target=self._loop,
            args=(i, self._generation[i], k, resume),
            name=f"rljax-env-runner-{i + 1}",
            daemon=True,
        )
        t.start()
        return t

    def _loop(
        self, i: int, generation: int, start: int = 0, resume: Fragment | None = None
    ) -> None:
        runner = self.runners[i]
        k = start

        def current() -> bool:
            return self._generation[i] == generation and not self.exchange.stopped

        try:
            while current():
                t0 = time.perf_counter()
                weights = self.exchange.wait_for_weights(i, k, current)
                if weights is None:
                    return
                params, version = weights
                t1 = time.perf_counter()
                if resume is None:
                    traj = runner.sample(params, self.length)
                else:  # the rest of the fragment whose runner's env raised
                    traj = runner.sample(params, self.length, resume.traj, resume.num_rows)
                jax.block_until_ready(traj)
                t2 = time.perf_counter()
                fragment = Fragment(
                    traj,
                    version,
                    t2 - t1,
                    t1 - t0,
                    runner.last_stats,
                    generation,
                    index=k,
                    num_steps=runner.last_num_steps,
                    num_rows=runner.last_num_rows,
                    error=runner.error,
                    exception=getattr(runner, "exception", None),
                    runner_steps=getattr(runner, "num_env_steps", 0),
                    infos=getattr(runner, "last_infos", None),
                )
                if resume is not None:
                    fragment, resume = _joined(resume, fragment), None
                self.exchange.put(i, fragment, current)
                fragment.wait_s += time.perf_counter() - t2
                if runner.error is not None:
                    return  # spent: the learner replaces it when it takes this fragment
                k += 1
        except BaseException as e:  # reported to the learner, which raises it with the runner's id
            if self._generation[i] == generation:
                self._exceptions[i] = (e, getattr(runner, "num_env_steps", 0))
                self._errors[i] = traceback.format_exc()

    # ------------------------------------------------------------------ failures
    def _raised(self, i: int) -> dict[str, Any]:
        """``_replace``'s ``error`` and ``steps`` for runner ``i``'s thread (none if it raised
        nothing)."""
        if i not in self._exceptions:
            return {}
        error, steps = self._exceptions[i]
        return {"error": error, "steps": steps}

    def _failure(self, i: int) -> str | None:
        if i in self._errors:
            return f"failed:\n{self._errors[i]}"
        if self._threads and not self._threads[i].is_alive() and not self.exchange.stopped:
            return "stopped without a result"
        return None

    def _replace(
        self,
        i: int,
        why: str,
        close_on_error: bool = True,
        start: int | None = None,
        resume: Fragment | None = None,
        error: BaseException | None = None,
        steps: int = 0,
    ) -> None:
        """Replaces runner ``i`` when the fault policy allows (``start``, ``resume``: see
        ``_start``), or drops it, or raises ``EnvRunnerError`` (closing the group first, unless
        ``close_on_error`` is False: a hung thread would delay the error). ``error``: what the
        runner raised, after ``steps`` env steps since it was built; a bug in the env (an
        ``EnvBugError``, or the same failure ``REPEATS_OF_A_BUG`` times in a row) is raised as
        ``EnvBugError`` instead, never dropped; a ``CallbackError`` (a user's episode hook, run
        live in the runner) is raised as it is, with no restart."""
        line = None
        if isinstance(error, CallbackError):  # a user's live episode hook: not the env's fault
            if close_on_error:
                self.close()
            raise error
        if error is not None:
            bug = None if isinstance(error, EnvBugError) else self.faults.repeated(i, error, steps)
            if bug is not None or isinstance(error, EnvBugError):
                if close_on_error:
                    self.close()
                self._raise_bug(error, bug)
            line = self.faults.repeat_line(i)
        while self.faults.try_restart(i, why, line):
            line = None
            self._retire(i)
            self._errors.pop(i, None)
            self._exceptions.pop(i, None)
            runner, failure = self._probe(i)
            if runner is None:
                why = failure
                continue
            self.runners[i] = runner
            self.replaced.append(i)
            self._threads[i] = self._start(i, start, resume)
            return
        message = self.faults.give_up(i, why)
        if message is None:  # dropped: the run goes on without it
            self._retire(i)  # it stays in ``runners``: its shapes give the empty rows
            return
        if close_on_error:
            self.close()
        raise EnvRunnerError(message)

    @staticmethod
    def _raise_bug(error: BaseException, message: str | None) -> None:
        """Raises the ``EnvBugError`` of a bug in an env: ``message`` (the group found it, and
        ``error`` is the env's exception), or ``error`` itself (a sub-env's restarts found it);
        one that lost its cause in a worker process carries the env's traceback as text."""
        if message is not None:
            raise EnvBugError(message) from error
        assert isinstance(error, EnvBugError)
        if error.__cause__ is None and error.env_traceback:
            raise EnvBugError(
                f"{error.message}\nThe env's traceback, in its worker process:\n"
                f"{error.env_traceback}"
            ) from None
        raise error

    def _probe(self, i: int) -> tuple[Runner | None, str]:
        """Builds a replacement for runner ``i``: ``(runner, "")``, or ``(None, why)`` when
        building raised or did not finish within ``probe_timeout_s``. A bug found in its envs'
        reset (``EnvBugError``) is raised."""
        bugs: list[EnvBugError] = []

        def make() -> Runner:
            try:
                return self._make_runner(i)  # type: ignore[misc]
            except EnvBugError as e:
                bugs.append(e)
                raise

        runner, error = build_within(
            make, self.faults.probe_timeout_s, f"rljax-env-runner-{i + 1}-probe"
        )
        if bugs:
            self.close()
            self._raise_bug(bugs[0], None)
        if runner is None:
            return None, f"could not be rebuilt: {error}"
        return runner, ""

    def _drop(self, i: int, why: str) -> None:
        """Gives up on runner ``i`` for the rest of the run (``ignore_failures``)."""
        self.faults.drop(i, why)
        self._retire(i)  # it stays in ``runners``: its shapes give the empty rows

    def _retire(self, i: int) -> None:
        """Stops using slot ``i``'s current runner (once): whatever its thread still delivers
        is ignored, a fragment it left is discarded, and it is closed in the background with its
        worker processes terminated (a hung env may never return)."""
        old = self.runners[i]
        if any(r is old for r in self._retired):
            return
        self._retired.append(old)
        # Its exception's traceback holds the frames of its last sample (the fragment's buffer
        # and weights among their locals): a retired runner, kept for its counters, drops it.
        if getattr(old, "exception", None) is not None:
            old.exception = None  # type: ignore[union-attr]
        self._generation[i] += 1
        self.exchange.discard(i)
        threading.Thread(target=_close_quietly, args=(old, True), daemon=True).start()

    # ------------------------------------------------------------------ the learner's side
    def _take(self, i: int, timeout_s: float | None) -> Fragment | None:
        """Runner ``i``'s next fragment, replacing the runner as often as it fails (None: it
        was dropped and left no rows)."""
        started = time.perf_counter()
        while i not in self.dropped:
            fragment = self.exchange.take_nowait(i)  # a fragment delivered before a failure
            if fragment is None and (why := self._failure(i)) is not None:
                # A thread may have put its fragment just before it ended: look again, or the
                # replacement would discard it.
                fragment = self.exchange.take_nowait(i)
                if fragment is None:
                    self._replace(i, why, **self._raised(i))
                    started = time.perf_counter()
                    continue
            if fragment is None:
                fragment = self.exchange.take(i, self._poll_s)
                if fragment is None:
                    if timeout_s is not None and time.perf_counter() - started > timeout_s:
                        self._replace(
                            i,
                            f"returned no sample within {timeout_s} s (sample_timeout_s)",
                            close_on_error=False,
                        )
                        started = time.perf_counter()
                    continue
            accepted = self._accept(i, fragment)
            if accepted is not None:
                return accepted
            started = time.perf_counter()
        return None

    def _accept(self, i: int, fragment: Fragment) -> Fragment | None:
        """Runner ``i``'s fragment as the learner may use it, or None: it came from a runner
        replaced meanwhile, or its env raised part-way and the replacement finishes it (its
        rows come later, joined)."""
        if fragment.generation != self._generation[i]:
            return None  # the late fragment of a runner replaced meanwhile
        self._last_delivery[i] = time.perf_counter()
        if fragment.num_steps > 0:
            self.faults.progressed(i)
        if fragment.error is None:
            return fragment
        # Its env raised: the rows so far are kept. The replacement finishes this fragment
        # (or, if it was complete, starts the next one).
        complete = fragment.num_rows == self.length
        self._replace(
            i,
            f"failed after {fragment.num_steps} env step(s) of its fragment:\n{fragment.error}",
            start=fragment.index + 1 if complete else fragment.index,
            resume=None if complete else fragment,
            error=fragment.exception,
            steps=fragment.runner_steps,
        )
        if complete or i in self.dropped:  # a dropped runner's real rows are kept too
            return fragment
        return None

    def _stream_ids_per_runner(self) -> int:
        if self._streams_per_runner is None:
            self._streams_per_runner = max(
                getattr(r.env, "num_slots", r.spec.num_envs) for r in self.runners
            )
        return self._streams_per_runner

    def _poll(self, i: int, timeout_s: float | None) -> Fragment | None:
        """Runner ``i``'s fragment if one is ready, without waiting; replaces the runner when it
        failed, or delivered nothing for ``timeout_s`` (free-running: it is never held back
        then, its queue being empty)."""
        fragment = self.exchange.take_nowait(i)
        if fragment is None and (why := self._failure(i)) is not None:
            fragment = self.exchange.take_nowait(i)  # put just before its thread ended
            if fragment is None:
                self._replace(i, why, **self._raised(i))
                return None
        if fragment is None:
            idle = time.perf_counter() - self._last_delivery[i]
            if timeout_s is not None and idle > timeout_s:
                self._replace(
                    i,
                    f"returned no sample within {timeout_s} s (sample_timeout_s)",
                    close_on_error=False,
                )
            return None
        return self._accept(i, fragment)

    def _empty_fragment(self, i: int) -> Fragment:
        """The rows of a dropped runner: its fragment's shape, every row invalid."""
        traj = self.runners[i].empty_fragment(self.length)
        return Fragment(traj, max(0, self.version), 0.0, 0.0, None)

    def sample(self, timeout_s: float | None = None) -> GroupSample:
        """One fragment from every runner. A failed or timed-out runner is restarted when
        allowed; otherwise this raises ``EnvRunnerError``."""
        self.exchange.deliver()
        if not self._threads:
            if self.exchange.version < 0:
                raise RuntimeError("publish() the first weights before sampling")
            self._start_threads()
        self.exchange.check_can_take()
        t0 = time.perf_counter()
        fragments: list[Fragment] = []
        for i in range(len(self.runners)):
            taken = self._take(i, timeout_s)
            # A dropped runner's rows are empty (valid False): the batch keeps its shape.
            fragments.append(taken if taken is not None else self._empty_fragment(i))
        self.exchange.taken()
        return _group_sample(fragments, list(range(len(fragments))), time.perf_counter() - t0)

    def sample_any(self, num_fragments: int, timeout_s: float | None = None) -> GroupSample:
        """The first ``num_fragments`` fragments ready, from any runners (free-running only).

        Slots are looked at in turn, starting after the one last taken from, so runners that
        keep pace contribute alike and a slow one simply contributes less. A runner that failed,
        or delivered nothing for ``timeout_s``, is replaced (or dropped, or the run stops) as
        ``sample`` does. Each fragment's streams are renumbered apart (``env_id`` plus its place
        in the batch times the group's streams), so two fragments of one runner are two sets of
        streams, never one.
        """
        if not self.exchange.free_running:
            raise RuntimeError("sample_any() needs a free-running group (max_policy_lag=None)")
        if num_fragments < 1:
            raise ValueError(f"num_fragments must be >= 1; got {num_fragments}")
        if not self._threads:
            if self.exchange.version < 0:
                raise RuntimeError("publish() the first weights before sampling")
            self._start_threads()
        t0 = time.perf_counter()
        n = len(self.runners)
        fragments: list[Fragment] = []
        slots: list[int] = []
        while len(fragments) < num_fragments:
            if self.exchange.stopped:
                raise RuntimeError("the runner group was closed while sampling")
            got = False
            for j in range(n):
                i = (self._next_slot + j) % n
                if i in self.dropped:
                    continue
                fragment = self._poll(i, timeout_s)
                if fragment is not None:
                    fragments.append(fragment)
                    slots.append(i)
                    got = True
                    if len(fragments) == num_fragments:
                        self._next_slot = (i + 1) % n
                        break
            live = [i for i in range(n) if i not in self.dropped]
            if not live:
                raise EnvRunnerError("every env runner was dropped; no samples are left")
            if not got:
                self.exchange.wait_for_any(self._poll_s, live)
        stride = n * self._stream_ids_per_runner()
        for place, f in enumerate(fragments):
            if place:
                f.traj = f.traj._replace(env_id=f.traj.env_id + place * stride)
        return _group_sample(fragments, slots, time.perf_counter() - t0)

    def stalled(self, i: int) -> bool:
        """Whether runner ``i`` has run as far ahead as the lag and queue bounds allow."""
        return self.exchange.stalled(i)

    def close(self) -> None:
        self.exchange.stop()
        for i, t in enumerate(self._threads):
            if i not in self.dropped:  # a dropped runner's thread may hang; it was closed
                t.join(timeout=10)
        for i, r in enumerate(self.runners):
            if i not in self.dropped:
                _close_quietly(r)  # closing after a failure must not hide it


def _group_sample(
    fragments: list[Fragment], slots: list[int], learner_wait_s: float
) -> GroupSample:
    """The fragments joined along the sub-env axis, with what is known of each."""
    if len(fragments) == 1:
        traj = fragments[0].traj
    else:
        traj = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *[f.traj for f in fragments])
    return GroupSample(
        traj=traj,
        versions=[f.version for f in fragments],
        sample_s=[f.sample_s for f in fragments],
        runner_wait_s=[f.wait_s for f in fragments],
        learner_wait_s=learner_wait_s,
        stats=[f.stats for f in fragments],
        slots=slots,
        infos=_joined_infos(fragments),
    )


def _joined_infos(fragments: list[Fragment]) -> list[list[dict[str, Any]]] | None:
    """The fragments' info rows side by side, as their trajectories are joined."""
    if all(f.infos is None for f in fragments):
        return None
    rows = int(fragments[0].traj.env_id.shape[0])
    parts = [
        f.infos if f.infos is not None else [[{}] * int(f.traj.env_id.shape[1])] * rows
        for f in fragments
    ]
    return [[info for part in parts for info in part[t]] for t in range(rows)]


def build_within(
    make: Callable[[], Runner], timeout_s: float, name: str
) -> tuple[Runner | None, str]:
    """Runs ``make`` (build a runner: make and reset its envs, the health probe) in a helper
    thread. Returns ``(runner, "")``, or ``(None, why)`` when it raised or did not finish within
    ``timeout_s``; a runner that finishes after that is closed, never used."""
    lock = threading.Lock()
    done = threading.Event()
    box: dict[str, Any] = {}

    def build() -> None:
        try:
            runner, error = make(), ""
        except BaseException:  # noqa: BLE001 (returned as the failure, SystemExit too)
            runner, error = None, traceback.format_exc()
        with lock:  # the caller either takes the result or has abandoned it
            if box.get("abandoned"):
                if runner is not None:
                    _close_quietly(runner, force=True)
                return
            box["runner"], box["error"] = runner, error
            done.set()

    threading.Thread(target=build, name=name, daemon=True).start()
    done.wait(timeout_s)
    with lock:
        if not done.is_set():
            box["abandoned"] = True
            return None, (
                f"building and resetting its envs (the health probe) took longer than "
                f"{timeout_s} s (env_runner_health_probe_timeout_s)"
            )
    if box["runner"] is None:
        return None, box["error"]
    return box["runner"], ""


def _close_quietly(runner: Runner, force: bool = False) -> None:
    with contextlib.suppress(Exception):
        runner.close(force=force)


__all__ = ["Fragment", "GroupSample", "RunnerGroup", "build_within"]
