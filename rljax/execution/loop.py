"""The contract every training loop keeps: ``step(state, runner_state) -> (state, runner_state,
IterationResult)``.

A loop (``OnPolicyLoop``, ``OffPolicyLoop``, multi-agent PPO's grouped update, a population's
step over stacked trials) runs one training iteration and reports it as a typed
``IterationResult``: the env steps sampled and trained, the episodes finished, the learner
metrics per policy, the runners' lag and throughput, timers. ``Algorithm.train()`` turns it
into RLlib's result dict in one place (``rljax.execution.results.result_dict``); no loop builds
a result dict of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

import jax

from rljax.types import ActStep, Transition
from rljax.types import AgentMetrics as AgentMetrics
from rljax.types import IterationResult as IterationResult
from rljax.types import RunnerLag as RunnerLag
from rljax.types import RunnerStats as RunnerStats
from rljax.types import Timers as Timers
from rljax.utils.ids import DEFAULT_POLICY_ID

State = TypeVar("State")
RunnerState = TypeVar("RunnerState")


def single_policy(metrics: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``learner_metrics`` of a single-policy loop: its metrics under ``DEFAULT_POLICY_ID``."""
    return {DEFAULT_POLICY_ID: metrics}


# ``values -> (postprocess, update)``: a trial's learner functions of its population settings
# (numbers, or traced scalars in a population), closed over frozen parts, never an algorithm.
LearnerFactory = Callable[
    [Mapping[str, Any]], tuple[Callable[[Transition], Any], Callable[..., Any]]
]


@dataclasses.dataclass(frozen=True)
class PopulationParts:
    """What a trial gives its population to run it: the parts of its loop, as pure functions.

    Attributes:
      act_step: The acting step (``runners.acting.make_act_step``), the same for every trial.
      xla_step: The trial's EnvPool step through its XLA interface (``start_envpool``); None
        on a JAX env.
      reset_ended: The trial's same-step resets of ended sub-envs, traced; None: none.
      fragment_length: Env steps per sub-env of one rollout.
      to_env_action: Policy action -> env action, traced.
      acting_params: ``acting_params(state) -> params`` that ``act_step`` takes.
      learner_functions: ``learner_functions(values) -> (postprocess, update)``: the trial's
        post-processing and update with ``values`` of its population settings (traced
        scalars in the population's program).
      jax_env: The trial's JAX env (``rljax.env.jax_env``), the same for every trial, or None
        on EnvPool. A JAX env's steps are ``vmap``ped over the trials with the policies.
      steps_per_iteration: Training steps (rollout and update) per iteration, as the trial's
        own run has them (``execution.on_policy.steps_per_iteration``), the same for every
        trial.
      rollout: On a JAX env, the whole rollout as the trial's own run has it,
        ``rollout(params, runner_state) -> (runner_state, Transition [T, N])`` (traced; the
        population ``vmap``s it over the trials, envs included): a single-agent run's scan of
        its JAX env's steps, multi-agent PPO's slot rollout
        (``rljax.algorithms.ppo.multi_agent_fused``). None on EnvPool, whose steps the
        population scans itself (``xla_step``).
      report: ``report(records, timers) -> IterationResult``: the trial's own report of its
        records (``{"metrics", "episodes", "timers"}`` per training step, on the host), as
        its run's loop makes it (per-policy metrics, agents' returns); None: the
        single-policy summary (``execution.on_policy.summarize_updates``).
    """

    act_step: ActStep
    xla_step: Callable[..., Any] | None
    reset_ended: Callable[..., Any] | None
    fragment_length: int
    to_env_action: Callable[[jax.Array], jax.Array]
    acting_params: Callable[[Any], Any]
    learner_functions: LearnerFactory
    jax_env: Any = None
    steps_per_iteration: int = 1
    rollout: Callable[..., Any] | None = None
    report: Callable[..., IterationResult] | None = None


def setting_is_off(name: str, value: Any) -> bool:
    """Whether a population setting is off (None; ``grad_clip`` None or 0): it stays off in a
    population's program, and trials agree on it (``execution.population.population_key``)."""
    return value is None or (name == "grad_clip" and not value)


@runtime_checkable
class Loop(Protocol[State, RunnerState]):
    """One training iteration: ``step(state, runner_state) -> (state, runner_state, result)``.

    ``isinstance(x, Loop)`` checks only that ``x`` has a ``step``. A population's loop
    (``rljax.execution.population_loop.PopulationLoop``) steps stacked state and returns a
    ``PopulationResult``: the ``IterationResult`` of the stack, whose ``split()`` gives each
    trial's own.
    """

    def step(
        self, state: State, runner_state: RunnerState
    ) -> tuple[State, RunnerState, IterationResult]: ...


__all__ = [
    "AgentMetrics",
    "IterationResult",
    "LearnerFactory",
    "Loop",
    "PopulationParts",
    "RunnerLag",
    "RunnerStats",
    "Timers",
    "setting_is_off",
    "single_policy",
]
