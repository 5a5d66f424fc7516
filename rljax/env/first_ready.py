"""EnvPool-style ASYNC for gymnasium envs: act on whichever sub-envs are ready.

Each sub-env runs in its own spawned process. ``step(actions, env_ids)`` sends actions to the
given sub-envs and returns as soon as ``batch_size`` sub-envs (any of them) have a result, so one
slow sub-env no longer stalls the rest, as in EnvPool with ``batch_size < num_envs``.

Auto-reset, either of the other backends' two conventions:

- next-step (the default): the step after an episode end resets the sub-env and returns its
  first observation with zero reward (a row that is no transition);
- same-step (``same_step=True``, for on-policy algorithms): the worker resets its sub-env in the
  step that ended the episode and returns the next episode's first observation together with
  the final one (``StepResult.final_obs``), so every result is a transition and a batch of N
  rows holds N env steps. One message goes each way per step; a sub-env that resets simply
  answers later, while the others keep stepping.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any, cast

import numpy as np
from gymnasium.vector.utils import CloudpickleWrapper

from rljax.env.failures import EnvBugError
from rljax.env.fault_tolerance import RESTARTED
from rljax.env.steps import StepResult
from rljax.env.workers import main_hidden, sigint_blocked


def _worker(conn: Connection, env_fn: CloudpickleWrapper, index: int, same_step: bool) -> None:
    """Steps one sub-env for its pipe. Every answer is ``("ok", (obs, reward, terminated,
    truncated, restarted, final_obs))``: ``final_obs`` is the ended episode's last observation
    where a same-step reset followed the step, else None."""
    env = None
    try:
        env = env_fn.fn()
        need_reset = True
        while True:
            cmd, data = conn.recv()
            if cmd == "reset":
                obs, _ = env.reset(seed=data)
                need_reset = False
                conn.send(("ok", (obs, 0.0, False, False, False, None)))
            elif cmd == "step":
                if need_reset:  # next-step: this step only resets
                    obs, _ = env.reset()
                    need_reset = False
                    conn.send(("ok", (obs, 0.0, False, False, False, None)))
                    continue
                obs, reward, terminated, truncated, info = env.step(data)
                done = bool(terminated or truncated)
                restarted = bool(info.get(RESTARTED, False))
                final = None
                if done and same_step:
                    final = obs
                    obs, reset_info = env.reset()
                    restarted = restarted or bool(reset_info.get(RESTARTED, False))
                else:
                    need_reset = done
                conn.send(
                    (
                        "ok",
                        (obs, float(reward), bool(terminated), bool(truncated), restarted, final),
                    )
                )
            elif cmd == "close":
                break
    except (KeyboardInterrupt, EOFError):
        pass
    except Exception as e:
        # A bug its restarts found (EnvBugError) is sent whole, to be raised as it is.
        bug = e if isinstance(e, EnvBugError) else None
        with contextlib.suppress(OSError):
            conn.send(("error", (f"sub-env {index}:\n{traceback.format_exc()}", bug)))
    finally:
        if env is not None:
            env.close()
        conn.close()


class FirstReadyVectorEnv:
    """Sub-envs in their own processes; each batch holds the first ``batch_size`` ready ones."""

    def __init__(
        self,
        env_fns: list[Any],
        batch_size: int,
        seed: int,
        restart_sub_envs: bool = False,
        same_step: bool = False,
    ):
        """``env_fns``: one picklable builder per sub-env; ``batch_size``: sub-envs per result
        (1 .. ``len(env_fns)``; all of them: lock-step); ``same_step``: same-step auto-reset
        (see the module docstring)."""
        if not 1 <= batch_size <= len(env_fns):
            raise ValueError(
                f"first-ready batch_size={batch_size}: it must be 1 .. {len(env_fns)} (the "
                "number of sub-envs)"
            )
        self.restart_sub_envs = restart_sub_envs
        self.same_step = same_step
        # Messages sent to the sub-envs' processes (resets and steps), for tests and profiling.
        self.num_messages_sent = 0
        ctx = mp.get_context("spawn")  # never fork: JAX's threads do not survive it
        self.num_envs = len(env_fns)
        self.batch_size = batch_size
        self.seed = seed
        self._conns: list[Connection] = []
        self._procs = []
        with main_hidden(), sigint_blocked():
            for i, fn in enumerate(env_fns):
                parent, child = ctx.Pipe()
                p = ctx.Process(
                    target=_worker,
                    args=(child, CloudpickleWrapper(fn), i, same_step),
                    daemon=True,
                    name=f"rljax-sub-env-{i}",
                )
                p.start()
                child.close()
                self._conns.append(parent)
                self._procs.append(p)
        self._index = {id(c): i for i, c in enumerate(self._conns)}
        self._in_flight: set[int] = set()
        self._sent_seq = [0] * self.num_envs
        self._seq = 0
        self._ready: list[tuple[int, tuple]] = []

    def _collect(self, everyone: bool = False) -> StepResult:
        """The next batch; ``everyone``: first wait until no sub-env is in flight."""
        while len(self._ready) < self.batch_size or (everyone and self._in_flight):
            pending = [self._conns[i] for i in self._in_flight]
            # (``wait`` returns some of the objects it was given: here, connections.)
            ready = cast(list[Connection], wait(pending))
            # Of the sub-envs that are ready together, the one asked first goes first, so equally
            # fast sub-envs get equal turns whatever their index.
            ready.sort(key=lambda c: self._sent_seq[self._index[id(c)]])
            for conn in ready:
                i = self._index[id(conn)]
                try:
                    status, payload = conn.recv()
                except EOFError:
                    raise RuntimeError(
                        f"sub-env {i} exited unexpectedly (its process died)"
                    ) from None
                if status == "error":
                    text, bug = payload
                    if bug is not None:
                        raise bug
                    raise RuntimeError(f"a sub-env raised:\n{text}")
                self._in_flight.discard(i)
                self._ready.append((i, payload))
        batch, self._ready = self._ready[: self.batch_size], self._ready[self.batch_size :]
        ids = np.asarray([i for i, _ in batch], np.int32)
        obs = np.stack([np.asarray(p[0]) for _, p in batch])
        final_obs = None
        if self.same_step:  # where no episode ended, the final observation is the observation
            final_obs = np.stack([np.asarray(p[0] if p[5] is None else p[5]) for _, p in batch])
        return StepResult(
            obs,
            np.asarray([p[1] for _, p in batch], np.float32),
            np.asarray([p[2] for _, p in batch], bool),
            np.asarray([p[3] for _, p in batch], bool),
            ids,
            restarted=np.asarray([p[4] for _, p in batch], bool) if self.restart_sub_envs else None,
            final_obs=final_obs,
        )

    def reset(self) -> StepResult:
        for i, conn in enumerate(self._conns):
            conn.send(("reset", self.seed + i))
            self._mark_sent(i)
        self.num_messages_sent += len(self._conns)
        # Every reset result first, in the order they came: the batches after this one serve
        # the rest of them before any step's, so every sub-env starts before one steps again.
        return self._collect(everyone=True)

    def _mark_sent(self, i: int) -> None:
        self._in_flight.add(i)
        self._seq += 1
        self._sent_seq[i] = self._seq

    def step(self, action: np.ndarray, env_id: np.ndarray) -> StepResult:
        for a, i in zip(action, env_id, strict=True):
            i = int(i)
            self._conns[i].send(("step", a.item() if np.ndim(a) == 0 else a))
            self._mark_sent(i)
        self.num_messages_sent += len(env_id)
        return self._collect()

    def close(self, terminate: bool = False) -> None:
        """``terminate``: a sub-env may hang, so kill the processes without waiting for them."""
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.send(("close", None))
        for p in self._procs:
            p.join(timeout=0 if terminate else 2)
            if p.is_alive():
                p.terminate()
        for conn in self._conns:
            conn.close()
