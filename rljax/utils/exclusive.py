"""One thread at a time in an object's long operations (an algorithm's ``train()`` and saves)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from rljax.utils.errors import AlgorithmBusyError


class ExclusiveUse:
    """Runs one operation at a time; one asked for while another thread runs one raises
    ``AlgorithmBusyError`` at once (no waiting).

    ``train()`` runs in one thread at a time, and a save never during another thread's
    ``train()`` (whose updates donate the state's buffers).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: int | None = None
        self._what = ""

    @contextlib.contextmanager
    def hold(self, what: str, owner: str, reentrant: bool = False) -> Iterator[None]:
        """Runs ``what`` (``train()``, a save) of ``owner`` (its class name, for the error)
        with no other thread in one; ``reentrant``: also inside this thread's own operation
        (a save from a callback of ``train()``)."""
        me = threading.get_ident()
        if reentrant and self._thread == me:
            yield
            return
        if not self._lock.acquire(blocking=False):
            where = "this thread" if self._thread == me else "another thread"
            raise AlgorithmBusyError(
                f"{what} while {where} runs this {owner}'s {self._what}: one "
                "at a time. Call train() and save_to_path() from one thread (saving from a "
                "callback such as on_train_result works), or build one algorithm per thread"
            )
        self._thread, self._what = me, what
        try:
            yield
        finally:
            self._thread, self._what = None, ""
            self._lock.release()


__all__ = ["ExclusiveUse"]
