"""Populations: trials that differ only in values the update reads, trained as one program.

K trials of one on-policy algorithm (PPO) whose configs are equal but for the algorithm's
``population_settings`` (learning rate, clip, entropy and value coefficients, gamma, lambda,
gradient clip, KL settings) and the seed train together: their learner states are stacked on
a leading trial axis, and one jitted program per iteration runs every trial's rollout and
update, ``vmap``ped over the trials. The settings become traced scalars of the program
(``OnPolicyAlgorithm._learner_functions``), so trials with different values share one
compilation.

Each trial keeps the EnvPool env it would have in a run of its own (same size and seed), and
the rollout steps the K envs through their XLA interface inside one ``lax.scan`` (EnvPool's
custom call has no batching rule, so the env steps are K calls while the policy and the update
are vmapped). So trial k sees the envs, initial parameters and random keys of the run
``configs[k].build_algo()`` would make, and gives the same numbers within float tolerance (the
settings are float32 values of the program rather than constants folded by the compiler, and
vmapped reductions may add in another order).

A trial that stops (its stop criterion, a scheduler) keeps its slot: its updates are masked
out and its results freeze. When fewer than half of the slots are active, and the time the
smaller program should save exceeds its compilation, the population is rebuilt with the active
ones, so K trials compile at most ``1 + log2(K)`` times.

Population-based training changes trials in place (``exploit``): chosen trials take the
learner state (parameters, optimizer state, ...) of others and new values of the settings, by
a gather on the device; nothing recompiles.

Example::

    configs = [PPOConfig().environment("CartPole-v1").training(lr=lr) for lr in (1e-3, 3e-4)]
    population = Population(configs)
    for _ in range(10):
        results = population.train()  # one RLlib result dict per trial
    population.stop()
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp

from rljax.env.vector import envpool_result, resolve_env
from rljax.execution.loop import IterationResult, PopulationParts, Timers, single_policy
from rljax.execution.on_policy import summarize_updates
from rljax.runners.acting import episode_arrays
from rljax.types import ActorState, ActStep, StepResult, Transition
from rljax.utils.errors import ConfigError
from rljax.utils.schedules import Schedule, num_points, stack_settings

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.algorithms.on_policy import OnPolicyAlgorithm


class PopulationRunnerState(NamedTuple):
    """The rollout's carry: one EnvPool handle per trial, and per-trial actor state, last
    result and acting key stacked on a leading trial axis [K]."""

    handles: tuple[Any, ...]
    actor: ActorState
    result: StepResult
    key: jax.Array


def _stack(trees: Sequence[Any]) -> Any:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


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
            result = _stack(results)
            return PopulationRunnerState(tuple(handles), actor, result, key), transition

        rs, traj = jax.lax.scan(body, rs, None, length=length)
        return rs, jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), traj)

    return rollout


def population_key(config: AlgorithmConfig) -> str:
    """What trials of one population share: the config without the algorithm's population
    settings (only whether each is on) and the seed. Equal keys can train together."""
    settings = getattr(config.algo_class, "population_settings", ())
    d = config.to_dict()
    d.pop("seed", None)
    for name in getattr(config.algo_class, "population_state_settings", ()):
        d.pop(name, None)
    for name in settings:
        value = d.pop(name, None)
        d[f"{name} is on"] = not (value is None or (name == "grad_clip" and not value))
    return json.dumps(d, sort_keys=True, default=repr)


def population_refusal(configs: Sequence[AlgorithmConfig]) -> str | None:
    """Why ``configs`` cannot train as one population (None if they can). Checks only the
    configs (nothing is built): one algorithm that trains populations, single-agent, an
    EnvPool env on the fused path (``num_env_runners=0``), one learner, and configs equal
    but for the population settings and the seed."""
    if not configs:
        return "no trials"
    first = configs[0]
    algo = first.algo_class
    if not getattr(algo, "population_settings", ()):
        return f"{first.algo_name} trains no populations (PPO does)"
    if first.is_multi_agent:
        return "multi-agent configs train one trial at a time"
    if first.num_env_runners != 0:
        return (
            f"num_env_runners={first.num_env_runners}: populations run on the fused EnvPool "
            "path (num_env_runners=0)"
        )
    if first.num_learners > 1:
        return f"num_learners={first.num_learners}: populations train on one device"
    if first.env_to_module_connector is not None:
        return "configs with env_to_module connectors train one trial at a time"
    if first.callbacks_class is not None or any(
        getattr(first, name) is not None
        for name in first.SETTINGS
        if name.startswith("callbacks_on_")
    ):
        return "configs with callbacks train one trial at a time (their hooks run per trial)"
    try:
        spec = resolve_env(first.env, first.env_config)
    except Exception as e:  # the trial itself reports a bad env
        return f"the env does not resolve ({e})"
    if spec.backend != "envpool":
        return f"env {first.env!r} is not an EnvPool env; populations step EnvPool envs in jit"
    key = population_key(first)
    for i, c in enumerate(configs[1:], 1):
        if c.algo_class is not algo:
            return f"trial {i} is {c.algo_name}, trial 0 {first.algo_name}"
        if population_key(c) != key:
            a, b = json.loads(key), json.loads(population_key(c))
            differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            return f"trial {i} differs from trial 0 in settings the program's shape depends on: {differ}"
    return None


class Population:
    """Trains trials that differ only in population settings and seed as one jitted program.

    Args:
      configs: One config per trial; ``population_refusal(configs)`` must be None.
      checkpoints: Per trial, a checkpoint of its own run to continue from, or None.
      compaction: When the program is rebuilt without stopped trials (once fewer than half
        of its slots are active): ``"auto"`` when the time saved should pay for the
        compilation (``_worth_compacting``), ``"always"``, or ``"never"``.

    Raises:
      ConfigError: The configs cannot train as one population (saying why), or one is invalid.
    """

    def __init__(
        self,
        configs: Sequence[AlgorithmConfig],
        checkpoints: Sequence[str | os.PathLike[str] | None] | None = None,
        compaction: str = "auto",
    ):
        if compaction not in ("auto", "always", "never"):
            raise ValueError(f"compaction={compaction!r}: use 'auto', 'always' or 'never'")
        why = population_refusal(configs)
        if why is not None:
            raise ConfigError(f"these {len(configs)} trials cannot train as one population: {why}")
        if checkpoints is not None and len(checkpoints) != len(configs):
            raise ValueError(f"{len(checkpoints)} checkpoints for {len(configs)} trials")
        self.members: list[OnPolicyAlgorithm] = []
        try:
            for i, c in enumerate(configs):
                member = c.checked_algo_class()(c.copy(), population_member=True)
                self.members.append(member)
                if checkpoints is not None and checkpoints[i] is not None:
                    member.restore_from_path(checkpoints[i])  # before the states are stacked
        except BaseException:
            self.stop()
            raise
        self.active = [True] * len(self.members)
        self.compaction = compaction
        self.num_iterations = 0
        self._first_step_s, self._steps, self._steps_s = 0.0, 0, 0.0
        # A trial whose own train() raised (NonFiniteUpdateError, ...): it stops, the rest go on.
        self.errors: list[BaseException | None] = [None] * len(self.members)
        self.num_compilations = 0
        self._slots = list(range(len(self.members)))  # the members in the program, in order
        self._stacked = False
        self._build()

    @property
    def num_trials(self) -> int:
        return len(self.members)

    @property
    def values(self) -> list[dict[str, float | Schedule | None]]:
        """Each trial's current values of the population settings (a schedule as given)."""
        return [dict(v) for v in self._values]

    # ------------------------------------------------------------------ the program
    def _build(self) -> None:
        """Stacks the slots' learner and runner states and builds the jitted step."""
        members = [self.members[i] for i in self._slots]
        parts = [m.population_parts() for m in members]
        first = parts[0]
        if not self._stacked:
            self._values = [m.population_values() for m in self.members]
            # Points per setting: schedules (of any trial) as arrays of the longest one's
            # points, so trials with different schedules share the program; 1: numbers.
            self._points = {
                name: max(num_points(v[name]) for v in self._values) for name in self._values[0]
            }
            self.state = _stack([m.state for m in members])
            self.runner_state = PopulationRunnerState(
                handles=tuple(m.runner_state.handle for m in members),
                actor=_stack([m.runner_state.actor for m in members]),
                result=_stack([m.runner_state.result for m in members]),
                key=_stack([m.runner_state.key for m in members]),
            )
            self._stacked = True
        rollout = make_population_rollout(
            first.act_step,
            [p.xla_step for p in parts],
            first.fragment_length,
            first.to_env_action,
            [p.reset_ended for p in parts],
        )

        def learn(state: Any, traj: Transition, values: dict[str, Any], active: jax.Array):
            postprocess, update = first.learner_functions(values)
            new, metrics = update(state, postprocess(traj))
            new = jax.tree.map(lambda n, o: jnp.where(active, n, o), new, state)
            return new, metrics, episode_arrays(traj)

        def sample(state: Any, rs: PopulationRunnerState):
            return rollout(jax.vmap(first.acting_params)(state), rs)

        # Two programs rather than one: XLA compiles them in about two thirds of the time it
        # takes for the fused one (measured: 4.6 s against 6.7 s for 16 CartPole trials), and
        # a compilation is what a shrinking population pays; the extra dispatch is negligible.
        k = len(members)
        self._sample = jax.jit(sample, donate_argnums=(1,))
        self._learn = jax.jit(jax.vmap(learn), donate_argnums=(0,))
        self._fresh_program = True

        def unstack(tree: Any) -> list[Any]:
            return [jax.tree.map(lambda x, i=i: x[i], tree) for i in range(k)]

        self._unstack = jax.jit(unstack)
        self._gather = jax.jit(lambda tree, idx: jax.tree.map(lambda x: x[idx], tree))
        self.num_compilations += 1

    def _slot_values(self) -> dict[str, Any]:
        """The settings of the slots as [K] float32 arrays (``SchedulePoints`` [K, P] for a
        setting some trial schedules); None for a setting that is off."""
        names = list(self._values[0])
        out: dict[str, Any] = {}
        for name in names:
            column = [self._values[i][name] for i in self._slots]
            if column[0] is None:
                out[name] = None
            else:
                out[name] = stack_settings(column, self._points[name])  # type: ignore[arg-type]
        return out

    # ------------------------------------------------------------------ training
    def train(self) -> list[dict[str, Any] | None]:
        """One iteration of every active trial: RLlib's result dict per trial (``None`` for a
        stopped one), from each trial's ``Algorithm.train()``. A trial whose ``train()``
        raises stops, its exception kept in ``errors``; a failure of the program itself raises.
        """
        if not any(self.active):
            raise RuntimeError("every trial of this population has stopped")
        start = time.perf_counter()
        active = jnp.asarray([self.active[i] for i in self._slots])
        self.runner_state, traj = self._sample(self.state, self.runner_state)
        self.state, metrics, episodes = self._learn(self.state, traj, self._slot_values(), active)
        states = self._unstack(self.state)
        host_metrics, host_episodes = jax.device_get((metrics, episodes))
        shared_s = time.perf_counter() - start
        self._time_step(shared_s)
        results: list[dict[str, Any] | None] = [None] * len(self.members)
        for slot, i in enumerate(self._slots):
            if not self.active[i]:
                continue
            member = self.members[i]
            member.state = states[slot]
            one = (
                {k: v[slot] for k, v in host_metrics.items()},
                {k: v[slot] for k, v in host_episodes.items()},
            )
            learner, returns, lens, num_valid = summarize_updates([one])
            iteration = IterationResult(
                num_env_steps_sampled=num_valid,
                num_env_steps_trained=num_valid,
                episode_returns=returns,
                episode_lens=lens,
                learner_metrics=single_policy(learner),
                timers=Timers(population_step_s=shared_s),
                shared_s=shared_s,
            )
            try:
                results[i] = member.train_from(iteration)
            except Exception as e:  # this trial's failure; the others' results stand
                self.errors[i] = e
        for i, error in enumerate(self.errors):
            if error is not None:
                self.stop_trial(i)
        return results

    def stop_trial(self, index: int) -> None:
        """Stops trial ``index``: its updates stop and it reports no more results. When fewer
        than half of the program's slots remain active, the program is rebuilt without the
        stopped ones."""
        if not self.active[index]:
            return
        self.active[index] = False
        alive = [i for i in self._slots if self.active[i]]
        if alive and 2 * len(alive) < len(self._slots) and self._worth_compacting(len(alive)):
            self._compact(alive)

    def _time_step(self, seconds: float) -> None:
        """Keeps the program's first step (compilation included) and its later steps' mean."""
        if self._fresh_program:
            self._first_step_s, self._fresh_program = seconds, False
            self._steps, self._steps_s = 0, 0.0
        else:
            self._steps += 1
            self._steps_s += seconds
        self.num_iterations += 1

    def _worth_compacting(self, alive: int) -> bool:
        """Whether rebuilding the program for ``alive`` slots should pay for its compilation.

        A step costs about ``step_s`` split evenly over the slots; the trials left are
        expected to run half as many more iterations as have run so far (cautious: trials
        tend to stop near one another). Compact when the steps saved over those iterations
        exceed the compilation, estimated by the current program's first step less a later
        one (a smaller program compiles faster). Before a later step is timed: compact.
        """
        if self.compaction == "always" or self._steps == 0:
            return self.compaction != "never"
        if self.compaction == "never":
            return False
        step_s = self._steps_s / self._steps
        compile_s = max(self._first_step_s - step_s, 0.0)
        saved = 0.5 * self.num_iterations * step_s * (1.0 - alive / len(self._slots))
        return saved > compile_s

    def _compact(self, alive: list[int]) -> None:
        positions = jnp.asarray([self._slots.index(i) for i in alive])
        dropped = [i for i in self._slots if i not in alive]
        self.state = self._gather(self.state, positions)
        rs = self.runner_state
        self.runner_state = PopulationRunnerState(
            handles=tuple(rs.handles[self._slots.index(i)] for i in alive),
            actor=self._gather(rs.actor, positions),
            result=self._gather(rs.result, positions),
            key=self._gather(rs.key, positions),
        )
        self._slots = alive
        self._build()
        for i in dropped:  # their envs are no longer stepped by the program
            self.members[i].stop()

    # ------------------------------------------------------------------ PBT
    def exploit(self, copies: dict[int, int], values: dict[int, dict[str, float]]) -> None:
        """Population-based training's exploit and explore, on the device.

        Args:
          copies: ``{trial: source trial}``: the trial takes the source's whole learner state
            (parameters, optimizer state, KL coefficient, step and key); its envs go on.
          values: ``{trial: {setting: value}}``: new values of population settings (a setting
            that is off stays off); the trial's config takes them too.
        """
        for dst, src in copies.items():
            if not (self.active[dst] and self.active[src]):
                raise ValueError(f"exploit: trials {dst} and {src} must both be active")
        if copies:
            order = list(range(len(self._slots)))
            for dst, src in copies.items():
                order[self._slots.index(dst)] = self._slots.index(src)
            self.state = self._gather(self.state, jnp.asarray(order))
            states = self._unstack(self.state)
            for slot, i in enumerate(self._slots):
                self.members[i].state = states[slot]
        for i, new in values.items():
            unknown = set(new) - set(self._values[i])
            if unknown:
                raise ValueError(
                    f"exploit: {sorted(unknown)} are not population settings "
                    f"{sorted(self._values[i])}"
                )
            for name, value in new.items():
                if self._values[i][name] is not None and value is not None:
                    points = len(value) if isinstance(value, list | tuple) else 1
                    if points > self._points[name]:
                        raise ValueError(
                            f"exploit: {name}={value} has {points} points; this population's "
                            f"program takes schedules of at most {self._points[name]}"
                        )
                    # Checkpoints say so; the setting's check normalises a schedule.
                    config = self.members[i].config
                    setattr(
                        config, name, value if isinstance(value, list | tuple) else float(value)
                    )
                    value = getattr(config, name)
                    self._values[i][name] = value

    def stop(self) -> None:
        """Closes every trial's env."""
        for m in self.members:
            m.stop()


__all__ = [
    "Population",
    "PopulationParts",
    "PopulationRunnerState",
    "make_population_rollout",
    "population_key",
    "population_refusal",
]
