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

_KINDS = ("env", "module_class", "policy_mapping_fn")


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


def _serve(conn: Any, payload: bytes) -> None:
    """The worker process: builds the batch, then answers requests until ``stop``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
        conn.send(("ok", os.getpid()))
    except Exception as e:
        conn.send(("error", _portable(e)))
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
                    errors = [None if e is None else _portable(e) for e in target.errors]
                    answer: Any = (results, errors, list(target.active))
                elif command == "train":
                    answer = {**target.train(), "pid": pid}
                elif command == "save":
                    index, path = arg
                    members[index].save_to_path(path)
                    answer = None
                elif command == "stop_trial":
                    target.stop_trial(arg)
                    answer = list(target.active)
                else:
                    raise ValueError(f"unknown request {command!r}")
                conn.send(("ok", answer))
            except Exception as e:
                conn.send(("error", _portable(e)))
    finally:
        target.stop()


class Worker:
    """A worker process holding one batch; ``request`` sends a command and returns its answer
    (raising the worker's exception, or ``RuntimeError`` when the process died)."""

    _all: set[Worker] = set()
    _all_lock = threading.Lock()

    def __init__(self, payload: bytes):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=_serve, args=(child, payload), daemon=True)
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
        try:
            status, answer = self._conn.recv()
        except (EOFError, OSError):
            self._process.join(timeout=5)
            raise RuntimeError(
                f"the worker process of this trial exited (exit code {self._process.exitcode})"
            ) from None
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
