"""The exchange between the learner and its runner threads: versioned weights, fragment queues.

The learner publishes weights; each publish that advances counts one version (0 for the first).
Runner slot i numbers its fragments k = 0, 1, ...; fragment k may start only with weights of
version >= k - ``max_policy_lag``. Finished fragments wait in the slot's queue, at most
``max_queued_fragments`` of them, and one more may wait to enter it; the learner takes one
fragment per slot per update. So a fragment is sampled with weights at most ``max_policy_lag``
versions older than the learner's when it takes it, and fewer when the queue is shorter: at most
``max_queued_fragments + 1`` (the fragments finished but not taken, when the runner outpaces the
learner). ``max_policy_lag=0`` is synchronous sampling; 1 lets runners sample the next fragment
while the learner updates (PPO's ``sample_async``).

``max_policy_lag=None`` is free-running (IMPALA/APPO): a runner never waits for weights after the
first, it starts each fragment with the newest it has, and only its full queue
(``max_queued_fragments``, RLlib's requests in flight) holds it back. The learner takes whichever
fragments are ready (``wait_for_any``), so a slow runner delays no one; V-trace corrects for the
lag, which is unbounded in versions and reported instead.

Nothing here knows runners, envs or algorithms: the runner threads call ``wait_for_weights`` and
``put`` (with a callback saying whether they are still wanted), the learner ``publish``,
``deliver`` and ``take``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

F = TypeVar("F")

# What a runner thread waits for: newer weights, or room in its queue.
WAITING_FOR_WEIGHTS = "weights"
WAITING_FOR_QUEUE = "queue"


class VersionedQueues(Generic[F]):
    """Versioned weights for ``num_slots`` runner slots and one bounded queue of fragments each.

    Args:
      num_slots: Runner slots (one queue each).
      max_policy_lag: Fragment k of a slot starts with weights of version >= k - max_policy_lag.
        0: the learner's weights reach the runners only at its next ``deliver`` (``sample``), so
        every runner rests at a fragment boundary in between. None: free-running (see above).
      max_queued_fragments: Finished fragments a slot's queue holds (the bound on requests in
        flight); default ``max(1, max_policy_lag - 1)``, which lets runners use the whole lag
        (1 when free-running).
      poll_s: How often waiting threads look at whether they are still wanted.
    """

    def __init__(
        self,
        num_slots: int,
        max_policy_lag: int | None,
        max_queued_fragments: int | None = None,
        poll_s: float = 0.05,
    ):
        if max_policy_lag is not None and max_policy_lag < 0:
            raise ValueError(f"max_policy_lag must be >= 0 or None; got {max_policy_lag}")
        default_size = 1 if max_policy_lag is None else max(1, max_policy_lag - 1)
        size = default_size if max_queued_fragments is None else max_queued_fragments
        if size < 1:
            raise ValueError(f"max_queued_fragments must be >= 1; got {size}")
        self.max_policy_lag = max_policy_lag
        self.max_queued_fragments = size
        self.poll_s = poll_s
        self._queues: list[queue.Queue[F]] = [queue.Queue(maxsize=size) for _ in range(num_slots)]
        self._cond = threading.Condition()
        self._arrived = threading.Condition()  # notified when a fragment enters any queue
        self._params: Any = None
        self._version = -1
        self._pending: Any = None  # weights published but not yet delivered
        self._pending_advance = 0  # versions the pending weights advance by
        self._sampled_version = -1  # the version when the learner last took fragments
        self._waiting: dict[int, tuple[str, int]] = {}  # slot -> (what it waits for, version)
        self._stop = threading.Event()

    @property
    def version(self) -> int:
        """The version of the weights the runners have (-1 before the first delivery)."""
        return self._version

    @property
    def params(self) -> Any:
        """The newest weights published (None before the first)."""
        return self._pending if self._pending is not None else self._params

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def free_running(self) -> bool:
        return self.max_policy_lag is None

    def publish(self, params: Any, advance: bool = True, steps: int = 1) -> int:
        """Stores new weights; returns the version they will have (0 for the first).

        ``advance=False`` swaps the weights without counting a new version (weights set or
        restored between updates). ``steps``: versions the weights advance by, when free-running
        (a learner that broadcasts every n updates counts its versions in updates); 1 otherwise,
        where fragment numbers follow versions. With ``max_policy_lag`` 0 they are delivered at
        the learner's next ``deliver``, otherwise at once.
        """
        if steps < 1 or (steps != 1 and not self.free_running):
            raise ValueError(
                f"steps={steps}: weights advance by 1 version per publish, or by more only "
                "when free-running (max_policy_lag=None)"
            )
        with self._cond:
            self._pending = params
            if advance and self.free_running:
                self._pending_advance += steps
            elif advance:  # undelivered weights replaced: still one version on
                self._pending_advance = 1
            version = self._next_version()
        if self.max_policy_lag != 0:
            self.deliver()
        return version

    def _next_version(self) -> int:
        if self._version < 0:
            return 0
        return self._version + int(self._pending_advance)

    def deliver(self) -> None:
        """Hands the pending weights (if any) to the runners, waking those waiting for them."""
        with self._cond:
            if self._pending is not None:
                self._params = self._pending
                self._version = self._next_version()
                self._pending, self._pending_advance = None, 0
                self._cond.notify_all()

    def check_can_take(self) -> None:
        """Raises when taking fragments now could only wait in vain: synchronous sampling
        (``max_policy_lag=0``) with no new weights since the last take."""
        if self.max_policy_lag == 0 and self._version == self._sampled_version:
            raise RuntimeError(
                "synchronous sampling (max_policy_lag=0): publish() new weights before the next "
                "sample()"
            )

    def taken(self) -> None:
        """Notes that the learner took one fragment of every slot with the current weights."""
        self._sampled_version = self._version

    def wait_for_weights(
        self, slot: int, fragment: int, wanted: Callable[[], bool]
    ) -> tuple[Any, int] | None:
        """Waits until fragment number ``fragment`` of ``slot`` may start; returns the weights
        and their version, or None once ``wanted()`` is False."""
        # Free-running: any weights will do once there are some.
        need = 0 if self.max_policy_lag is None else fragment - self.max_policy_lag
        with self._cond:
            self._waiting[slot] = (WAITING_FOR_WEIGHTS, need)
            try:
                while self._version < need and wanted():
                    self._cond.wait(self.poll_s)
                params, version = self._params, self._version
            finally:
                self._waiting.pop(slot, None)
        return (params, version) if wanted() else None

    def put(self, slot: int, fragment: F, wanted: Callable[[], bool]) -> bool:
        """Queues a finished fragment, waiting for room; False once ``wanted()`` is False."""
        with self._cond:
            self._waiting[slot] = (WAITING_FOR_QUEUE, 0)
        try:
            while wanted():
                try:
                    self._queues[slot].put(fragment, timeout=self.poll_s)
                except queue.Full:
                    continue
                with self._arrived:
                    self._arrived.notify_all()
                return True
            return False
        finally:
            with self._cond:
                self._waiting.pop(slot, None)

    def stalled(self, slot: int) -> bool:
        """Whether the runner of ``slot`` waits and cannot go on until the learner acts (publishes
        newer weights or takes a fragment): it has run as far ahead as the bounds allow."""
        with self._cond:
            what, need = self._waiting.get(slot, ("", 0))
            if what == WAITING_FOR_WEIGHTS:
                return self._version < need
            return what == WAITING_FOR_QUEUE and self._queues[slot].full()

    def take_nowait(self, slot: int) -> F | None:
        try:
            return self._queues[slot].get_nowait()
        except queue.Empty:
            return None

    def take(self, slot: int, timeout_s: float) -> F | None:
        """The slot's next fragment, or None when none came within ``timeout_s``."""
        try:
            return self._queues[slot].get(timeout=timeout_s)
        except queue.Empty:
            return None

    def wait_for_any(self, timeout_s: float, slots: list[int] | None = None) -> bool:
        """Waits until the queue of one of ``slots`` (default: all) holds a fragment, at most
        ``timeout_s``; returns whether one does. Only the slots the learner still takes from
        count: a fragment left in a dropped slot's queue must not wake it for ever."""
        queues = self._queues if slots is None else [self._queues[i] for i in slots]
        with self._arrived:
            if not any(q.qsize() for q in queues):
                self._arrived.wait(timeout_s)
            return any(q.qsize() for q in queues)

    def discard(self, slot: int) -> None:
        """Drops a fragment waiting in the slot's queue (its runner was replaced)."""
        self.take_nowait(slot)

    def stop(self) -> None:
        """Wakes every waiting runner thread for good (their ``wanted()`` should see it)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()


__all__ = ["VersionedQueues"]
