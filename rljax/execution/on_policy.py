"""The on-policy loop: sample a batch, post-process it, update, hand the new weights to the runners.

An algorithm enters through three pure functions: ``postprocess(traj [T, K]) -> batch``,
``update(state, batch) -> (state, metrics)`` and ``PolicyParts.acting_params(state) -> params``.
Samples come from the fused EnvPool rollout (``rollout(params, runner_state)``, traced) or from
runner threads (a ``RunnerGroup``). With one learner on the fused path, sampling and the update
are one jitted program; with a learner mesh the rollout stays on its device (EnvPool's custom
call runs once, on one device) and the batch is placed on the mesh for the update. Nothing here
knows the algorithm.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import jax
import numpy as np

from rljax import distributed
from rljax.execution.complete_episodes import EpisodeBuffer
from rljax.execution.loop import IterationResult, RunnerLag, RunnerStats, Timers, single_policy
from rljax.execution.parts import Params
from rljax.learners.devices import replicated
from rljax.runners.acting import episode_arrays
from rljax.runners.group import GroupSample, RunnerGroup
from rljax.types import FusedRunnerState, Transition
from rljax.utils import xla_options
from rljax.utils.host_transfer import PackedOutputs
from rljax.utils.nonfinite import total_non_finite

State = TypeVar("State")
Batch = Any
Metrics = dict[str, jax.Array]
Episodes = dict[str, Any]
Rollout = Callable[[Params, FusedRunnerState], tuple[FusedRunnerState, Transition]]


def make_sample(
    rollout: Rollout, postprocess: Callable[[Transition], Batch]
) -> Callable[[Params, FusedRunnerState], tuple[FusedRunnerState, Batch, Episodes]]:
    """``sample(params, runner_state) -> (runner_state, batch, episodes)``: one fused rollout,
    post-processed, with its finished episodes (``episode_arrays``)."""

    def sample(params: Params, rs: FusedRunnerState) -> tuple[FusedRunnerState, Batch, Episodes]:
        rs, traj = rollout(params, rs)
        return rs, postprocess(traj), episode_arrays(traj)

    return sample


def make_train_step(
    sample: Callable[[Params, FusedRunnerState], tuple[FusedRunnerState, Batch, Episodes]],
    update: Callable[[State, Batch], tuple[State, Metrics]],
    acting_params: Callable[[State], Params],
) -> Callable[[State, FusedRunnerState], tuple[State, FusedRunnerState, Metrics, Episodes]]:
    """``train_step(state, runner_state) -> (state, runner_state, metrics, episodes)``: the
    rollout with the current parameters and the update, for one jitted program."""

    def train_step(
        state: State, rs: FusedRunnerState
    ) -> tuple[State, FusedRunnerState, Metrics, Episodes]:
        rs, batch, episodes = sample(acting_params(state), rs)
        state, metrics = update(state, batch)
        return state, rs, metrics, episodes

    return train_step


def packed_train_step(
    train_step: Callable[[State, FusedRunnerState], tuple[State, FusedRunnerState, Any, Any]],
    outputs: PackedOutputs,
) -> Callable[[State, FusedRunnerState], tuple[State, FusedRunnerState, tuple[jax.Array, ...]]]:
    """``train_step`` whose metrics, episodes and the new state's count of skipped non-finite
    updates come back packed (``outputs.pack``): one transfer per dtype for all of them, where
    each array would be one (``OnPolicyLoop.step`` unpacks them on the host)."""

    def packed(state: State, rs: FusedRunnerState) -> tuple[State, FusedRunnerState, Any]:
        state, rs, metrics, episodes = train_step(state, rs)
        return state, rs, outputs.pack((metrics, episodes, total_non_finite(state)))

    return packed


def steps_per_iteration(config: Any) -> int:
    """Training steps per iteration: enough whole batches (``sampled_batch_size`` env steps
    each) for RLlib's ``min_sample_timesteps_per_iteration`` (one when it is 0)."""
    wanted = config.min_sample_timesteps_per_iteration
    return max(1, math.ceil(wanted / config.sampled_batch_size))


