"""The off-policy loop: replay inserts, the replay ratio, updates and target updates, as pure
functions built once from a frozen schedule, a replay buffer and the algorithm's learn step.

A *cycle* adds a sampled fragment ``[T, K]`` to the replay buffer in env-step order, then, once
learning has started, runs ``train_weight`` updates, each sampling a batch, calling the
algorithm's ``learn``, writing the TD errors back as priorities and moving the target networks
when they are due. On the fused EnvPool path a whole iteration is one ``lax.scan`` over cycles,
each acting with the current parameters. Nothing here knows the algorithm: it enters through
``ReplayLearner`` and ``PolicyParts``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from rljax import distributed
from rljax.execution.loop import IterationResult, Timers, single_policy
from rljax.execution.parts import Params
from rljax.replay.episode import EpisodeReplayBuffer, has_sampleable_rows
from rljax.runners.acting import episode_arrays
from rljax.runners.group import RunnerGroup
from rljax.types import FusedRunnerState, Transition
from rljax.utils.host_transfer import PackedOutputs
from rljax.utils.nonfinite import total_non_finite

# An algorithm's learner state (networks, target networks, optimizer states): a pytree that
# the loop carries in ``OffPolicyState.learner`` and hands back to the algorithm's functions.
LearnerT = TypeVar("LearnerT")
# A sampled replay batch: obs, action, reward (n-step returns), discount, next_obs, [B, ...].
Batch = dict[str, jax.Array]
Metrics = dict[str, jax.Array]
# learn(learner, batch, weights [B], key, timestep) -> (learner, td_errors [B], metrics);
# timestep: the env steps sampled so far (learning-rate schedules follow it).
LearnFn = Callable[
    [LearnerT, Batch, jax.Array, jax.Array, jax.Array], tuple[LearnerT, jax.Array, Metrics]
]


class OffPolicyState(NamedTuple):
    """Everything the jitted loop carries, besides the env runner state.

    Attributes:
      learner: The algorithm's networks, target networks and optimizer states.
      buffer: The replay buffer's state.
      key: The learner's PRNG key.
      timestep: int32, env steps sampled so far (drives schedules and learning starts).
      last_target_update: int32, ``timestep`` at the last target-network update.
      num_updates: int32, updates run so far.
    """

    learner: Any
    buffer: Any
    key: jax.Array
    timestep: jax.Array
    last_target_update: jax.Array
    num_updates: jax.Array


@dataclasses.dataclass(frozen=True)
class ReplayLearner(Generic[LearnerT]):
    """What an off-policy algorithm gives the loop besides its policy: pure functions of its
    learner state ``LearnerT`` (one type through ``init``, ``learn`` and ``update_target``).

    Attributes:
      init: The learner state to start from (networks, targets, optimizer states).
      learn: ``learn(learner, batch, weights, key, timestep) -> (learner, td_errors,
        metrics)``: one update on a replay batch with importance weights ``[B]``, at the env
        steps sampled so far.
      update_target: ``update_target(learner) -> learner``: moves the target networks.
      metric_names: The keys of ``learn``'s metrics (zeros before learning starts).
    """

    init: LearnerT
    learn: LearnFn[LearnerT]
    update_target: Callable[[LearnerT], LearnerT]
    metric_names: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ReplaySchedule:
    """The loop's settings, read from the config once when the algorithm is built.

    Attributes:
      train_weight: Updates per cycle (RLlib's train weight of ``training_intensity``).
      batch_size: Rows per sampled batch, over all learners.
      n_step: ``(low, high)``: the n of n-step returns, drawn per batch when low < high.
      gamma: The discount.
      target_update_freq: Env steps between target updates (0: every update).
      learning_starts: Env steps sampled before the first update.
    """

    train_weight: int
    batch_size: int
    n_step: tuple[int, int]
    gamma: float
    target_update_freq: int
    learning_starts: int


def make_add_fragment(buffer: EpisodeReplayBuffer) -> Callable[[Any, Transition], Any]:
    """``add(buffer_state, traj) -> buffer_state``: a [T, K] fragment in env-step order."""

    def add_fragment(buffer_state: Any, traj: Transition) -> Any:
        rows = {
            "obs": traj.obs,
            "action": traj.action,
            "reward": traj.reward,
            "terminated": traj.terminated,
            "truncated": traj.truncated,
            "valid": traj.valid,
            "env_id": traj.env_id,
        }
        if traj.present is not None:  # agent slots: only the rows of agents that acted
            rows["present"] = traj.present
        if traj.valid.shape[0] == 1:  # one env step: no loop
            return buffer.add(buffer_state, jax.tree.map(lambda x: x[0], rows))
        return jax.lax.scan(lambda b, r: (buffer.add(b, r), None), buffer_state, rows)[0]

    return add_fragment


def make_update(
    learner: ReplayLearner[Any],
    buffer: EpisodeReplayBuffer,
    schedule: ReplaySchedule,
    batch_sharding: jax.sharding.Sharding | None = None,
) -> Callable[[OffPolicyState, Any], tuple[OffPolicyState, Metrics]]:
    """``update(state, _) -> (state, metrics)``: one replay batch, learn, priorities, targets.

    ``batch_sharding``: with several learners, the batch is split over the mesh's data axis.
    """
    n_low, n_high = schedule.n_step

    def update(state: OffPolicyState, _: Any) -> tuple[OffPolicyState, Metrics]:
        key, k_n, k_sample, k_learn = jax.random.split(state.key, 4)
        if n_low == n_high:
            n: Any = n_low
        else:  # RLlib's n_step range: one n per sampled batch
            n = jax.random.randint(k_n, (), n_low, n_high + 1)
        batch, indices, weights = buffer.sample(
            state.buffer, k_sample, schedule.batch_size, n, schedule.gamma
        )
        if batch_sharding is not None:
            batch, weights = jax.lax.with_sharding_constraint((batch, weights), batch_sharding)
        # The env steps sampled so far: learning rates follow RLlib's schedules of them.
        new_learner, td, metrics = learner.learn(
            state.learner, batch, weights, k_learn, state.timestep
        )
        # A row with a non-finite TD error (a NaN reward in the data) gets the lowest priority
        # instead of poisoning the sum tree; its update step was skipped by the optimizer guard.
        td = jnp.where(jnp.isfinite(td), td, 0.0)
        buffer_state = buffer.update_priorities(state.buffer, indices, td)
        due = state.timestep - state.last_target_update >= schedule.target_update_freq
        new_learner = jax.lax.cond(due, learner.update_target, lambda x: x, new_learner)
        state = state._replace(
            learner=new_learner,
            buffer=buffer_state,
            key=key,
            last_target_update=jnp.where(due, state.timestep, state.last_target_update),
            num_updates=state.num_updates + 1,
        )
        return state, metrics

    return update


def make_learn_cycle(
    one_update: Callable[[OffPolicyState, Any], tuple[OffPolicyState, Metrics]],
    buffer: EpisodeReplayBuffer,
    schedule: ReplaySchedule,
    metric_names: tuple[str, ...],
    env_steps: Callable[[Transition], jax.Array] | None = None,
) -> Callable[[OffPolicyState, Transition], tuple[OffPolicyState, Metrics, jax.Array]]:
    """``cycle(state, traj) -> (state, metrics, started)``: adds the fragment to ``buffer``,
    then runs the cycle's ``train_weight`` calls of ``one_update`` (``make_update``; metrics
    averaged, named ``metric_names``, zeros before learning starts) if learning has started
    and the buffer has a row to sample.

    ``env_steps(traj)``: the env steps a fragment counts towards ``timestep`` (multi-agent
    slots: the env copies' steps, not the agents' rows); None: its valid rows."""
    add_fragment = make_add_fragment(buffer)
    train_weight = schedule.train_weight

    def learn(s: OffPolicyState) -> tuple[OffPolicyState, Metrics]:
        if train_weight == 1:  # one update: no loop
            return one_update(s, None)
        s, metrics = jax.lax.scan(one_update, s, None, length=train_weight)
        return s, jax.tree.map(lambda m: jnp.mean(m, axis=0), metrics)

    def skip(s: OffPolicyState) -> tuple[OffPolicyState, Metrics]:
        return s, {k: jnp.zeros((), jnp.float32) for k in metric_names}

    def cycle(state: OffPolicyState, traj: Transition) -> tuple[OffPolicyState, Metrics, jax.Array]:
        steps = jnp.sum(traj.valid.astype(jnp.int32)) if env_steps is None else env_steps(traj)
        state = state._replace(
            buffer=add_fragment(state.buffer, traj), timestep=state.timestep + steps
        )
        # Not before a row can be sampled: an empty buffer's batch would be zeros.
        started = (state.timestep >= schedule.learning_starts) & has_sampleable_rows(state.buffer)
        state, metrics = jax.lax.cond(started, learn, skip, state)
        return state, metrics, started

    return cycle


def make_fused_iteration(
    rollout: Callable[[Params, FusedRunnerState], tuple[FusedRunnerState, Transition]],
    acting_params: Callable[[OffPolicyState], Params],
    cycle: Callable[[OffPolicyState, Transition], tuple[OffPolicyState, Metrics, jax.Array]],
    num_cycles: int,
) -> Callable[[OffPolicyState, FusedRunnerState], tuple[OffPolicyState, FusedRunnerState, Any]]:
    """``iteration(state, runner_state) -> (state, runner_state, (metrics, started, episodes))``:
    ``num_cycles`` cycles of acting (the fused EnvPool rollout) and learning in one ``lax.scan``,
    each cycle's outputs stacked."""

    def body(carry: tuple[OffPolicyState, FusedRunnerState], _: Any) -> tuple[Any, Any]:
        state, rs = carry
        rs, traj = rollout(acting_params(state), rs)
        state, metrics, started = cycle(state, traj)
        return (state, rs), (metrics, started, episode_arrays(traj))

    def iteration(
        state: OffPolicyState, rs: FusedRunnerState
    ) -> tuple[OffPolicyState, FusedRunnerState, Any]:
        (state, rs), out = jax.lax.scan(body, (state, rs), None, length=num_cycles)
        return state, rs, out

    return iteration


