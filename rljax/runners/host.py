"""Runners that step vector envs from Python, and the group of runner threads that feeds the learner.

The policy still runs jitted on whole batches; Python only moves the batch between the env and the
jitted ``act_step``. With ``num_env_runners=n`` each runner is a thread with its own vector env;
finished fragments reach the learner through bounded queues (one slot per runner) and weights go
back after every update. EnvPool, XLA and the pipes of ASYNC gymnasium envs release the GIL while
they wait, so runners really sample in parallel.

Fragment k of a runner is sampled with weights of version >= k - max_lag. ``max_lag=0`` is
synchronous sampling (every update sees samples of the current policy); ``max_lag=1`` lets runners
sample the next fragment while the learner updates, with samples at most one version old.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.vector import EnvSpec, make_host_env
from rljax.runners.acting import ActorState, Transition, init_actor_state


class HostRunner:
    """One vector env and its actor state; ``sample`` returns a ``Transition`` of [T, K]."""

    def __init__(
        self,
        spec: EnvSpec,
        num_envs: int,
        mode: str,
        seed: int,
        async_batch_size: int | None,
        policy_fn: Callable,
        act_step: Callable,
        to_env_action: Callable[[np.ndarray], np.ndarray],
        params: Any,
        device: jax.Device,
        env_id_offset: int = 0,
        worker_index: int = 0,
        num_workers: int = 0,
        env: Any = None,
    ):
        # ``env``: a vector env built by the caller (multi-agent slots); else one from ``spec``.
        self.env = env or make_host_env(
            spec,
            num_envs,
            mode,
            seed,
            async_batch_size,
            worker_index=worker_index,
            num_workers=num_workers,
        )
        self.offset = env_id_offset
        self.last_stats: Any = None
        self.device = device
        self.to_env_action = to_env_action
        self.result = self.env.reset()
        obs0 = jax.tree.map(lambda o: jnp.asarray(o[0]), self.result.obs)
        # One pending entry per stream: a sub-env, or a multi-agent env's agent slot.
        streams = getattr(self.env, "num_slots", num_envs)
        self.actor: ActorState = init_actor_state(policy_fn, params, obs0, streams)
        self.key = jax.random.PRNGKey(seed + 1)  # as the fused path: env seed + 1

        def step(params, key, actor, result, traj, t):
            # Everything per env step in one jitted call: the key split, acting, and writing the
            # transition into the fragment's buffer (donated, so updated in place).
            key, sub = jax.random.split(key)
            action, actor, transition = act_step(params, sub, actor, result)
            traj = jax.tree.map(lambda buf, x: buf.at[t].set(x), traj, transition)
            return action, actor, traj, key

        self._step = jax.jit(step, donate_argnums=(2, 4), device=device)
        self._transition_shape = jax.eval_shape(
            act_step, params, self.key, self.actor, self.result
        )[2]

    def _empty_fragment(self, length: int) -> Transition:
        return jax.tree.map(
            lambda s: jnp.zeros((length, *s.shape), s.dtype, device=self.device),
            self._transition_shape,
        )

    def sample(self, params: Any, length: int) -> Transition:
        traj = self._empty_fragment(length)
        for t in range(length):
            action, self.actor, traj, self.key = self._step(
                params, self.key, self.actor, self.result, traj, t
            )
            self.result = self.env.step(self.to_env_action(np.asarray(action)), self.result.env_id)
        # Env-side statistics of this fragment (multi-agent envs keep their finished episodes),
        # taken here, by the thread that stepped the env, so they travel with the fragment.
        drain = getattr(self.env, "drain_stats", None)
        self.last_stats = drain() if drain is not None else None
        # Sub-env ids are made global across runners so the learner can tell trajectories apart.
        return traj._replace(env_id=traj.env_id + self.offset)

    def close(self) -> None:
        self.env.close()


class EnvRunnerError(RuntimeError):
    """An env runner failed; the message names the runner and carries the env's traceback."""


@dataclasses.dataclass
class Fragment:
    """One runner's fragment and how it was made."""

    traj: Transition
    version: int
    sample_s: float
    wait_s: float  # time the runner waited for fresh weights or a free queue slot
    stats: Any = None  # the env's statistics of this fragment (HostRunner.last_stats)