def repeated_train_step(train_step: Callable[..., Any], steps: int) -> Callable[..., Any]:
    """``train_step`` ``steps`` times in one program (``lax.scan``): metrics and episodes
    stacked on a leading axis of ``steps`` (``OnPolicyLoop.step`` splits them into records)."""

    def repeated(state: Any, rs: Any) -> tuple[Any, Any, Any, Any]:
        def body(carry: Any, _: Any) -> tuple[Any, Any]:
            state, rs, metrics, episodes = train_step(*carry)
            return (state, rs), (metrics, episodes)

        (state, rs), (metrics, episodes) = jax.lax.scan(body, (state, rs), None, length=steps)
        return state, rs, metrics, episodes

    return repeated


@dataclasses.dataclass
class SampleRecord:
    """What is known of the fragments of one update, per fragment: the runner slot, the
    version of the weights it was sampled with, its env steps, sampling and waiting seconds."""

    slots: list[int]
    versions: list[int]
    steps: list[int]
    sample_s: list[float]
    wait_s: list[float]
    learner_version: int  # the version of the weights the update starts from
    learner_wait_s: float  # how long the learner waited for the fragments
    infos: Any = None  # the env's infos per row and column, for episode callbacks (or None)
    stats: Any = None  # the runners' episode statistics per fragment (``GroupSample.stats``)
    num_rows: int = 0  # the env steps (rows) of its trajectory

    @classmethod
    def of(cls, group: GroupSample, learner_version: int) -> SampleRecord:
        valid = np.asarray(group.traj.valid)
        n = len(group.versions)
        steps = valid.reshape(valid.shape[0], n, -1).sum(axis=(0, 2))
        return cls(
            slots=list(group.slots) or list(range(n)),
            versions=list(group.versions),
            steps=[int(x) for x in steps],
            sample_s=list(group.sample_s),
            wait_s=list(group.runner_wait_s),
            learner_version=learner_version,
            learner_wait_s=group.learner_wait_s,
            infos=group.infos,
            stats=list(group.stats),
            num_rows=int(valid.shape[0]),
        )

    @classmethod
    def joined(cls, records: list[SampleRecord]) -> SampleRecord:
        """The records of several groups that make one batch (``complete_episodes``): their
        fragments one after another, the infos' rows too (``{}`` where a group kept none).
        Each fragment's version is shifted by the versions published after its group's
        sampling (the same weights again, for lock-step runners), so its lag is the one it had
        then: counted in updates, not in groups."""
        infos = None
        if any(r.infos is not None for r in records):
            infos = []
            for r in records:
                if r.infos is not None:
                    infos += r.infos
                else:  # a group without infos: its rows of empty infos
                    width = len(next(x for x in records if x.infos is not None).infos[0])
                    infos += [[{} for _ in range(width)] for _ in range(r.num_rows)]
        return cls(
            slots=[s for r in records for s in r.slots],
            versions=[
                v + records[-1].learner_version - r.learner_version
                for r in records
                for v in r.versions
            ],
            steps=[n for r in records for n in r.steps],
            sample_s=[x for r in records for x in r.sample_s],
            wait_s=[x for r in records for x in r.wait_s],
            learner_version=records[-1].learner_version,
            learner_wait_s=sum(r.learner_wait_s for r in records),
            infos=infos,
            stats=[x for r in records for x in (r.stats or [])],
            num_rows=sum(r.num_rows for r in records),
        )


