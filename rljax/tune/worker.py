"""Trials in worker processes: what lets ``Tuner`` run several batches of trials at once.

A batch (one trial, or trials trained as one population) runs in a process of its own started
with ``spawn`` (a forked JAX process can deadlock). The ``Tuner`` keeps every decision: it
drives the worker through a proxy with the methods it calls on a local algorithm or
``Population`` (``train``, ``save_to_path`` of a member, ``stop_trial``, ``stop``), each a
request over a pipe answered by the worker, so stop criteria, searchers, schedulers, files and
the table of trials work as they do in this process.

The worker gets its configs and this process's registered envs, modules and mapping functions
through cloudpickle, so envs written in a script or notebook work there too; a batch whose
configs cannot be pickled runs in this process instead (``picklable_payload``). The worker
ignores Ctrl-C: the ``Tuner`` stops it.

Liveness: a worker sends a heartbeat every ``HEARTBEAT_INTERVAL_S`` from a thread of its own,
whatever its main thread is doing (a long compilation or iteration included), and the
``Tuner`` ends a worker it has heard nothing from for ``HEARTBEAT_TIMEOUT_S`` (a process
stopped with SIGSTOP, frozen, or starved): its trial fails with ``WorkerTimeout`` naming the
worker and the timeout, and the other trials go on. An iteration may take any time so long as
the worker is alive. Before its first message a worker gets ``STARTUP_TIMEOUT_S`` (starting a
Python process and importing rljax can take long on a loaded machine).

A worker process is named ``WORKER_NAME``; a script that builds a ``Tuner`` in it (a script
without ``if __name__ == "__main__":``, which the spawned worker imports again) is stopped
there (``refuse_in_worker``) before its ``Tuner`` makes a file, and ``fit()`` in the script's
own process fails with ``MainModuleRerun`` saying to add the guard.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rljax.env.registry import registered
from rljax.utils.errors import ConfigError

_KINDS = ("env", "module_class", "policy_mapping_fn")
# Seconds between a worker's heartbeats, and without any message before the Tuner ends it.
HEARTBEAT_INTERVAL_S = 1.0
HEARTBEAT_TIMEOUT_S = 60.0
STARTUP_TIMEOUT_S = 300.0
WORKER_NAME = "rljax-tune-worker"
# The exit status of a worker that stopped a re-run of the script's Tuner.
_EXIT_MAIN_RERUN = 77
_GUARD_HELP = (
    "the script builds a tune.Tuner when it is imported: a worker process (started with the "
    "spawn method) imports the script again and would run every trial again. Put the code that "
    'builds and fits the Tuner under if __name__ == "__main__":'
)


class WorkerTimeout(RuntimeError):
    """A worker process sent nothing (no answer, no heartbeat) for longer than its timeout: it
    is stopped (SIGSTOP), frozen or starved. Its trial fails; the Tuner ends the process."""


class MainModuleRerun(ConfigError):
    """The script that runs the ``Tuner`` builds one when imported (no
    ``if __name__ == "__main__":`` guard), so its worker processes would run it again."""


def refuse_in_worker() -> None:
    """Called when a ``Tuner`` is built: in a worker process (the script imported again by
    ``spawn``) prints why to stderr and exits with a status the ``Tuner`` recognises, before
    that ``Tuner`` makes any file."""
    if multiprocessing.current_process().name.startswith(WORKER_NAME):
        import sys

        print(f"rljax: error: {_GUARD_HELP}", file=sys.stderr, flush=True)
        raise SystemExit(_EXIT_MAIN_RERUN)


class _Sender:
    """A connection's ``send`` for the worker's two threads (answers and heartbeats), one
    message at a time."""

    def __init__(self, conn: Any):
        self._conn, self._lock = conn, threading.Lock()

    def send(self, message: Any) -> None:
        with self._lock:
            self._conn.send(message)


def _beat(sender: _Sender, interval: float, done: threading.Event) -> None:
    while not done.wait(interval):
        try:
            sender.send(("beat", None))
        except (OSError, ValueError):  # the Tuner is gone
            return


def picklable_payload(configs: Sequence[Any], checkpoints: Sequence[Path | None]) -> bytes | None:
    """What a worker needs to build ``configs`` (and this process's registries), pickled; None
    when something in it cannot be."""
    import cloudpickle

    registries = {kind: dict(registered(kind)) for kind in _KINDS}
    paths = [None if c is None else str(c) for c in checkpoints]
    try:
        return cloudpickle.dumps((registries, list(configs), paths))
    except Exception:
        return None


def _portable(error: BaseException) -> BaseException:
    """``error`` if it survives pickling, else a ``RuntimeError`` with its type and message."""
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


def _serve(conn: Any, payload: bytes, interval: float = HEARTBEAT_INTERVAL_S) -> None:
    """The worker process: builds the batch, then answers requests until ``stop``; a thread
    sends a heartbeat every ``interval`` seconds all along."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sender = _Sender(conn)
    done = threading.Event()
    threading.Thread(target=_beat, args=(sender, interval, done), daemon=True).start()
    try:
        _answer(conn, sender, payload)
    finally:
        done.set()


def _answer(conn: Any, sender: _Sender, payload: bytes) -> None:
    import cloudpickle

    target: Any = None
    try:
        registries, configs, paths = cloudpickle.loads(payload)
        for kind, entries in registries.items():
            registered(kind).update(entries)
        if len(configs) > 1:
            from rljax.execution.population import Population

            target = Population(
                configs, checkpoints=[None if p is None else Path(p) for p in paths]
            )
            members = target.members
        else:
            target = configs[0].build_algo()
            if paths[0] is not None:
                target.restore_from_path(paths[0])
            members = [target]
        sender.send(("ok", os.getpid()))
    except Exception as e:
        sender.send(("error", _portable(e)))
        if target is not None:
            target.stop()
        return
    pid = os.getpid()
    try:
        while True:
            try:
                command, arg = conn.recv()
            except EOFError:  # the Tuner is gone
                return
            if command == "stop":
                return
            try:
                if command == "train" and len(members) > 1:
                    results = target.train()
                    for r in results:
                        if r is not None:
                            r.setdefault("pid", pid)
                            r.pop("config", None)  # the Tuner records the trial's own
                    errors = [None if e is None else _portable(e) for e in target.errors]
                    answer: Any = (results, errors, list(target.active))
                elif command == "train":
                    answer = {**target.train(), "pid": pid}
                    answer.pop("config", None)  # the Tuner records the trial's own
                elif command == "save":
                    index, path = arg
                    members[index].save_to_path(path)
                    answer = None
                elif command == "stop_trial":
                    target.stop_trial(arg)
                    answer = list(target.active)
                else:
                    raise ValueError(f"unknown request {command!r}")
                sender.send(("ok", answer))
            except Exception as e:
                sender.send(("error", _portable(e)))
    finally:
        target.stop()


class Worker:
    """A worker process holding one batch; ``request`` sends a command and returns its answer
    (raising the worker's exception, or ``RuntimeError`` when the process died)."""

    _all: set[Worker] = set()
    _all_lock = threading.Lock()

    def __init__(self, payload: bytes, timeout_s: float | None = None):
        """Starts the worker for ``payload`` and waits until its batch is built.

        Args:
          payload: ``picklable_payload``'s bytes.
          timeout_s: Seconds without a message (answer or heartbeat) after which the worker
            is taken for dead (``WorkerTimeout``); default ``HEARTBEAT_TIMEOUT_S``.
        """
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self.timeout_s = HEARTBEAT_TIMEOUT_S if timeout_s is None else float(timeout_s)
        interval = min(HEARTBEAT_INTERVAL_S, self.timeout_s / 4)
        self._process = ctx.Process(
            target=_serve,
            args=(child, payload, interval),
            daemon=True,
            name=f"{WORKER_NAME}-{os.getpid()}",
        )
        self._heard = False
        with Worker._all_lock:
            Worker._all.add(self)
        self._process.start()
        child.close()
        try:
            self.pid: int = self._receive()
        except BaseException:  # the batch could not be built there: nothing left to stop
            self.kill()
            raise

    def _receive(self) -> Any:
        """The worker's next answer, heartbeats skipped; raises ``WorkerTimeout`` (the worker
        ended) after ``timeout_s`` without any message (``STARTUP_TIMEOUT_S`` before the
        first), ``MainModuleRerun`` or ``RuntimeError`` when the process exited."""
        while True:
            wait = self.timeout_s if self._heard else max(self.timeout_s, STARTUP_TIMEOUT_S)
            try:
                ready = self._conn.poll(wait)
                if ready:
                    status, answer = self._conn.recv()
            except (EOFError, OSError):
                self._process.join(timeout=5)
                code = self._process.exitcode
                if code == _EXIT_MAIN_RERUN:
                    raise MainModuleRerun(_GUARD_HELP) from None
                raise RuntimeError(
                    f"the worker process of this trial exited (exit code {code})"
                ) from None
            if not ready:
                pid = self._process.pid
                self.kill()
                raise WorkerTimeout(
                    f"the worker process of this trial (pid {pid}) sent nothing for {wait:g} s "
                    "(no answer, no heartbeat): it is stopped (SIGSTOP), frozen or starved, "
                    "and was ended. Its heartbeat timeout is rljax.tune.worker."
                    "HEARTBEAT_TIMEOUT_S"
                )
            self._heard = True
            if status == "beat":
                continue
            if status == "error":
                raise answer
            return answer

    def request(self, command: str, arg: Any = None) -> Any:
        with contextlib.suppress(BrokenPipeError, OSError):  # _receive reports the exit
            self._conn.send((command, arg))
        return self._receive()

    def close(self) -> None:
        """Asks the worker to stop (it stops its algorithms), then ends it if it does not."""
        with contextlib.suppress(BrokenPipeError, OSError):
            self._conn.send(("stop", None))
        self._process.join(timeout=30)
        self.kill()

    def kill(self) -> None:
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=5)
        self._conn.close()
        with Worker._all_lock:
            Worker._all.discard(self)

    @classmethod
    def kill_all(cls) -> None:
        """Ends every worker at once (Ctrl-C, or a fatal error of the Tuner)."""
        with cls._all_lock:
            workers = list(cls._all)
        for worker in workers:
            worker.kill()


