"""Populations: trials that differ only in values the update reads, trained as one program.

K trials of one on-policy algorithm (PPO) whose configs are equal but for the algorithm's
``population_settings`` (learning rate, clip, entropy and value coefficients, gamma, lambda,
gradient clip, KL settings) and the seed train together: their learner states are stacked on
a leading trial axis, and one jitted program per iteration runs every trial's rollout and
update, ``vmap``ped over the trials. The settings become traced scalars of the program
(``population_parts().learner_functions``), so trials with different values share one
compilation.

Each trial keeps the EnvPool env it would have in a run of its own (same size and seed), and
the rollout steps the K envs through their XLA interface inside one ``lax.scan`` (EnvPool's
custom call has no batching rule, so the env steps are K calls while the policy and the update
are vmapped). On a JAX env (``rljax.env.jax_env``) each trial's env states start as its own
run's, and every step of the rollout, envs included, is vmapped over the trials. So trial k sees the envs, initial parameters and random keys of the run
``configs[k].build_algo()`` would make, and gives the same numbers within float tolerance (the
settings are float32 values of the program rather than constants folded by the compiler, and
vmapped reductions may add in another order).

Multi-agent PPO on a multi-agent JAX env trains populations the same way: each trial hands its
whole slot rollout (``PopulationParts.rollout``, vmapped over the trials) and its report of
per-policy results (``PopulationParts.report``); a policy group that overrides a setting keeps
its override in every trial (``rljax.algorithms.ppo.multi_agent_fused``).

A trial that stops (its stop criterion, a scheduler) keeps its slot: its updates are masked
out and its results freeze. When fewer than half of the slots are active, and the time the
smaller program should save exceeds its compilation, the population is rebuilt with the active
ones, so K trials compile at most ``1 + log2(K)`` times.

The iteration itself is a ``Loop`` (``rljax.execution.population_loop.PopulationLoop``):
``loop.step(state, runner_state)`` steps the stacked ``PopulationState`` and
``PopulationRunnerState`` and returns a ``PopulationResult``, whose ``split()`` gives each
slot's ``IterationResult``; ``Population`` hands each to its trial's ``train_from`` and keeps
the rest: which trials are alive, compaction, exploit, stop.

On a JAX env the trial axis is split over this process's devices where the trials learn
(``learners.devices.population_devices``: its GPUs when the trials ask for one with
``num_gpus_per_learner``, else its CPU devices, several where ``XLA_FLAGS`` asks for host
devices): each device runs ``K / d`` trials, ``d`` the largest number of the devices that
divides ``K`` (16 trials on 8 GPUs: 2 each; 6 trials on 4: 2 on each of 3), as Ray Tune places
concurrent trials on GPUs of their own. The numbers are those of one device
(``population_loop``). EnvPool populations stay on one device (their envs are host calls).

Population-based training changes trials in place (``exploit``): chosen trials take the
learner state (parameters, optimizer state, ...) of others and new values of the settings, by
a gather on the device; nothing recompiles.

Example:
    ```python
    configs = [PPOConfig().environment("CartPole-v1").training(lr=lr) for lr in (1e-3, 3e-4)]
    population = Population(configs)
    for _ in range(10):
        results = population.train()  # one RLlib result dict per trial
    population.stop()
    ```
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp

from rljax.env.vector import resolve_env
from rljax.execution.loop import PopulationParts, setting_is_off
from rljax.execution.population_loop import (
    PopulationLoop,
    PopulationResult,
    PopulationRunnerState,
    PopulationState,
    make_population_rollout,
    stack,
    stack_runner_states,
)
from rljax.learners.devices import population_devices
from rljax.runners.acting import FusedRunnerState
from rljax.utils import xla_options
from rljax.utils.errors import ConfigError
from rljax.utils.jit import sharing_programs
from rljax.utils.references import user_overrides
from rljax.utils.schedules import Schedule, num_points, stack_settings

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.algorithms.on_policy import OnPolicyAlgorithm
    from rljax.algorithms.ppo.multi_agent import MultiAgentPPO


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
        d[f"{name} is on"] = not setting_is_off(name, value)
    return json.dumps(d, sort_keys=True, default=repr)


def population_refusal(configs: Sequence[AlgorithmConfig]) -> str | None:
    """Why ``configs`` cannot train as one population (None if they can): one algorithm that
    trains populations, an EnvPool or JAX env on the fused path (``num_env_runners=0``; a
    multi-agent config's env must be a multi-agent JAX env whose agents share their spaces,
    built once to look), one learner, and configs equal but for the population settings and
    the seed. Nothing else is built."""
    if not configs:
        return "no trials"
    first = configs[0]
    algo = first.algo_class
    if not getattr(algo, "population_settings", ()):
        return f"{first.algo_name} trains no populations (PPO does)"
    multi = None  # the class that trains a multi-agent config
    if first.is_multi_agent:
        multi = algo.multi_agent_class() if hasattr(algo, "multi_agent_class") else None
        if not getattr(multi, "population_settings", ()):
            return f"multi-agent {first.algo_name} configs train one trial at a time"
    if "training_step" in user_overrides(multi or algo):
        return (
            f"{(multi or algo).__name__}'s own training_step() runs in its own train(); its "
            "trials train one at a time"
        )
    if first.num_env_runners != 0:
        return (
            f"num_env_runners={first.num_env_runners}: populations run on the fused path "
            "(num_env_runners=0)"
        )
    if first.num_learners > 1:
        return (
            f"num_learners={first.num_learners}: a population trains each trial on one device "
            "and, on a JAX env, splits its trials over the local devices instead (as Tune "
            "places trials on GPUs of their own); set num_learners=1"
        )
    if first.env_to_module_connector is not None:
        return "configs with env_to_module connectors train one trial at a time"
    if first.batch_mode == "complete_episodes":
        return (
            "batch_mode='complete_episodes' trains one trial at a time (its batches of whole "
            "episodes are gathered on the host)"
        )
    if getattr(first, "learner_class", None) is not None:
        # The program's update is one trial's: its learner reads that trial's config (its lr,
        # its coefficients), which would then hold for every trial.
        return (
            "configs with a learner_class train one trial at a time (a learner is built from "
            "its own trial's config)"
        )
    if first.callbacks_class is not None or any(
        getattr(first, name) is not None
        for name in first.SETTINGS
        if name.startswith("callbacks_on_")
    ):
        return "configs with callbacks train one trial at a time (their hooks run per trial)"
    key = population_key(first)
    for i, c in enumerate(configs[1:], 1):
        if c.algo_class is not algo:
            return f"trial {i} is {c.algo_name}, trial 0 {first.algo_name}"
        if population_key(c) != key:
            a, b = json.loads(key), json.loads(population_key(c))
            differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            return f"trial {i} differs from trial 0 in settings the program's shape depends on: {differ}"
    if multi is not None:  # the env is built to look, after the cheap checks
        return multi.population_env_refusal(first)
    try:
        spec = resolve_env(first.env, first.env_config)
    except Exception as e:  # the trial itself reports a bad env
        return f"the env does not resolve ({e})"
    if spec.backend not in ("envpool", "jax"):
        return (
            f"env {first.env!r} is neither an EnvPool env nor a JAX env; populations step "
            "their envs inside the program"
        )
    return None


def spread_devices(num_trials: int, devices: Sequence[jax.Device]) -> list[jax.Device]:
    """The first ``d`` of ``devices`` that ``num_trials`` trials are split over: ``d`` the
    largest count up to ``len(devices)`` that divides ``num_trials`` (every device runs as many
    trials; 16 trials on 8 devices: 8, on 6: 4; 7 trials: 1)."""
    d = max(n for n in range(1, max(len(devices), 1) + 1) if num_trials % n == 0)
    return list(devices[:d])


class Population:
    """Trains trials that differ only in population settings and seed as one jitted program.

    Its ``loop`` (a ``PopulationLoop``) steps the stacked ``state`` and ``runner_state``;
    the population does the Tune-facing work around it: which trials are alive and which
    slot of the loop each has, handing each trial its ``IterationResult`` (``train_from``),
    stopping trials and compacting the program, and population-based training's exploit.

    Args:
      configs: One config per trial; ``population_refusal(configs)`` must be None.
      checkpoints: Per trial, a checkpoint of its own run to continue from, or None.
      compaction: When the program is rebuilt without stopped trials (once fewer than half
        of its slots are active): ``"auto"`` when the time saved should pay for the
        compilation (``_worth_compacting``), ``"always"``, or ``"never"``.
      devices: The devices a JAX env's trials are split over (``spread_devices``); None:
        this process's devices where the trials learn (``learners.devices.population_devices``:
        its GPUs when the trials ask for one, else its CPU devices).

    Attributes:
      members: The trials' algorithms (built with ``population_member=True``), by index.
      active: Per trial, whether it still trains.
      errors: Per trial, the exception its own ``train_from`` raised (it stopped), or None.
      loop: The ``PopulationLoop`` of the current slots (rebuilt by a compaction).
      state: The slots' ``PopulationState`` (learner states, settings, active mask).
      runner_state: The slots' ``PopulationRunnerState``.
      num_compilations: Loops built so far (each compiles its programs once).

    Raises:
      ConfigError: The configs cannot train as one population (saying why), or one is invalid.
    """

    def __init__(
        self,
        configs: Sequence[AlgorithmConfig],
        checkpoints: Sequence[str | os.PathLike[str] | None] | None = None,
        compaction: str = "auto",
        devices: Sequence[jax.Device] | None = None,
    ):
        if compaction not in ("auto", "always", "never"):
            raise ValueError(f"compaction={compaction!r}: use 'auto', 'always' or 'never'")
        why = population_refusal(configs)
        if why is not None:
            raise ConfigError(f"these {len(configs)} trials cannot train as one population: {why}")
        if checkpoints is not None and len(checkpoints) != len(configs):
            raise ValueError(f"{len(checkpoints)} checkpoints for {len(configs)} trials")
        if devices is None:  # before anything is built: it may refuse the trials' settings
            devices = population_devices(configs[0].num_gpus_per_learner)
        self.devices = list(devices)
        self.members: list[OnPolicyAlgorithm | MultiAgentPPO] = []
        try:
            # The trials are alike but for values their one-shot programs take as arguments
            # (population_refusal above): they share those programs (a JAX env's first step).
            with sharing_programs():
                for c in configs:
                    self.members.append(c.checked_algo_class()(c.copy(), population_member=True))
            paths = checkpoints if checkpoints is not None else [None] * len(configs)
            for member, path in zip(self.members, paths, strict=True):
                if path is not None:
                    member.restore_from_path(path)  # before the states are stacked
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
        self._values = [m.population_values() for m in self.members]
        # Points per setting: schedules (of any trial) as arrays of the longest one's points,
        # so trials with different schedules share the program; 1: numbers.
        self._points = {
            name: max(num_points(v[name]) for v in self._values) for name in self._values[0]
        }
        self.state = PopulationState(
            learner=stack([m.state for m in self.members]),
            settings=self._slot_settings(),
            active=self._active_mask(),
        )
        # Its envs are stepped inside the program, vmapped (as population_parts() tells).
        self._jax_env = self.members[0].population_parts().jax_env is not None
        self.runner_state = stack_runner_states(
            [m.runner_state for m in self.members], jax_env=self._jax_env
        )
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
        """Builds the loop of the current slots (its programs compile on its first step)."""
        parts = [self.members[i].population_parts() for i in self._slots]
        # The programs' compiler options (the first trial's setting): vmapped over the trials,
        # so none under "auto" (rljax.utils.xla_options), a dict as given.
        stacked = jax.eval_shape(jax.vmap(parts[0].acting_params), self.state.learner)
        setting = self.members[self._slots[0]].config.xla_cpu_options
        options = xla_options.resolve(setting, stacked, stacked=True)
        devices = spread_devices(len(self._slots), self.devices) if self._jax_env else None
        self.loop = PopulationLoop(parts, options, devices)
        self.state = self.loop.place(self.state)
        self.runner_state = self.loop.place(self.runner_state)
        self._fresh_program = True
        self.num_compilations += 1

    @property
    def num_devices(self) -> int:
        """The devices the program's trial axis is split over (1: not split)."""
        sharding = self.loop.sharding
        return 1 if sharding is None else len(sharding.device_set)

    def _slot_settings(self) -> dict[str, Any]:
        """The settings of the slots as [K] float32 arrays (``SchedulePoints`` [K, P] for a
        setting some trial schedules); None for a setting that is off."""
        out: dict[str, Any] = {}
        for name in self._values[0]:
            column = [self._values[i][name] for i in self._slots]
            if column[0] is None:
                out[name] = None
            else:
                out[name] = stack_settings(column, self._points[name])  # type: ignore[arg-type]
        return out

    def _active_mask(self) -> Any:
        """Whether each slot's trial is active, bool [K]."""
        return jnp.asarray([self.active[i] for i in self._slots])

    # ------------------------------------------------------------------ training
    def train(self) -> list[dict[str, Any] | None]:
        """One iteration of every active trial: RLlib's result dict per trial (``None`` for a
        stopped one), from each trial's ``Algorithm.train()``. A trial whose ``train()``
        raises stops, its exception kept in ``errors``; a failure of the program itself raises.
        """
        if not any(self.active):
            raise RuntimeError("every trial of this population has stopped")
        self.state, self.runner_state, result = self.loop.step(self.state, self.runner_state)
        self._time_step(result.shared_s)
        states = self.loop.split(self.state.learner)
        # A JAX env's states are the trial's too: its checkpoints save them (exact resume).
        runners = self.loop.split(self.runner_state) if self._jax_env else None
        results: list[dict[str, Any] | None] = [None] * len(self.members)
        for slot, (i, iteration) in enumerate(zip(self._slots, result.split(), strict=True)):
            if iteration is None:  # a stopped trial (the mask mirrors ``active``)
                continue
            member = self.members[i]
            member.state = states[slot]
            if runners is not None:
                member.runner_state = FusedRunnerState(*runners[slot])
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
        self.state = self.state._replace(active=self.loop.place(self._active_mask()))
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
        positions = [self._slots.index(i) for i in alive]
        dropped = [i for i in self._slots if i not in alive]
        self.state, self.runner_state = self.loop.take(self.state, self.runner_state, positions)
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
            learner = self.loop.gather(self.state.learner, order)
            self.state = self.state._replace(learner=learner)
            for slot, state in enumerate(self.loop.split(learner)):
                self.members[self._slots[slot]].state = state
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
                    # Checkpoints say so; the setting's check normalises a schedule. A built
                    # algorithm's config is read-only: the trial gets a changed copy.
                    config = self.members[i].config.copy()
                    setattr(
                        config, name, value if isinstance(value, list | tuple) else float(value)
                    )
                    config.freeze()
                    self.members[i].config = config
                    value = getattr(config, name)
                    self._values[i][name] = value
        if values:
            self.state = self.state._replace(settings=self.loop.place(self._slot_settings()))

    def stop(self) -> None:
        """Closes every trial's env."""
        for m in self.members:
            m.stop()


__all__ = [
    "Population",
    "PopulationLoop",
    "PopulationParts",
    "PopulationResult",
    "PopulationRunnerState",
    "PopulationState",
    "make_population_rollout",
    "population_key",
    "population_refusal",
    "spread_devices",
]