def runner_lag(records: list[SampleRecord], num_runners: int) -> RunnerLag:
    """Policy lag (in weight versions: updates) and per-runner throughput of the fragments of
    one or more updates.

    ``per_runner`` has every runner (runner ``i + 1`` at index ``i``); a runner that gave no
    fragment has ``num_fragments`` 0 and NaN lag (a straggler, or a dropped runner).
    """
    lags: list[int] = []
    waits: list[float] = []
    per: dict[int, dict[str, Any]] = {
        i: {"num_fragments": 0, "steps": 0, "sample_s": 0.0, "wait": [], "lags": []}
        for i in range(num_runners)
    }
    for rec in records:
        for slot, version, steps, sample_s, wait in zip(
            rec.slots, rec.versions, rec.steps, rec.sample_s, rec.wait_s, strict=True
        ):
            if steps == 0:  # a dropped runner's empty rows: no fragment, no lag
                continue
            lag = rec.learner_version - version
            lags.append(lag)
            waits.append(wait)
            p = per[slot]
            p["num_fragments"] += 1
            p["steps"] += steps
            p["sample_s"] += sample_s
            p["wait"].append(wait)
            p["lags"].append(lag)
    nan = float("nan")
    return RunnerLag(
        policy_lag_mean=float(np.mean(lags)) if lags else nan,
        policy_lag_max=int(np.max(lags)) if lags else 0,
        runner_wait_for_learner_s=float(np.mean(waits)) if waits else nan,
        per_runner=tuple(
            RunnerStats(
                num_fragments=p["num_fragments"],
                num_env_steps_sampled=p["steps"],
                sample_s=p["sample_s"],
                env_steps_per_s=p["steps"] / p["sample_s"] if p["sample_s"] > 0 else nan,
                wait_for_learner_s=float(np.mean(p["wait"])) if p["wait"] else nan,
                policy_lag=float(np.mean(p["lags"])) if p["lags"] else nan,
            )
            for p in per.values()
        ),
        learner_wait_s=float(sum(r.learner_wait_s for r in records)),
    )


def runner_group_metrics(records: list[SampleRecord], num_runners: int) -> dict[str, Any]:
    """``runner_lag`` as a dict: its ``env_runners`` keys (``per_runner`` keyed ``"1"`` ..
    ``str(num_runners)``) and ``learner_wait_s``."""
    lag = runner_lag(records, num_runners)
    return {**lag.env_runner_metrics(), "learner_wait_s": lag.learner_wait_s}


def summarize_updates(
    host: list[tuple[dict[str, Any], Episodes]],
) -> tuple[dict[str, Any], np.ndarray, np.ndarray, int]:
    """``(metrics, episode returns, episode lengths, env steps)`` of one or more updates, given
    each one's ``(metrics, episode_arrays)`` on the host: counts (``num_*``) add up over the
    updates, every other metric is their mean."""
    metrics = {
        k: (np.sum if k.startswith("num_") else np.mean)([m[k] for m, _ in host])
        for k in host[0][0]
    }
    returns = np.concatenate([e["returns"][e["done"]] for _, e in host])
    lens = np.concatenate([e["lens"][e["done"]] for _, e in host])
    num_valid = sum(int(e["num_valid"]) for _, e in host)
    return metrics, returns, lens, num_valid


# One update's outputs (``OnPolicyLoop._learn``): on the device, or on the host where the fused
# training step's packed outputs were unpacked (``packed_train_step``).
Record = dict[str, Any]
# A batch ready for the update: (batch, episodes, its fragments' record, seconds to sample).
Sampled = tuple[Batch, Episodes, SampleRecord | None, float]


@dataclasses.dataclass
class CompleteEpisodes(Generic[State]):
    """``batch_mode="complete_episodes"`` on runner threads: the episodes buffered between
    fragments (``EpisodeBuffer``), the post-processing of a batch of them, and the update of
    each padded batch size, built by ``update_for(rows)`` and jitted on first use."""

    buffer: EpisodeBuffer
    postprocess: Callable[[Transition], Batch]
    update_for: Callable[[int], Callable[[State, Batch], tuple[State, Metrics]]]
    compiler_options: Any = None
    _updates: dict[int, Callable[[State, Batch], tuple[State, Metrics]]] = dataclasses.field(
        default_factory=dict
    )

    def update(self, batch: Batch) -> Callable[[State, Batch], tuple[State, Metrics]]:
        """The jitted update for ``batch`` (leaves leading with ``[D, n]``: ``D * n`` rows)."""
        shape = np.shape(jax.tree.leaves(batch)[0])
        rows = int(shape[0] * shape[1])
        if rows not in self._updates:
            self._updates[rows] = jax.jit(
                self.update_for(rows), donate_argnums=(0,), compiler_options=self.compiler_options
            )
        return self._updates[rows]


_jitted_episode_arrays = jax.jit(episode_arrays)


def joined_episodes(episodes: list[Episodes]) -> Episodes:
    """``episode_arrays`` of several fragments (host arrays) as one: rows one after another,
    ``num_valid`` summed."""
    if len(episodes) == 1:
        return episodes[0]
    return jax.tree.map(lambda *xs: np.concatenate(xs) if np.ndim(xs[0]) else np.sum(xs), *episodes)


