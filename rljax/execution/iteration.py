"""An iteration's bookkeeping, beside the result dict it feeds (``rljax.execution.results``):
whether evaluation is due and runs parallel to the training step, the algorithm's running
counters (iterations, lifetime env steps, time, episodes), non-finite update counting, and the
counters a checkpoint keeps.

The counters stay the algorithm's attributes (RLlib's ``algo.iteration``, ...), which these
functions read and advance through ``CountedRun``; ``Algorithm.train()`` calls them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rljax import distributed
from rljax.execution.checkpoints import MODULE_COUNTERS
from rljax.execution.episode_stats import EpisodeStats
from rljax.execution.evaluation import Background
from rljax.execution.loop import IterationResult
from rljax.execution.results import AgentStepCounter, IterationTotals
from rljax.utils.errors import AlgorithmStoppedError
from rljax.utils.nonfinite import NonFiniteUpdateError


class CountedRun(Protocol):
    """The running counters of an algorithm (``Algorithm`` holds them)."""

    iteration: int
    num_env_steps_sampled_lifetime: int
    num_env_steps_trained_lifetime: int
    time_total_s: float
    # Since the algorithm was built or last restored (Ray Tune's *_since_restore keys).
    time_since_restore: float
    iterations_since_restore: int
    episodes: EpisodeStats
    _num_evaluations: int
    # Rows trained per module so far (``checkpoints.MODULE_COUNTERS``).
    _module_steps_trained: dict[str, int]
    # Non-finite numbers in the training state at the last count, and in the weights the last
    # checkpoint loaded brought.
    _non_finite_seen: int
    _non_finite_weights_loaded: int


def check_running(stopped: bool, algorithm: str) -> None:
    """Raises ``AlgorithmStoppedError`` for ``train()`` of an ``algorithm`` (its class name)
    after ``stop()``."""
    if stopped:
        raise AlgorithmStoppedError(
            f"train() after stop(): this {algorithm}'s env runners and envs are "
            "closed. Build a new algorithm (config.build_algo()), or continue this one from a "
            "checkpoint: save_to_path(dir) still works after stop(), then "
            "Algorithm.from_checkpoint(dir)"
        )


def evaluation_due(evaluation_interval: int | None, iteration: int) -> bool:
    """Whether the iteration after ``iteration`` evaluates (every ``evaluation_interval``-th;
    None or 0: never)."""
    return (
        evaluation_interval is not None
        and evaluation_interval > 0
        and (iteration + 1) % evaluation_interval == 0
    )


def step_beside_evaluation(
    step: Callable[[], IterationResult],
    evaluate: Callable[[threading.Event], dict[str, Any]] | None,
) -> tuple[IterationResult, dict[str, Any] | None]:
    """Runs the training ``step``, with ``evaluate`` (if given) in a thread beside it; returns
    the step's result and the evaluation's.

    ``evaluate`` is handed an event set when the step has ended (an ``"auto"`` evaluation runs
    until then). No evaluation outlives a failed step: it is waited for, and the step's error
    raised first.
    """
    step_done = threading.Event()
    parallel = Background(evaluate, step_done) if evaluate is not None else None
    try:
        out = step()
    except BaseException as e:
        if parallel is not None:
            step_done.set()
            parallel.wait()  # no evaluation outlives a failed iteration; its error first
        distributed.raise_if_peer_failed(e)  # across processes: a collective's lost peer
        raise
    step_done.set()
    return out, parallel.result() if parallel is not None else None


def count_iteration(
    run: CountedRun,
    out: IterationResult,
    elapsed_s: float,
    non_finite_total: int,
    env_runner_metrics: Mapping[str, Any],
    fault_tolerance: Mapping[str, int],
) -> IterationTotals:
    """Advances ``run``'s counters by the iteration ``out`` and returns its totals for the
    result dict.

    Args:
      run: The algorithm whose counters advance.
      out: What the iteration sampled, trained and measured.
      elapsed_s: Seconds of the iteration (a population trial's share of its step included).
      non_finite_total: Non-finite numbers in the training state now (``count_non_finite``);
        those beyond the last count are this iteration's skipped updates.
      env_runner_metrics: What callbacks logged to the env runners' logger, reduced.
      fault_tolerance: The runner group's fault counters.
    """
    run.iteration += 1
    run.num_env_steps_sampled_lifetime += int(out.num_env_steps_sampled)
    run.num_env_steps_trained_lifetime += int(out.num_env_steps_trained)
    run.episodes.add(out.episode_returns, out.episode_lens)
    non_finite = non_finite_total - run._non_finite_seen
    run._non_finite_seen = non_finite_total
    run.time_total_s += elapsed_s
    run.time_since_restore += elapsed_s
    run.iterations_since_restore += 1
    return IterationTotals(
        iteration=run.iteration,
        elapsed_s=elapsed_s,
        time_total_s=run.time_total_s,
        num_env_steps_sampled_lifetime=run.num_env_steps_sampled_lifetime,
        num_env_steps_trained_lifetime=run.num_env_steps_trained_lifetime,
        episodes=run.episodes.summary(),
        num_episodes_lifetime=run.episodes.num_episodes_lifetime,
        env_runner_metrics=env_runner_metrics,
        num_non_finite_updates=non_finite,
        num_non_finite_updates_lifetime=non_finite_total,
        num_non_finite_weights_loaded=run._non_finite_weights_loaded,
        fault_tolerance=fault_tolerance,
        time_since_restore=run.time_since_restore,
        iterations_since_restore=run.iterations_since_restore,
    )


def check_non_finite(totals: IterationTotals, on_non_finite_update: str) -> None:
    """Raises ``NonFiniteUpdateError`` when the iteration skipped updates with non-finite
    gradients and the config says ``on_non_finite_update="raise"``."""
    if totals.num_non_finite_updates and on_non_finite_update == "raise":
        raise NonFiniteUpdateError(
            f"training iteration {totals.iteration}: {totals.num_non_finite_updates} update "
            "step(s) had NaN or infinite gradients and were skipped (the parameters are still "
            "finite); look for NaN/inf in rewards or observations, or lower the learning rate. "
            "fault_tolerance(on_non_finite_update='skip') trains on past them"
        )


def _offline_evaluation(run: Any) -> Any:
    """The run's offline loss evaluation (BC's, MARWIL's), or None."""
    hook = getattr(run, "_offline_loss_evaluation", None)
    return hook() if hook is not None else None


def counter_values(run: CountedRun) -> dict[str, Any]:
    """The counters a checkpoint keeps (``checkpoints._COUNTERS``, ``time_total_s``, the
    per-module ``checkpoints.MODULE_COUNTERS`` and, for a multi-agent run, its agent steps per
    agent and per module: ``checkpoints.AGENT_COUNTERS``, ``SAMPLED_MODULE_COUNTERS``)."""
    offline = _offline_evaluation(run)
    agents = _agent_step_counter(run)
    return {
        # Offline evaluations so far: each draws its batches from a key of that count.
        "num_offline_evaluations": 0 if offline is None else offline.count,
        "training_iteration": run.iteration,
        "num_env_steps_sampled_lifetime": run.num_env_steps_sampled_lifetime,
        "num_env_steps_trained_lifetime": run.num_env_steps_trained_lifetime,
        "time_total_s": run.time_total_s,
        "num_episodes_lifetime": run.episodes.num_episodes_lifetime,
        "num_evaluations": run._num_evaluations,
        MODULE_COUNTERS: dict(run._module_steps_trained),
        # A multi-agent run's agent steps per agent and per module (``AgentStepCounter``).
        **(agents.state() if agents is not None else {}),
    }


def _agent_step_counter(run: Any) -> AgentStepCounter | None:
    """A multi-agent run's ``AgentStepCounter``; None for a single-agent run."""
    return getattr(run, "_agent_steps", None)


def agent_ids(run: Any) -> list[str] | None:
    """The agent ids of a multi-agent run's per-agent counters; None for a single-agent run."""
    counter = _agent_step_counter(run)
    return None if counter is None else list(counter.agents)


def set_counter_values(run: CountedRun, counters: Mapping[str, Any]) -> None:
    """Sets ``run``'s counters to a checkpoint's (``counter_values``'s keys)."""
    run.iteration = counters["training_iteration"]
    run.num_env_steps_sampled_lifetime = counters["num_env_steps_sampled_lifetime"]
    run.num_env_steps_trained_lifetime = counters["num_env_steps_trained_lifetime"]
    run.time_total_s = counters["time_total_s"]
    run.episodes.num_episodes_lifetime = counters["num_episodes_lifetime"]
    run._num_evaluations = counters["num_evaluations"]  # seeds evaluation envs
    run._module_steps_trained = dict(counters.get(MODULE_COUNTERS, {}))
    counter = _agent_step_counter(run)
    if counter is not None:
        counter.restore(counters)
    offline = _offline_evaluation(run)
    if offline is not None:
        offline.count = counters["num_offline_evaluations"]


__all__ = [
    "CountedRun",
    "check_running",
    "check_non_finite",
    "count_iteration",
    "agent_ids",
    "counter_values",
    "evaluation_due",
    "set_counter_values",
    "step_beside_evaluation",
]
