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
from typing import Any, NamedTuple, Protocol, TypeVar

import jax
import numpy as np

from rljax.core import DEFAULT_POLICY_ID
from rljax.runners.acting import ActStep, Transition

State = TypeVar("State")
RunnerState = TypeVar("RunnerState")


class Timers(NamedTuple):
    """Seconds of parts of an iteration (RLlib's ``timers``); None: not measured by this loop.

    Attributes:
      training_step: The loop's whole step (sampling and learning).
      env_runner_sampling_timer: Sampling (with post-processing), where it is measured apart
        from learning (not inside one fused program).
      learner_update_timer: The updates, where measured apart from sampling.
      learner_wait_for_runners_s: How long the learner waited for the runners' fragments.
      population_step_s: A population's step, shared by its trials.
    """

    training_step: float | None = None
    env_runner_sampling_timer: float | None = None
    learner_update_timer: float | None = None
    learner_wait_for_runners_s: float | None = None
    population_step_s: float | None = None

    def as_dict(self) -> dict[str, float]:
        """The measured timers by name."""
        return {k: float(v) for k, v in self._asdict().items() if v is not None}


class RunnerStats(NamedTuple):
    """One runner's fragments over an iteration (``env_runners/per_runner/<n>``).

    Attributes:
      num_fragments: Fragments it gave (0: a straggler, or a dropped runner).
      num_env_steps_sampled: Env steps of those fragments.
      sample_s: Seconds it spent sampling them.
      env_steps_per_s: Its throughput (NaN without sampling time).
      wait_for_learner_s: Mean seconds it waited for weights (NaN without fragments).
      policy_lag: Mean lag of its fragments, in weight versions (NaN without fragments).
    """

    num_fragments: int
    num_env_steps_sampled: int
    sample_s: float
    env_steps_per_s: float
    wait_for_learner_s: float
    policy_lag: float


class RunnerLag(NamedTuple):
    """Policy lag and throughput of a runner group's fragments (``env_runners``).

    Attributes:
      policy_lag_mean: Mean lag of the fragments, in weight versions (updates).
      policy_lag_max: The largest lag (0 without fragments).
      runner_wait_for_learner_s: Mean seconds the runners waited for weights.
      per_runner: Every runner's ``RunnerStats``, runner ``i + 1`` at index ``i``.
      learner_wait_s: Seconds the learner waited for the fragments (reported as the timer
        ``learner_wait_for_runners_s``).
    """

    policy_lag_mean: float
    policy_lag_max: int
    runner_wait_for_learner_s: float
    per_runner: tuple[RunnerStats, ...]
    learner_wait_s: float

    def env_runner_metrics(self) -> dict[str, Any]:
        """The ``env_runners`` keys: lag, waits and ``per_runner`` (runners ``"1"``, ...)."""
        return {
            "policy_lag_mean": self.policy_lag_mean,
            "policy_lag_max": self.policy_lag_max,
            "runner_wait_for_learner_s": self.runner_wait_for_learner_s,
            "per_runner": {str(i + 1): s._asdict() for i, s in enumerate(self.per_runner)},
        }


class AgentMetrics(NamedTuple):
    """A multi-agent iteration's per-module and per-agent figures (``env_runners``).

    Attributes:
      module_episode_returns_mean: Per policy, the mean return of its agents per episode.
      agent_episode_returns_mean: Per agent id (as a string), its mean episode return.
      num_agent_steps_sampled: Agent steps sampled in the iteration.
      num_agent_steps_sampled_lifetime: Agent steps sampled so far.
    """

    module_episode_returns_mean: dict[str, float]
    agent_episode_returns_mean: dict[str, float]
    num_agent_steps_sampled: int
    num_agent_steps_sampled_lifetime: int


@dataclasses.dataclass(frozen=True)
class IterationResult:
    """What one training iteration did, as every loop reports it.

    Attributes:
      num_env_steps_sampled: Env steps sampled.
      num_env_steps_trained: Env steps trained (rows of the updates' batches).
      episode_returns: Returns of the episodes finished, [E].
      episode_lens: Their lengths, [E].
      learner_metrics: Per policy id, the learner's metrics (means over the iteration's
        updates; ``num_*`` counts summed).
      timers: Seconds of the iteration's parts.
      runner_lag: A runner group's policy lag and throughput; None on the fused path.
      agents: A multi-agent iteration's per-module and per-agent figures; None otherwise.
      shared_s: Seconds of a population's step, shared by its trials, that ran before the
        trial's ``train()``; 0 otherwise.
      episode_steps: Episode callbacks: per update or cycle, its recorded rows and the runners'
        infos (or None).
      multi_agent_episodes: Multi-agent episode callbacks: ``(runner slot, episode log)`` of
        every finished episode.
    """

    num_env_steps_sampled: int
    num_env_steps_trained: int
    episode_returns: np.ndarray
    episode_lens: np.ndarray
    learner_metrics: Mapping[str, Mapping[str, Any]]
    timers: Timers = Timers()
    runner_lag: RunnerLag | None = None
    agents: AgentMetrics | None = None
    shared_s: float = 0.0
    episode_steps: tuple[tuple[Any, Any], ...] = ()
    multi_agent_episodes: tuple[tuple[int, Any], ...] = ()


def single_policy(metrics: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``learner_metrics`` of a single-policy loop: its metrics under ``DEFAULT_POLICY_ID``."""
    return {DEFAULT_POLICY_ID: metrics}


@dataclasses.dataclass(frozen=True)
class PopulationParts:
    """What a trial gives its population to run it: the parts of its loop, as pure functions.

    Attributes:
      act_step: The acting step (``runners.acting.make_act_step``), the same for every trial.
      xla_step: The trial's EnvPool step through its XLA interface (``start_envpool``).
      reset_ended: The trial's same-step resets of ended sub-envs, traced; None: none.
      fragment_length: Env steps per sub-env of one rollout.
      to_env_action: Policy action -> env action, traced.
      acting_params: ``acting_params(state) -> params`` that ``act_step`` takes.
      learner_functions: ``learner_functions(values) -> (postprocess, update)``: the trial's
        post-processing and update with ``values`` of its population settings (traced
        scalars in the population's program).
    """

    act_step: ActStep
    xla_step: Callable[..., Any]
    reset_ended: Callable[..., Any] | None
    fragment_length: int
    to_env_action: Callable[[jax.Array], jax.Array]
    acting_params: Callable[[Any], Any]
    learner_functions: Callable[
        [Mapping[str, Any]], tuple[Callable[[Transition], Any], Callable[..., Any]]
    ]


class Loop(Protocol[State, RunnerState]):
    """One training iteration: ``step(state, runner_state) -> (state, runner_state, result)``."""

    def step(
        self, state: State, runner_state: RunnerState
    ) -> tuple[State, RunnerState, IterationResult]: ...


__all__ = [
    "AgentMetrics",
    "IterationResult",
    "Loop",
    "PopulationParts",
    "RunnerLag",
    "RunnerStats",
    "Timers",
    "single_policy",
]