@dataclasses.dataclass
class OnPolicyLoop(Generic[State]):
    """One training iteration of an on-policy algorithm, on the fused path or runner threads.

    Build it with ``OnPolicyLoop.fused(...)`` or ``OnPolicyLoop.with_runners(...)``; ``step``
    returns the new train state and the ``IterationResult`` that ``Algorithm.train()`` turns
    into RLlib's result (a ``Loop``).

    With free-running runners (``fragments_per_batch`` set) a batch is the first fragments ready
    from any runners, and the weights reach the runners every ``broadcast_interval`` updates;
    with ``learner_thread`` the updates run in a thread of their own (``LearnerThread``) and
    ``step`` returns every update finished since the last call.

    ``steps_per_iteration`` (RLlib's ``min_sample_timesteps_per_iteration`` in whole batches):
    an iteration runs that many training steps and reports them as one result; on the fused
    path they are one program (``repeated_train_step``).
    """

    update: Callable[[State, Batch], tuple[State, Metrics]]
    runner_params: Callable[[State], Params]
    train_step: Callable[..., Any] | None = None
    sample: Callable[..., Any] | None = None
    postprocess: Callable[[Transition], tuple[Batch, Episodes]] | None = None
    runners: RunnerGroup | None = None
    batch_sharding: jax.sharding.Sharding | None = None
    sample_timeout_s: float | None = None
    fragments_per_batch: int | None = None
    broadcast_interval: int = 1
    learner_thread: LearnerThread[State] | None = None
    report: Callable[[list[Record], Timers], IterationResult] | None = None
    steps_per_iteration: int = 1
    complete: CompleteEpisodes[State] | None = None
    # The fused ``train_step``'s packed outputs (``packed_train_step``).
    outputs: PackedOutputs | None = None
    _since_broadcast: int = 0

    @classmethod
    def fused(
        cls,
        rollout: Rollout,
        postprocess: Callable[[Transition], Batch],
        update: Callable[[State, Batch], tuple[State, Metrics]],
        acting_params: Callable[[State], Params],
        runner_params: Callable[[State], Params],
        mesh: jax.sharding.Mesh | None = None,
        state_sharding: Any = None,
        batch_sharding: jax.sharding.Sharding | None = None,
        steps_per_iteration: int = 1,
        report: Callable[[list[Record], Timers], IterationResult] | None = None,
    ) -> OnPolicyLoop[State]:
        """The fused EnvPool path: one jitted program per iteration with one learner; with a
        mesh, the jitted rollout on the runner device, then the update partitioned over it.
        ``report`` as in ``with_runners`` (one learner only)."""
        if report is not None and mesh is not None:
            raise ValueError("a fused loop with a report of its own runs on one learner")
        if mesh is not None and distributed.is_multi_process():
            # Each process's rollout joins the global trajectory; post-processing and the update
            # run over the whole mesh (rljax.distributed).
            sample_fn, update_fn, sharding = distributed.fused_programs(
                rollout,
                postprocess,
                update,
                mesh,
                state_sharding,
                batch_sharding,  # type: ignore[arg-type]
                xla_options.current("rollout"),
                xla_options.current("update"),
            )
            return cls(
                update=update_fn,
                runner_params=runner_params,
                sample=sample_fn,
                batch_sharding=sharding,
                steps_per_iteration=steps_per_iteration,
            )
        sample = make_sample(rollout, postprocess)
        if mesh is None:
            # Rollout and update in one jitted call: no Python between env steps or minibatches.
            train_step = make_train_step(sample, update, acting_params)
            if steps_per_iteration > 1:
                train_step = repeated_train_step(train_step, steps_per_iteration)
            outputs = PackedOutputs()
            return cls(
                update=update,
                runner_params=runner_params,
                train_step=jax.jit(
                    packed_train_step(train_step, outputs),
                    donate_argnums=(0, 1),
                    compiler_options=xla_options.current("train_step"),
                ),
                outputs=outputs,
                steps_per_iteration=steps_per_iteration,
                report=report,
            )
        return cls(
            update=jit_update(update, mesh, state_sharding, batch_sharding),
            runner_params=runner_params,
            sample=jax.jit(
                sample, donate_argnums=(1,), compiler_options=xla_options.current("rollout")
            ),
            batch_sharding=batch_sharding,
            steps_per_iteration=steps_per_iteration,
        )

    @classmethod
    def with_runners(
        cls,
        runners: RunnerGroup,
        postprocess: Callable[[Transition], Batch],
        update: Callable[[State, Batch], tuple[State, Metrics]],
        runner_params: Callable[[State], Params],
        sample_timeout_s: float | None,
        mesh: jax.sharding.Mesh | None = None,
        state_sharding: Any = None,
        batch_sharding: jax.sharding.Sharding | None = None,
        fragments_per_batch: int | None = None,
        broadcast_interval: int = 1,
        learner_thread: bool = False,
        max_pending_updates: int = 1,
        jit: bool = True,
        report: Callable[[list[Record], Timers], IterationResult] | None = None,
        steps_per_iteration: int = 1,
        complete_episodes: tuple[EpisodeBuffer, Callable[[int], Any]] | None = None,
    ) -> OnPolicyLoop[State]:
        """Runner threads sample; the batch is post-processed and the update runs in the
        driver (partitioned over the mesh with several learners), or in a learner thread; the
        new weights are published after each update, or every ``broadcast_interval``.

        Args:
          fragments_per_batch: Free-running runners only (``RunnerGroup.sample_any``): the
            fragments of a batch, from whichever runners have them ready. None: one of every
            runner (``RunnerGroup.sample``).
          broadcast_interval: Updates between weight broadcasts (free-running only; else 1).
          learner_thread: Update in a thread of its own (free-running only), so that the
            driver's work between iterations overlaps learning; the update then keeps its
            input state (no donation): the driver reads the newest state while the thread goes
            on from it.
          max_pending_updates: With ``learner_thread``: updates the thread may finish before
            the driver collects them (``step``); then it waits (RLlib's learner queue).
          jit: Jit ``update`` (the train state donated). False: ``update`` runs as given, a
            host function that calls jitted programs of its own (multi-agent PPO's grouped
            update: one program per policy group and batch size).
          report: ``report(records, timers) -> IterationResult``: the iteration's result from
            its updates' records (``Record``: each update's ``metrics``, ``episodes`` and
            ``sample_record``), for an update whose metrics are not one policy's; None: the
            single-policy result (``summarize_updates``, runner lag).
        """
        free = runners.exchange.free_running
        if not free and (fragments_per_batch is not None or learner_thread):
            raise ValueError("fragments_per_batch and learner_thread need free-running runners")
        if broadcast_interval != 1 and not free:
            raise ValueError(
                f"broadcast_interval={broadcast_interval}: lag-bounded runners take the weights "
                "of every update (1)"
            )

        def with_episodes(traj: Transition) -> tuple[Batch, Episodes]:
            return postprocess(traj), episode_arrays(traj)

        if not jit and (mesh is not None or learner_thread):
            raise ValueError("an update that is not jitted here runs on one learner, in the driver")
        loop = cls(
            update=jit_update(
                update, mesh, state_sharding, batch_sharding, donate=not learner_thread
            )
            if jit
            else update,
            runner_params=runner_params,
            postprocess=jax.jit(with_episodes),
            runners=runners,
            # A learner mesh's split, or the one learner's device where acting is elsewhere.
            batch_sharding=batch_sharding,
            sample_timeout_s=sample_timeout_s,
            fragments_per_batch=(fragments_per_batch or 1) if free else None,
            broadcast_interval=broadcast_interval,
            report=report,
            steps_per_iteration=steps_per_iteration,
        )
        if complete_episodes is not None:
            buffer, update_for = complete_episodes
            loop.complete = CompleteEpisodes(
                buffer, jax.jit(postprocess), update_for, xla_options.current("update")
            )
        if learner_thread:
            loop.learner_thread = LearnerThread(
                loop._sample_batch, loop._learn, max_pending_updates
            )
        return loop

    def step(
        self, state: State, runner_state: FusedRunnerState | None
    ) -> tuple[State, FusedRunnerState | None, IterationResult]:
        """One iteration: ``(state, runner_state, result)`` (the ``Loop`` contract).

        With a learner thread: every update it finished since the last call (at least one) and
        the newest state; ``state`` starts the thread on the first call.
        """
        t_start = time.perf_counter()
        k = self.steps_per_iteration
        if self.train_step is not None:
            assert self.outputs is not None
            state, runner_state, packed = self.train_step(state, runner_state)
            # Sampling and learning run inside one XLA program here: only their sum is measured.
            # Its outputs come back in one transfer per dtype (``packed_train_step``).
            metrics, episodes, non_finite = self.outputs.unpack(jax.device_get(packed))
            if k == 1:
                records: list[Record] = [{"metrics": metrics, "episodes": episodes, "timers": {}}]
            else:  # k steps scanned: their outputs stacked on a leading axis, split on the host
                records = [
                    {
                        "metrics": jax.tree.map(lambda x, i=i: x[i], metrics),
                        "episodes": jax.tree.map(lambda x, i=i: x[i], episodes),
                        "timers": {},
                    }
                    for i in range(k)
                ]
            records[-1]["non_finite_total"] = int(non_finite)
            return state, runner_state, self._result(records, t_start)
        records = []
        if self.learner_thread is not None:
            while len(records) < k:
                state, more = self.learner_thread.collect(state)
                records += more
            return state, runner_state, self._result(records, t_start)
        for _ in range(k):
            sampled: Sampled
            if self.sample is not None:  # the fused rollout with a learner mesh
                t0 = time.perf_counter()
                runner_state, batch, episodes = self.sample(self.runner_params(state), runner_state)
                sampled = (self._placed(batch), episodes, None, time.perf_counter() - t0)
            elif self.complete is not None:
                sampled = self._sample_complete(state)
            else:
                sampled = self._sample_batch()
            state, record = self._learn(state, sampled)
            records.append(record)
        return state, runner_state, self._result(records, t_start)

    def _placed(self, batch: Batch) -> Batch:
        if self.batch_sharding is not None and distributed.is_multi_process():
            return distributed.join_local(batch, self.batch_sharding)
        if self.batch_sharding is not None:
            batch = jax.device_put(batch, self.batch_sharding)
        return jax.block_until_ready(batch)

    def _sample_batch(self) -> Sampled:
        """The runners' next batch, post-processed and placed: ``(batch, episodes, record,
        seconds)``."""
        assert self.runners is not None and self.postprocess is not None
        t0 = time.perf_counter()
        if self.fragments_per_batch is not None:
            group = self.runners.sample_any(self.fragments_per_batch, self.sample_timeout_s)
        else:
            group = self.runners.sample(self.sample_timeout_s)
        batch, episodes = self.postprocess(group.traj)
        # The version of the weights the update starts from, in updates.
        learner_version = self.runners.version + self._since_broadcast
        record = SampleRecord.of(group, learner_version)
        return self._placed(batch), episodes, record, time.perf_counter() - t0

    def _sample_complete(self, state: State) -> Sampled:
        """``_sample_batch`` for ``complete_episodes``: groups of fragments until the episodes
        that ended fill a batch (the same weights published again between groups, as
        lock-step runners take one version per fragment); the batch is those episodes, the
        episodes reported are every group's, as sampled."""
        assert self.runners is not None and self.complete is not None
        t0 = time.perf_counter()
        records: list[SampleRecord] = []
        episodes: list[Episodes] = []
        while True:
            if records:
                self.runners.publish(self.runner_params(state))
            group = self.runners.sample(self.sample_timeout_s)
            version = self.runners.version + self._since_broadcast
            records.append(SampleRecord.of(group, version))
            traj, found = jax.device_get((group.traj, _jitted_episode_arrays(group.traj)))
            episodes.append(found)
            self.complete.buffer.add(traj)
            whole = self.complete.buffer.take()
            if whole is not None:
                break
        batch = self._placed(self.complete.postprocess(whole))
        joined = {**joined_episodes(episodes), "num_trained": int(np.sum(whole.valid))}
        return batch, joined, SampleRecord.joined(records), time.perf_counter() - t0

    def _learn(self, state: State, sampled: Sampled) -> tuple[State, Record]:
        """One update on a sampled batch, and the weights published when it is time."""
        batch, episodes, sample_record, sample_s = sampled
        t1 = time.perf_counter()
        update = self.update if self.complete is None else self.complete.update(batch)
        state, metrics = update(state, batch)
        jax.block_until_ready(metrics)
        if self.runners is not None:
            self._since_broadcast += 1
            if self._since_broadcast >= self.broadcast_interval:
                steps = self._since_broadcast if self.runners.exchange.free_running else 1
                self.runners.publish(self.runner_params(state), steps=steps)
                self._since_broadcast = 0
        timers = {
            "env_runner_sampling_timer": sample_s,
            "learner_update_timer": time.perf_counter() - t1,
        }
        return state, {
            "metrics": metrics,
            "episodes": episodes,
            "timers": timers,
            "sample_record": sample_record,
        }

    def _result(self, records: list[Record], t_start: float) -> IterationResult:
        """The result of one or more updates: learner metrics averaged over them, their
        episodes and env steps summed, runner metrics over all their fragments (or what
        ``report`` makes of them)."""
        timers: dict[str, float] = {}
        for r in records:
            for k, v in r["timers"].items():
                timers[k] = timers.get(k, 0.0) + v
        if self.report is not None:
            reported = self.report(
                records,
                Timers(
                    training_step=time.perf_counter() - t_start,
                    env_runner_sampling_timer=timers.get("env_runner_sampling_timer"),
                    learner_update_timer=timers.get("learner_update_timer"),
                ),
            )
            counted = records[-1].get("non_finite_total")  # the fused program's count
            return (
                reported
                if counted is None
                else dataclasses.replace(reported, non_finite_total=counted)
            )
        pairs = [(r["metrics"], r["episodes"]) for r in records]
        host = pairs if self.outputs is not None else jax.device_get(pairs)
        host = distributed.gather_episodes(host)  # every process's (one process: as it is)
        metrics, returns, lens, num_valid = summarize_updates(host)
        # complete_episodes: the steps of the episodes trained on, not the steps sampled
        trained = sum(int(e.get("num_trained", e["num_valid"])) for _, e in host)
        training_step = time.perf_counter() - t_start
        lag = None
        sample_records = [r["sample_record"] for r in records if r.get("sample_record")]
        if sample_records:
            assert self.runners is not None
            lag = runner_lag(sample_records, len(self.runners.runners))
            if self.fragments_per_batch is not None:  # free-running: the lag is a learner metric
                metrics["policy_lag_mean"] = lag.policy_lag_mean
                metrics["policy_lag_max"] = lag.policy_lag_max
                metrics["num_updates"] = len(records)
        return IterationResult(
            num_env_steps_sampled=num_valid,
            num_env_steps_trained=trained,
            episode_returns=returns,
            episode_lens=lens,
            learner_metrics=single_policy(metrics),
            timers=Timers(
                training_step=training_step,
                env_runner_sampling_timer=timers.get("env_runner_sampling_timer"),
                learner_update_timer=timers.get("learner_update_timer"),
                learner_wait_for_runners_s=lag.learner_wait_s if lag is not None else None,
            ),
            runner_lag=lag,
            # Episode callbacks: each update's recorded rows and the runners' infos.
            episode_steps=tuple(
                (e["steps"], getattr(r.get("sample_record"), "infos", None))
                for (_, e), r in zip(host, records, strict=True)
                if "steps" in e
            ),
            non_finite_total=records[-1].get("non_finite_total"),
        )

    def set_state(self, state: State) -> None:
        """Hands a state set from outside (a restored checkpoint) to the learner thread: the
        updates it finished since the last ``step`` are discarded. With ``complete_episodes``
        the episodes in progress are forgotten (``EpisodeBuffer.restart``)."""
        if self.complete is not None:
            self.complete.buffer.restart()
        if self.learner_thread is not None:
            self.learner_thread.set_state(state)

    def paused(self) -> contextlib.AbstractContextManager[None]:
        """Holds the learner thread, if any, between updates for the block."""
        if self.learner_thread is None:
            return contextlib.nullcontext()
        return self.learner_thread.paused()

    def close(self) -> None:
        """Stops the learner thread (after the runners were closed, which ends its wait)."""
        if self.learner_thread is not None:
            self.learner_thread.close()


