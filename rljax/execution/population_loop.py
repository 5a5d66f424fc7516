"""A population's iteration as a ``Loop``: one step of K stacked trials, vmapped.

``PopulationLoop.step(state, runner_state) -> (state, runner_state, PopulationResult)`` keeps
the loop contract (``rljax.execution.loop.Loop``) over stacked state:

- ``state`` is a ``PopulationState``: the trials' learner states stacked on a leading trial
  axis [K], the values of their population settings as [K] arrays (``SchedulePoints``
  [K, P] for a schedule), and the ``active`` mask [K] (a stopped trial's update is masked out).
- ``runner_state`` is a ``PopulationRunnerState``: one EnvPool handle per trial (on a JAX env,
  the trials' env states stacked [K]), and the actors' state, last step result and acting key
  stacked [K].
- The result is a ``PopulationResult``: an ``IterationResult`` of the stack as a whole (env
  steps and episodes of its active trials together; learner metrics with a leading axis over
  the active trials), whose ``trials`` holds each slot's own ``IterationResult`` (None for a
  stopped slot). ``split()`` returns them; each is what the trial's ``train_from`` takes, and is
  the ``IterationResult`` a run of its own would report for the same iteration.

The loop knows slots (positions on the trial axis), not trials: which trial sits in which slot,
which stop, compaction and population-based training are ``Population``'s
(``rljax.execution.population``), which changes the stacked state through the loop's public
``gather``, ``take`` and ``split``.

On a JAX env with several devices (``devices``), the trial axis is split over them
(``jax.sharding``, one mesh axis ``"trials"``): each device steps and trains its own trials'
envs and networks, as Ray Tune places concurrent trials on GPUs of their own. No trial's
numbers depend on another's, so the rollout and the update need no communication between the
devices, ``split`` hands each trial's state out on the device that holds it, and each trial
computes what it computes on one device (``jax_threefry_partitionable``: its keys are the
same wherever it runs). Only PBT's exploit (``gather``) copies a trial's state to another
device.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from rljax.env.vector import envpool_result
from rljax.execution.loop import IterationResult, PopulationParts, Timers, single_policy
from rljax.execution.on_policy import summarize_updates
from rljax.runners.acting import FusedRunnerState, episode_arrays
from rljax.types import ActorState, ActStep, StepResult, Transition
from rljax.utils import xla_options


class PopulationRunnerState(NamedTuple):
    """The rollout's carry: one EnvPool handle per trial (a tuple; on a JAX env the trials'
    env states, stacked [K]), and per-trial actor state, last result and acting key stacked on
    a leading trial axis [K]."""

    handles: Any
    actor: ActorState
    result: StepResult
    key: jax.Array


class PopulationState(NamedTuple):
    """What a population's loop steps: its trials' learner states and settings, stacked.

    Attributes:
      learner: The trials' learner states stacked on a leading trial axis [K].
      settings: Per population setting, the trials' values: [K] float32, ``SchedulePoints``
        [K, P] for a setting some trial schedules, None for a setting that is off.
      active: bool [K]: False for a stopped trial, whose learner state the step keeps.
    """

    learner: Any
    settings: dict[str, Any]
    active: jax.Array


@dataclasses.dataclass(frozen=True)
class PopulationResult(IterationResult):
    """A population's iteration: the ``IterationResult`` of the stack, and each slot's own.

    The inherited fields describe the stack's active trials together: env steps sampled and
    trained summed, episodes concatenated, ``learner_metrics`` per policy with each metric an
    array over the active slots (in slot order), the shared step's time in ``timers`` and
    ``shared_s``.

    Attributes:
      trials: Per slot, the trial's ``IterationResult`` (None for a stopped slot).
    """

    trials: tuple[IterationResult | None, ...] = ()

    def split(self) -> tuple[IterationResult | None, ...]:
        """Per slot, the ``IterationResult`` its trial's ``train_from`` takes (None: stopped)."""
        return self.trials

    @classmethod
    def of(cls, trials: Sequence[IterationResult | None], shared_s: float) -> PopulationResult:
        """The stack's result of its slots' ``trials``, each None or its own result."""
        ran = [t for t in trials if t is not None]
        empty = np.zeros((0,), np.float32)
        metrics: dict[str, Any] = {}
        if ran:  # per policy (a multi-agent trial's every policy), per metric
            metrics = {
                pid: {
                    k: np.stack([np.asarray(t.learner_metrics[pid][k]) for t in ran]) for k in names
                }
                for pid, names in ran[0].learner_metrics.items()
            }
        return cls(
            num_env_steps_sampled=sum(t.num_env_steps_sampled for t in ran),
            num_env_steps_trained=sum(t.num_env_steps_trained for t in ran),
            episode_returns=np.concatenate([t.episode_returns for t in ran]) if ran else empty,
            episode_lens=np.concatenate([t.episode_lens for t in ran]) if ran else empty,
            learner_metrics=metrics,
            timers=Timers(population_step_s=shared_s),
            shared_s=shared_s,
            trials=tuple(trials),
        )