def packed_iteration(
    iteration: Callable[[OffPolicyState, FusedRunnerState], tuple[Any, Any, Any]],
    outputs: PackedOutputs,
) -> Callable[[OffPolicyState, FusedRunnerState], tuple[Any, Any, tuple[jax.Array, ...]]]:
    """``iteration`` whose outputs, the state's update count and its count of skipped
    non-finite updates come back packed (``outputs.pack``, one transfer per dtype;
    ``OffPolicyLoop.step`` unpacks them)."""

    def packed(state: OffPolicyState, rs: FusedRunnerState) -> tuple[Any, Any, Any]:
        state, rs, out = iteration(state, rs)
        extra = (state.num_updates, total_non_finite(state))
        return state, rs, outputs.pack((out, extra))

    return packed


Cycle = Callable[[OffPolicyState, Transition], tuple[OffPolicyState, Metrics, jax.Array]]


@dataclasses.dataclass
class OffPolicyLoop:
    """One training iteration of an off-policy algorithm (a ``Loop``): ``cycles`` cycles of
    sampling a fragment and learning from the replay buffer.

    Exactly one way to sample is set: ``iteration`` (the fused EnvPool path with one learner:
    the whole iteration is one jitted program, ``make_fused_iteration``), ``sample`` (the
    jitted EnvPool rollout, off the learner mesh, then one jitted ``cycle`` per fragment on
    the mesh) or ``runners`` (runner threads; the weights are published after every cycle).

    Attributes:
      cycles: Cycles per iteration.
      train_weight: Updates per cycle once learning has started.
      batch_size: Rows of an update's batch (env steps trained per update).
      runner_params: ``runner_params(state) -> params`` the runners act with (on their device).
      iteration: ``iteration(state, runner_state) -> (state, runner_state, (metrics, started,
        episodes))``, jitted.
      cycle: ``cycle(state, traj) -> (state, metrics, started)``, jitted.
      sample: ``sample(params, runner_state) -> (runner_state, traj)``, jitted.
      runners: The runner threads.
      traj_sharding: Where a sampled fragment is placed for ``cycle`` (the mesh, replicated).
      episodes: ``episodes(traj) -> episode_arrays``, jitted.
      sample_timeout_s: The runners' sampling timeout.
    """

    cycles: int
    train_weight: int
    batch_size: int
    runner_params: Callable[[OffPolicyState], Params]
    iteration: Callable[..., Any] | None = None
    cycle: Cycle | None = None
    sample: Callable[..., Any] | None = None
    runners: RunnerGroup | None = None
    traj_sharding: jax.sharding.Sharding | None = None
    episodes: Callable[[Transition], Any] | None = None
    sample_timeout_s: float | None = None
    # ``iteration``'s packed outputs (``packed_iteration``); None: it returns them as they are.
    outputs: PackedOutputs | None = None

    def step(
        self, state: OffPolicyState, runner_state: FusedRunnerState | None
    ) -> tuple[OffPolicyState, FusedRunnerState | None, IterationResult]:
        """One iteration: ``(state, runner_state, result)`` (the ``Loop`` contract)."""
        t_start = time.perf_counter()
        host_infos: list[Any] = []
        sample_s: float | None = None
        counted: tuple[Any, Any] | None = None  # (num_updates, non-finite count) on the host
        if self.iteration is not None and self.outputs is not None:
            state, runner_state, packed = self.iteration(state, runner_state)
            (metrics, started, episodes), counted = self.outputs.unpack(jax.device_get(packed))
        elif self.iteration is not None:
            state, runner_state, (metrics, started, episodes) = self.iteration(state, runner_state)
        else:
            assert self.cycle is not None and self.episodes is not None
            outs = []
            sample_s = 0.0
            for _ in range(self.cycles):
                t0 = time.perf_counter()
                if self.sample is not None:
                    runner_state, traj = self.sample(self.runner_params(state), runner_state)
                    # Placed on the mesh, replicated; across processes each process's share
                    # joins first (rljax.distributed).
                    assert isinstance(self.traj_sharding, jax.sharding.NamedSharding)
                    assert isinstance(self.traj_sharding.mesh, jax.sharding.Mesh)
                    traj = distributed.replicated_traj(traj, self.traj_sharding.mesh)
                else:
                    assert self.runners is not None
                    group = self.runners.sample(self.sample_timeout_s)
                    traj = group.traj
                    host_infos.append(group.infos)
                sample_s += time.perf_counter() - t0
                state, m, s = self.cycle(state, traj)
                if self.runners is not None:
                    self.runners.publish(self.runner_params(state))
                outs.append((m, s, self.episodes(traj)))
            metrics, started, episodes = jax.tree.map(lambda *xs: jnp.stack(xs), *outs)
        if counted is None:
            metrics, started, episodes = jax.device_get((metrics, started, episodes))
        training_step = time.perf_counter() - t_start
        started = np.asarray(started, bool)
        learner_metrics = {
            k: float(np.mean(np.asarray(v)[started])) if started.any() else float("nan")
            for k, v in metrics.items()
        }
        num_updates = int(started.sum()) * self.train_weight
        learner_metrics["num_updates"] = float(num_updates)
        updates_lifetime = counted[0] if counted is not None else jax.device_get(state.num_updates)
        learner_metrics["num_updates_lifetime"] = float(updates_lifetime)
        done = np.asarray(episodes["done"]).reshape(-1)
        steps: list[tuple[Any, Any]] = []
        if "steps" in episodes:  # episode callbacks: each cycle's rows, in order
            for c in range(self.cycles):
                rows = jax.tree.map(lambda x, c=c: x[c], episodes["steps"])
                steps.append((rows, host_infos[c] if host_infos else None))
        result = IterationResult(
            num_env_steps_sampled=int(np.sum(episodes["num_valid"])),
            num_env_steps_trained=num_updates * self.batch_size,
            episode_returns=np.asarray(episodes["returns"]).reshape(-1)[done],
            episode_lens=np.asarray(episodes["lens"]).reshape(-1)[done],
            learner_metrics=single_policy(learner_metrics),
            timers=Timers(training_step=training_step, env_runner_sampling_timer=sample_s),
            episode_steps=tuple(steps),
            non_finite_total=int(counted[1]) if counted is not None else None,
        )
        return state, runner_state, result