class LearnerThread(Generic[State]):
    """Runs ``learn(state, sample())`` in a thread of its own, over and over.

    ``collect`` hands the driver every update finished since its last call (waiting for one)
    and the newest state. ``max_pending`` finished updates wait for the driver, and the thread
    holds one more while it waits to hand it over, so a run left alone between ``train()``
    calls stops after that many. The
    state lives in the thread: ``set_state`` replaces it between updates (dropping the updates
    not yet collected). ``paused()`` holds the thread between updates while the driver changes
    what it samples from (a restore). An exception in the thread is raised by the next
    ``collect``.
    """

    def __init__(
        self,
        sample: Callable[[], Any],
        learn: Callable[[State, Any], tuple[State, Record]],
        max_pending: int,
        poll_s: float = 0.05,
    ):
        self._sample = sample
        self._learn = learn
        self._results: queue.Queue[tuple[int, State, Record]] = queue.Queue(max(1, max_pending))
        self._lock = threading.Lock()
        self._state: Any = None
        self._generation = 0
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._poll_s = poll_s
        self._resume = threading.Event()  # cleared while the driver holds the thread
        self._resume.set()
        self._idle = threading.Event()  # set while the thread waits to be resumed

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def collect(self, state: State) -> tuple[State, list[Record]]:
        """``(newest state, records)``: the updates finished since the last call, at least one.
        The first call starts the thread from ``state``."""
        if self._thread is None:
            self._state = state
            self._thread = threading.Thread(target=self._run, name="rljax-learner", daemon=True)
            self._thread.start()
        items: list[tuple[int, State, Record]] = []
        while not items:
            try:
                items += self._current(self._results.get(timeout=self._poll_s))
                continue
            except queue.Empty:
                pass
            if self._error is not None:
                raise self._error
            if not self.running:
                raise RuntimeError("the learner thread stopped")
        while True:
            try:
                items += self._current(self._results.get_nowait())
            except queue.Empty:
                break
        # The state after the last update handed over (the thread may be one further).
        return items[-1][1], [record for _, _, record in items]

    def _current(self, item: tuple[int, State, Record]) -> list[tuple[int, State, Record]]:
        return [item] if item[0] == self._generation else []

    def set_state(self, state: State) -> None:
        with self._lock:
            self._state = state
            self._generation += 1
            while True:  # updates from the state replaced: not the new one's
                try:
                    self._results.get_nowait()
                except queue.Empty:
                    break

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Holds the thread between updates (before its next sample, or while it waits to hand
        an update over) for the duration of the block."""
        if not self.running:
            yield
            return
        self._resume.clear()
        try:
            while not self._idle.wait(self._poll_s):
                if not self.running:
                    break
            yield
        finally:
            self._resume.set()

    def _hold_if_paused(self) -> None:
        if self._resume.is_set():
            return
        self._idle.set()
        try:
            while not self._resume.wait(self._poll_s) and not self._stop.is_set():
                pass
        finally:
            self._idle.clear()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._hold_if_paused()
                if self._stop.is_set():
                    break
                sampled = self._sample()
                with self._lock:
                    self._state, record = self._learn(self._state, sampled)
                    item = (self._generation, self._state, record)
                while not self._stop.is_set():
                    try:
                        self._results.put(item, timeout=self._poll_s)
                        break
                    except queue.Full:
                        self._hold_if_paused()  # the driver may hold it without collecting
        except BaseException as e:  # raised in the driver by collect()
            if not self._stop.is_set():
                self._error = e

    def close(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)


def jit_update(
    update: Callable[[State, Batch], tuple[State, Metrics]],
    mesh: jax.sharding.Mesh | None,
    state_sharding: Any,
    batch_sharding: jax.sharding.Sharding | None,
    donate: bool = True,
) -> Callable[[State, Batch], tuple[State, Metrics]]:
    """The jitted update, the train state donated (unless ``donate`` is False): on the default
    device, or partitioned over the learner mesh (state and batch placed as given, metrics
    replicated)."""
    donated = (0,) if donate else ()
    options = xla_options.current("update")
    if mesh is None:
        return jax.jit(update, donate_argnums=donated, compiler_options=options)
    return jax.jit(
        update,
        in_shardings=(state_sharding, batch_sharding),
        out_shardings=(state_sharding, replicated(mesh)),
        donate_argnums=donated,
        compiler_options=options,
    )