def stack(trees: Sequence[Any]) -> Any:
    """The trees stacked leaf by leaf on a new leading axis."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def stack_runner_states(
    runner_states: Sequence[Any], jax_env: bool = False
) -> PopulationRunnerState:
    """The trials' fused runner states (each with ``handle``, ``actor``, ``result``, ``key``)
    as one ``PopulationRunnerState``; ``jax_env``: the handles are JAX env states, stacked."""
    handles = [rs.handle for rs in runner_states]
    return PopulationRunnerState(
        handles=stack(handles) if jax_env else tuple(handles),
        actor=stack([rs.actor for rs in runner_states]),
        result=stack([rs.result for rs in runner_states]),
        key=stack([rs.key for rs in runner_states]),
    )


def keep_split(tree: Any, sharding: jax.sharding.Sharding | None) -> Any:
    """Inside a program: ``tree``'s stacked arrays keep their trial axis split as
    ``sharding`` (a ``NamedSharding``) splits it, so a step's outputs are laid out as its inputs
    and nothing recompiles; unchanged for any other sharding."""
    if not isinstance(sharding, NamedSharding):
        return tree
    return jax.tree.map(
        lambda x: jax.lax.with_sharding_constraint(x, sharding) if jnp.ndim(x) else x, tree
    )


def make_population_rollout(
    act_step: ActStep,
    xla_steps: Sequence[Callable[..., Any]],
    length: int,
    to_env_action: Callable[[jax.Array], jax.Array],
    reset_endeds: Sequence[Callable[..., Any] | None] | None = None,
) -> Callable[[Any, PopulationRunnerState], tuple[PopulationRunnerState, Transition]]:
    """``rollout(params [K], runner_state) -> (runner_state, Transition [K, length, N])``.

    Each env step runs the K trials' policies as one vmapped ``act_step`` and steps trial k's
    EnvPool with its own actions; trial k's keys split as a run of its own splits its key.
    ``reset_endeds``: each trial's same-step resets (``vector.envpool_reset_ended``), as its
    own run has them.
    """
    resets = list(reset_endeds) if reset_endeds is not None else [None] * len(xla_steps)

    def rollout(params: Any, rs: PopulationRunnerState) -> tuple[PopulationRunnerState, Transition]:
        def body(carry: PopulationRunnerState, _: Any) -> tuple[PopulationRunnerState, Any]:
            keys = jax.vmap(jax.random.split)(carry.key)  # [K, 2, key]
            key, sub = keys[:, 0], keys[:, 1]
            action, actor, transition = jax.vmap(act_step)(params, sub, carry.actor, carry.result)
            env_action = jax.vmap(to_env_action)(action)
            handles, results = [], []
            for k, xla_step in enumerate(xla_steps):
                handle, (obs, rew, term, trunc, info) = xla_step(
                    carry.handles[k], env_action[k], carry.result.env_id[k]
                )
                handles.append(handle)
                results.append(
                    envpool_result(obs, rew, term, trunc, info, xp=jnp, reset_ended=resets[k])
                )
            result = stack(results)
            return PopulationRunnerState(tuple(handles), actor, result, key), transition

        rs, traj = jax.lax.scan(body, rs, None, length=length)
        return rs, jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), traj)

    return rollout


def make_vmapped_rollout(
    trial_rollout: Callable[..., Any],
) -> Callable[[Any, PopulationRunnerState], tuple[PopulationRunnerState, Transition]]:
    """``rollout(params [K], runner_state) -> (runner_state, Transition [K, T, ...])``: a
    trial's own JAX-env rollout (``PopulationParts.rollout``, ``rollout(params, runner_state)
    -> (runner_state, Transition [T, ...])``) ``vmap``ped over the trials, envs included, so
    trial k's envs, actions and keys are those of its own run."""
    step = jax.vmap(trial_rollout)

    def rollout(params: Any, rs: PopulationRunnerState) -> tuple[PopulationRunnerState, Transition]:
        carry, traj = step(params, FusedRunnerState(rs.handles, rs.actor, rs.result, rs.key))
        return PopulationRunnerState(carry.handle, carry.actor, carry.result, carry.key), traj

    return rollout