@dataclasses.dataclass
class GroupSample:
    """Fragments of every runner for one update, joined along the sub-env axis."""

    traj: Transition
    versions: list[int]
    sample_s: list[float]
    runner_wait_s: list[float]
    learner_wait_s: float
    stats: list[Any] = dataclasses.field(default_factory=list)  # one per runner


class RunnerGroup:
    """``num_env_runners`` runner threads feeding the learner through bounded queues."""

    def __init__(self, runners: list[HostRunner], length: int, max_lag: int, poll_s: float = 0.05):
        if max_lag not in (0, 1):
            raise ValueError(f"max_lag must be 0 or 1; got {max_lag}")
        self.runners = runners
        self.length = length
        self.max_lag = max_lag
        self._poll_s = poll_s
        self._queues: list[queue.Queue] = [queue.Queue(maxsize=1) for _ in runners]
        self._cond = threading.Condition()
        self._params: Any = None
        self._version = -1
        self._stop = threading.Event()
        self._errors: dict[int, str] = {}
        self._threads: list[threading.Thread] = []

    @property
    def version(self) -> int:
        return self._version

    def publish(self, params: Any) -> int:
        """Hands new weights to the runners; returns their version (0 for the first)."""
        with self._cond:
            self._params = params
            self._version += 1
            self._cond.notify_all()
        if not self._threads:
            for i in range(len(self.runners)):
                t = threading.Thread(
                    target=self._loop, args=(i,), name=f"rljax-env-runner-{i + 1}", daemon=True
                )
                t.start()
                self._threads.append(t)
        return self._version

    def _loop(self, i: int) -> None:
        runner = self.runners[i]
        k = 0
        try:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                with self._cond:
                    while self._version < k - self.max_lag and not self._stop.is_set():
                        self._cond.wait(self._poll_s)
                    params, version = self._params, self._version
                if self._stop.is_set():
                    return
                t1 = time.perf_counter()
                traj = runner.sample(params, self.length)
                jax.block_until_ready(traj)
                t2 = time.perf_counter()
                fragment = Fragment(traj, version, t2 - t1, t1 - t0, runner.last_stats)
                while not self._stop.is_set():
                    try:
                        self._queues[i].put(fragment, timeout=self._poll_s)
                        break
                    except queue.Full:
                        continue
                fragment.wait_s += time.perf_counter() - t2
                k += 1
        except BaseException:  # reported to the learner, which raises it with the runner's id
            self._errors[i] = traceback.format_exc()

    def _raise_if_failed(self, i: int) -> None:
        if i in self._errors:
            self.close()
            raise EnvRunnerError(
                f"env runner {i + 1} (worker_index={i + 1}) failed:\n{self._errors[i]}"
            )
        if self._threads and not self._threads[i].is_alive() and not self._stop.is_set():
            raise EnvRunnerError(
                f"env runner {i + 1} (worker_index={i + 1}) stopped without a result"
            )

    def sample(self, timeout_s: float | None = None) -> GroupSample:
        """One fragment from every runner. Raises ``EnvRunnerError`` if a runner failed."""
        if not self._threads:
            raise RuntimeError("publish() the first weights before sampling")
        t0 = time.perf_counter()
        fragments: list[Fragment] = []
        for i, q in enumerate(self._queues):
            while True:
                self._raise_if_failed(i)
                try:
                    fragments.append(q.get(timeout=self._poll_s))
                    break
                except queue.Empty:
                    if timeout_s is not None and time.perf_counter() - t0 > timeout_s:
                        raise EnvRunnerError(
                            f"env runner {i + 1} (worker_index={i + 1}) returned no sample within "
                            f"{timeout_s} s (sample_timeout_s)"
                        ) from None
        learner_wait = time.perf_counter() - t0
        if len(fragments) == 1:
            traj = fragments[0].traj
        else:
            traj = jax.tree.map(
                lambda *xs: jnp.concatenate(xs, axis=1), *[f.traj for f in fragments]
            )
        return GroupSample(
            traj=traj,
            versions=[f.version for f in fragments],
            sample_s=[f.sample_s for f in fragments],
            runner_wait_s=[f.wait_s for f in fragments],
            learner_wait_s=learner_wait,
            stats=[f.stats for f in fragments],
        )

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=10)
        for r in self.runners:
            with contextlib.suppress(Exception):  # closing after a failure must not hide it
                r.close()