class _RemoteMember:
    def __init__(self, worker: Worker, index: int):
        self._worker, self._index = worker, index

    def save_to_path(self, path: str | os.PathLike[str]) -> None:
        self._worker.request("save", (self._index, os.fspath(path)))


class RemoteAlgorithm:
    """One trial's algorithm in a worker: ``train``, ``save_to_path``, ``stop``."""

    def __init__(self, payload: bytes):
        self._worker = Worker(payload)
        self._member = _RemoteMember(self._worker, 0)

    def train(self) -> dict[str, Any]:
        return self._worker.request("train")

    def save_to_path(self, path: str | os.PathLike[str]) -> None:
        self._member.save_to_path(path)

    def stop(self) -> None:
        self._worker.close()


class RemotePopulation:
    """A ``Population`` in a worker, with the attributes ``Tuner`` reads: ``members`` (each
    with ``save_to_path``), ``active``, ``errors``, ``train``, ``stop_trial``, ``stop``."""

    def __init__(self, payload: bytes, num_trials: int):
        self._worker = Worker(payload)
        self.members = [_RemoteMember(self._worker, i) for i in range(num_trials)]
        self.active = [True] * num_trials
        self.errors: list[BaseException | None] = [None] * num_trials

    def train(self) -> list[dict[str, Any] | None]:
        results, self.errors, self.active = self._worker.request("train")
        return results

    def stop_trial(self, index: int) -> None:
        self.active = self._worker.request("stop_trial", index)

    def stop(self) -> None:
        self._worker.close()
