"""Starting env worker processes: without re-running the user's script, with SIGINT blocked."""

from __future__ import annotations

import contextlib
import signal
import sys
import types


@contextlib.contextmanager
def main_hidden():
    """Starts spawned workers without re-running the user's ``__main__`` script.

    Worker processes are spawned, never forked (JAX's threads do not survive a fork). A spawned
    child normally re-imports the parent's ``__main__`` file, which would re-run a training script
    that has no ``if __name__ == "__main__"`` guard. The env creators travel by value through
    cloudpickle instead, so the child does not need the script: hide it while the workers start.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


@contextlib.contextmanager
def sigint_blocked():
    """Worker processes started inside are born with SIGINT blocked: the starting thread's signal
    mask survives the spawn's fork and exec.

    Ctrl-C in a terminal sends SIGINT to every process of the foreground group. The training
    process decides what happens then (finish the iteration and save, or stop) and closes its
    workers; a worker must not die in the middle of a step or print a traceback of its own. A
    SIGINT for this process is not lost meanwhile: another thread takes it, or it waits until
    the mask is restored.
    """
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not on Linux
        yield
        return
    # The first spawn starts multiprocessing's resource tracker, which unblocks SIGINT in this
    # thread when it is up: start it before blocking.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


__all__ = ["main_hidden", "sigint_blocked"]