class PopulationLoop:
    """One iteration of K stacked trials (a ``Loop`` over ``PopulationState`` and
    ``PopulationRunnerState``): every slot's rollout, then every slot's postprocess and
    update, vmapped over the trial axis; ``steps_per_iteration`` times when the trials' runs
    take several training steps per iteration (RLlib's ``min_sample_timesteps_per_iteration``),
    the steps dispatched in turn and their outputs fetched once.

    Two jitted programs rather than one: XLA compiles them in about two thirds of the time it
    takes for the fused one (measured: 4.6 s against 6.7 s for 16 CartPole trials), and a
    compilation is what a shrinking population pays; the extra dispatch is negligible.

    Args:
      parts: Per slot, its trial's ``PopulationParts`` (``population_parts()``); the acting
        step, rollout length, action conversion and learner functions are the first slot's
        (equal for every trial of a population), the EnvPool steps and resets each slot's own.
      options: The XLA compiler options of the rollout (``"rollout"``) and the update
        (``"update"``), as ``rljax.utils.xla_options.resolve`` gives them; None: XLA's
        defaults.
      devices: A JAX env's devices: those the trial axis is split over (K a multiple of
        their number), or the one device the population runs on; None: where the states are
        (an EnvPool population's only choice). ``place`` puts stacked state there.

    Attributes:
      num_slots: K, the length of the trial axis.
      sharding: The trial axis' ``NamedSharding`` over ``devices``, the one device's
        ``SingleDeviceSharding``, or None (``devices`` None).
      steps_per_iteration: Training steps per ``step`` (the first slot's parts'; equal for
        every trial).
      xla_options: The compiler options the programs were built with, by kind.
      sample: The jitted rollout, ``sample(learner [K], runner_state) -> (runner_state,
        Transition [K, T, N])``; donates the runner state.
      learn: The jitted update, ``learn(learner [K], traj, settings [K], active [K]) ->
        (learner, metrics [K], episode arrays [K])``; donates the learner state.
    """

    def __init__(
        self,
        parts: Sequence[PopulationParts],
        options: Mapping[str, xla_options.Options | None] | None = None,
        devices: Sequence[jax.Device] | None = None,
    ):
        if not parts:
            raise ValueError("a population loop needs at least one slot's parts, got none")
        first = parts[0]
        k = len(parts)
        self.jax_env = first.jax_env is not None
        self.sharding: jax.sharding.Sharding | None = None
        if devices is not None and not self.jax_env:
            raise ValueError(
                "devices: an EnvPool population runs where its members' envs and states are "
                "(its envs are host calls); only a JAX env's trials are placed or split"
            )
        if devices is not None and len(devices) == 1:
            self.sharding = jax.sharding.SingleDeviceSharding(devices[0])
        elif devices is not None and len(devices) > 1:
            if k % len(devices):
                raise ValueError(
                    f"{k} trials over {len(devices)} devices: each device must run as many "
                    "trials (spread_devices picks how many devices)"
                )
            mesh = Mesh(np.asarray(list(devices)), ("trials",))
            self.sharding = NamedSharding(mesh, PartitionSpec("trials"))
        if self.jax_env:
            assert first.rollout is not None, "a JAX-env trial without its rollout"
            rollout = make_vmapped_rollout(first.rollout)
        else:
            steps = [p.xla_step for p in parts]
            assert all(step is not None for step in steps), "an EnvPool trial without its step"
            rollout = make_population_rollout(
                first.act_step,
                cast(list[Callable[..., Any]], steps),
                first.fragment_length,
                first.to_env_action,
                [p.reset_ended for p in parts],
            )

        def learn(state: Any, traj: Transition, values: dict[str, Any], active: jax.Array):
            postprocess, update = first.learner_functions(values)
            new, metrics = update(state, postprocess(traj))
            new = jax.tree.map(lambda n, o: jnp.where(active, n, o), new, state)
            return new, metrics, episode_arrays(traj)

        sharding = self.sharding

        def sample(state: Any, rs: PopulationRunnerState):
            return keep_split(rollout(jax.vmap(first.acting_params)(state), rs), sharding)

        def learn_all(state: Any, traj: Transition, values: dict[str, Any], active: jax.Array):
            return keep_split(jax.vmap(learn)(state, traj, values, active), sharding)

        def unstack(tree: Any) -> list[Any]:
            n = jax.tree.leaves(tree)[0].shape[0]  # K, or one device's share of it
            return [jax.tree.map(lambda x, i=i: x[i], tree) for i in range(n)]

        self.num_slots = k
        self.steps_per_iteration = first.steps_per_iteration
        # Each slot's own report of its records (multi-agent PPO's), or None: the summary.
        self._reports = [p.report for p in parts]
        self.xla_options = options = (
            dict.fromkeys(xla_options.KINDS) if options is None else options
        )
        self.sample = jax.jit(sample, donate_argnums=(1,), compiler_options=options.get("rollout"))
        self.learn = jax.jit(learn_all, donate_argnums=(0,), compiler_options=options.get("update"))
        self._unstack = jax.jit(unstack)
        self._gather = jax.jit(lambda tree, idx: jax.tree.map(lambda x: x[idx], tree))

    def place(self, tree: Any) -> Any:
        """Stacked state (a ``PopulationState``, ``PopulationRunnerState`` or part of one) laid
        out for this loop: its trial axis split over the devices, or on its one device;
        unchanged without ``devices``."""
        if self.sharding is None:
            return tree
        sharding, split = self.sharding, isinstance(self.sharding, NamedSharding)
        return jax.tree.map(
            lambda x: jax.device_put(x, sharding) if jnp.ndim(x) or not split else x, tree
        )

    def step(
        self, state: PopulationState, runner_state: PopulationRunnerState
    ) -> tuple[PopulationState, PopulationRunnerState, PopulationResult]:
        """One iteration of every slot: the new stacked states and the ``PopulationResult``
        (each active slot's ``IterationResult`` in ``trials``; a stopped slot's learner state
        is kept and its entry is None)."""
        start = time.perf_counter()
        learner, outputs = state.learner, []
        # The training steps are dispatched one after another and fetched once, at the end.
        for _ in range(self.steps_per_iteration):
            runner_state, traj = self.sample(learner, runner_state)
            learner, metrics, episodes = self.learn(learner, traj, state.settings, state.active)
            outputs.append((metrics, episodes))
        host, active = jax.device_get((outputs, state.active))
        shared_s = time.perf_counter() - start
        trials: list[IterationResult | None] = []
        for slot in range(self.num_slots):
            if not active[slot]:
                trials.append(None)
                continue
            report = self._reports[slot]
            if report is not None:
                records = [
                    {
                        "metrics": jax.tree.map(lambda x, s=slot: x[s], m),
                        "episodes": jax.tree.map(lambda x, s=slot: x[s], e),
                        "timers": {},
                    }
                    for m, e in host
                ]
                mine_result = report(records, Timers(population_step_s=shared_s))
                trials.append(dataclasses.replace(mine_result, shared_s=shared_s))
                continue
            mine = [
                ({k: v[slot] for k, v in m.items()}, {k: v[slot] for k, v in e.items()})
                for m, e in host
            ]
            learner_metrics, returns, lens, num_valid = summarize_updates(mine)
            trials.append(
                IterationResult(
                    num_env_steps_sampled=num_valid,
                    num_env_steps_trained=num_valid,
                    episode_returns=returns,
                    episode_lens=lens,
                    learner_metrics=single_policy(learner_metrics),
                    timers=Timers(population_step_s=shared_s),
                    shared_s=shared_s,
                )
            )
        return state._replace(learner=learner), runner_state, PopulationResult.of(trials, shared_s)

    def split(self, tree: Any) -> list[Any]:
        """A stacked tree (a ``PopulationState``'s ``learner``, ...) as one tree per slot, each
        on the device that holds the slot: with the trial axis split, every device's shard is
        split where it is, so no trial's state is copied to another device."""
        if not isinstance(self.sharding, NamedSharding):
            return self._unstack(tree)
        leaves, treedef = jax.tree.flatten(tree)
        shards = []  # per leaf, its shards in the order of the trial axis
        for leaf in leaves:
            mine = sorted(leaf.addressable_shards, key=lambda sh: sh.index[0].start or 0)
            if len(mine) != len(self.sharding.device_set) or mine[0].index[0] == slice(None):
                return self._unstack(tree)  # not split on the trial axis (not the loop's state)
            shards.append(mine)
        out: list[Any] = []
        for part in range(len(shards[0]) if shards else 0):
            local = jax.tree.unflatten(treedef, [leaf_shards[part].data for leaf_shards in shards])
            out += self._unstack(local)
        return out

    def gather(self, tree: Any, positions: Sequence[int] | jax.Array) -> Any:
        """A stacked tree's slots at ``positions`` (on the devices), laid out as this loop's
        state: ``out[j] = tree[positions[j]]``."""
        return self.place(self._gather(tree, jnp.asarray(positions)))

    def take(
        self,
        state: PopulationState,
        runner_state: PopulationRunnerState,
        positions: Sequence[int],
    ) -> tuple[PopulationState, PopulationRunnerState]:
        """The stacked states of the slots at ``positions`` only, in that order: what a loop
        built from those slots' parts steps (a compaction)."""
        idx = jnp.asarray(positions)
        if self.jax_env:
            handles = self._gather(runner_state.handles, idx)
        else:
            handles = tuple(runner_state.handles[p] for p in positions)
        return self._gather(state, idx), PopulationRunnerState(
            handles=handles,
            actor=self._gather(runner_state.actor, idx),
            result=self._gather(runner_state.result, idx),
            key=self._gather(runner_state.key, idx),
        )


__all__ = [
    "PopulationLoop",
    "PopulationResult",
    "PopulationRunnerState",
    "PopulationState",
    "make_population_rollout",
    "make_vmapped_rollout",
    "stack",
    "stack_runner_states",
]
