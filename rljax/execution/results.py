"""RLlib's result dict of a training iteration, built in one place from the loop's
``IterationResult`` and the algorithm's running totals (``Algorithm.train()`` calls it)."""

from __future__ import annotations

import dataclasses
import functools
import os
import platform
import socket
import time
from collections.abc import Mapping
from typing import Any

from rljax.execution.checkpoints import (
    AGENT_COUNTERS,
    SAMPLED_MODULE_COUNTERS,
    checked_id_counters,
)
from rljax.execution.loop import IterationResult
from rljax.utils.ids import DEFAULT_AGENT_ID, DEFAULT_POLICY_ID
from rljax.utils.metrics import ALL_MODULES
from rljax.utils.metrics.metrics_logger import merge_into


@dataclasses.dataclass(frozen=True)
class IterationTotals:
    """What the algorithm knows of an iteration besides the loop's ``IterationResult``.

    Attributes:
      iteration: The iteration's number (``training_iteration``), counted from 1.
      elapsed_s: Seconds of the iteration (a population trial's share of its step included).
      time_total_s: Seconds of every iteration so far.
      num_env_steps_sampled_lifetime: Env steps sampled so far, this iteration's included.
      num_env_steps_trained_lifetime: Env steps trained so far, this iteration's included.
      episodes: RLlib's episode metrics (``EpisodeStats.summary()``).
      num_episodes_lifetime: Episodes finished so far.
      env_runner_metrics: What callbacks logged to the env runners' metrics logger, reduced.
      num_non_finite_updates: Update steps with non-finite gradients in this iteration.
      num_non_finite_updates_lifetime: Those so far.
      num_non_finite_weights_loaded: Non-finite weights loaded from checkpoints.
      fault_tolerance: The runners' fault-tolerance counters.
      time_since_restore: Seconds of the iterations since the algorithm was built or last
        restored.
      iterations_since_restore: Those iterations.
    """

    iteration: int
    elapsed_s: float
    time_total_s: float
    num_env_steps_sampled_lifetime: int
    num_env_steps_trained_lifetime: int
    episodes: Mapping[str, float]
    num_episodes_lifetime: int
    env_runner_metrics: Mapping[str, Any]
    num_non_finite_updates: int
    num_non_finite_updates_lifetime: int
    num_non_finite_weights_loaded: int
    fault_tolerance: Mapping[str, int]
    time_since_restore: float = 0.0
    iterations_since_restore: int = 0


class AgentStepCounter:
    """A multi-agent run's agent steps per agent and per module (RLlib's
    ``num_agent_steps_sampled`` / ``num_module_steps_sampled`` dicts and their lifetimes).

    ``count(episodes)`` reads an iteration's episode arrays (``acting.episode_arrays``: the
    ``"valid"`` rows of the agent slots, agent-minor as ``multi_agent_vector`` lays them out,
    and each row's ``"policy"``; where a record has no ``"policy"``, ``agent_policy`` maps each
    agent to its policy index) and returns that iteration's counts, adding them to the
    lifetime ones. The lifetime counts are the only record of a run's agent steps: the total
    (``lifetime``) is their sum, and checkpoints keep them (``state`` / ``restore``).
    """

    def __init__(self, agents: list[Any], policy_ids: list[str]) -> None:
        self.agents = [str(a) for a in agents]
        self.policy_ids = list(policy_ids)
        self.agent_lifetime: dict[str, int] = {}
        self.module_lifetime: dict[str, int] = {}

    @property
    def lifetime(self) -> int:
        """Agent steps sampled so far, all agents'."""
        return sum(self.agent_lifetime.values())

    def state(self) -> dict[str, dict[str, int]]:
        """The lifetime counts as a checkpoint keeps them (``checkpoints.AGENT_COUNTERS`` and
        ``checkpoints.SAMPLED_MODULE_COUNTERS``)."""
        return {
            AGENT_COUNTERS: dict(self.agent_lifetime),
            SAMPLED_MODULE_COUNTERS: dict(self.module_lifetime),
        }

    def restore(self, counters: Mapping[str, Any]) -> None:
        """Sets the lifetime counts to a checkpoint's (``state()``'s keys; absent: none).
        Raises ``ValueError`` naming an agent this run does not have, or a module it does not
        have, by its first 40 characters."""
        agents = checked_id_counters(counters.get(AGENT_COUNTERS, {}), self.agents, "agent")
        modules = checked_id_counters(
            counters.get(SAMPLED_MODULE_COUNTERS, {}), self.policy_ids, "module"
        )
        self.agent_lifetime, self.module_lifetime = agents, modules

    def count(
        self, episodes: list[Mapping[str, Any]], agent_policy: Any = None
    ) -> tuple[dict[str, int], dict[str, int]]:
        """``(per agent, per module)`` agent steps of ``episodes`` (one iteration's records)."""
        import numpy as np

        n_agents, n_policies = len(self.agents), len(self.policy_ids)
        per_agent = np.zeros(n_agents, np.int64)
        per_module = np.zeros(n_policies, np.int64)
        for e in episodes:
            valid = np.asarray(e["valid"], bool).reshape(-1, n_agents)
            per_agent += valid.sum(axis=0)
            if "policy" in e:
                rows = np.asarray(e["policy"]).reshape(-1)[valid.reshape(-1)]
            else:
                rows = np.broadcast_to(np.asarray(agent_policy), valid.shape)[valid]
            per_module += np.bincount(rows.astype(np.int64), minlength=n_policies)[:n_policies]
        agents = {a: int(n) for a, n in zip(self.agents, per_agent, strict=True)}
        modules = {p: int(n) for p, n in zip(self.policy_ids, per_module, strict=True)}
        for totals, now in ((self.agent_lifetime, agents), (self.module_lifetime, modules)):
            for key, n in now.items():
                totals[key] = totals.get(key, 0) + n
        return agents, modules

    def keep_modules(self, policy_ids: list[str]) -> None:
        """After a module change: counts of the modules kept carry on; a removed module's go."""
        self.policy_ids = list(policy_ids)
        self.module_lifetime = {
            p: n for p, n in self.module_lifetime.items() if p in self.policy_ids
        }


@functools.cache
def node_ip() -> str:
    """This host's address as Ray Tune's results give it (``node_ip``): the address its route
    out leaves from, found as Ray finds it (a UDP socket's ``connect``, which sends nothing
    and does not wait on DNS); the loopback address on a host without a route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("8.8.8.8", 80))
            return str(s.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def _per_second(steps: int, seconds: float) -> float:
    return steps / seconds if seconds > 0 else float("nan")


def _agent_figures(agents: Any) -> dict[str, Any]:
    """A multi-agent iteration's per-agent and per-module figures (an ``AgentMetrics``),
    under RLlib's multi-agent env runner's keys."""
    return {
        "module_episode_returns_mean": dict(agents.module_episode_returns_mean),
        "agent_episode_returns_mean": dict(agents.agent_episode_returns_mean),
        "num_agent_steps_sampled": dict(agents.agent_steps),
        "num_agent_steps_sampled_lifetime": dict(agents.agent_steps_lifetime),
        "num_module_steps_sampled": dict(agents.module_steps),
        "num_module_steps_sampled_lifetime": dict(agents.module_steps_lifetime),
    }


def _one_agent_figures(sampled: int, totals: IterationTotals) -> dict[str, Any]:
    """A single-agent run's per-agent and per-module figures, under RLlib 2.60's single-agent
    env runner's keys: its one agent (``default_agent``) and module (``default_policy``)
    sample every env step and own every episode's return."""
    lifetime = totals.num_env_steps_sampled_lifetime
    returns = totals.episodes.get("episode_return_mean", float("nan"))
    return {
        "num_agent_steps_sampled": {DEFAULT_AGENT_ID: sampled},
        "num_agent_steps_sampled_lifetime": {DEFAULT_AGENT_ID: lifetime},
        "num_module_steps_sampled": {DEFAULT_POLICY_ID: sampled},
        "num_module_steps_sampled_lifetime": {DEFAULT_POLICY_ID: lifetime},
        "agent_episode_return_mean": {DEFAULT_AGENT_ID: returns},
        "module_episode_return_mean": {DEFAULT_POLICY_ID: returns},
    }


def module_learner_figures(learners: dict[str, Any], lifetime: dict[str, int], config: Any) -> None:
    """RLlib's per-module learner keys that every module reports, set in ``learners`` (the
    result's, per module id) where the update did not: ``num_module_steps_trained_lifetime``
    (``lifetime``, the algorithm's counts so far, advanced by this iteration's) and
    ``default_optimizer_learning_rate`` (the module's ``lr`` in ``config``, its overrides
    included, where it is one number; a module whose optimizers report their own rates, SAC's
    ``qf_learning_rate`` and the like, gets none)."""
    for pid, metrics in learners.items():
        if pid == ALL_MODULES or not isinstance(metrics, dict):
            continue
        lifetime[pid] = lifetime.get(pid, 0) + int(metrics.get("num_module_steps_trained", 0))
        metrics.setdefault("num_module_steps_trained_lifetime", float(lifetime[pid]))
        if not any(k.endswith("learning_rate") for k in metrics):
            rate = config.module_overrides(pid).get("lr", getattr(config, "lr", None))
            if isinstance(rate, int | float) and not isinstance(rate, bool):
                metrics["default_optimizer_learning_rate"] = float(rate)


def result_dict(
    result: IterationResult, totals: IterationTotals, config: Mapping[str, Any]
) -> dict[str, Any]:
    """RLlib's nested result dict of one iteration: ``env_runners`` (episodes, env steps,
    runner lag and throughput, multi-agent figures, callbacks' metrics), ``learners`` (per
    policy, and ``__all_modules__``), ``timers``, ``fault_tolerance``, the top-level counters
    and the keys Ray Tune's ``Trainable.train()`` adds (``config``: the algorithm's config as
    a dict, ``date``, ``pid``, ``hostname``, ``node_ip``, ``trial_id``, ``"default"`` outside
    Tune as in Ray, ``time_since_restore``, ``iterations_since_restore``). ``evaluation`` and
    the algorithm's own logged metrics are added by the caller."""
    sampled = int(result.num_env_steps_sampled)
    trained = int(result.num_env_steps_trained)
    elapsed = totals.elapsed_s
    env_runners: dict[str, Any] = {
        **totals.episodes,
        **(result.runner_lag.env_runner_metrics() if result.runner_lag is not None else {}),
        **(_agent_figures(result.agents) if result.agents is not None else {}),
        "num_episodes": len(result.episode_returns),
        "num_episodes_lifetime": totals.num_episodes_lifetime,
        "num_env_steps_sampled": sampled,
        "num_env_steps_sampled_lifetime": totals.num_env_steps_sampled_lifetime,
        "num_env_steps_sampled_per_second": _per_second(sampled, elapsed),
    }
    learners = {
        pid: {k: float(v) for k, v in metrics.items()}
        for pid, metrics in result.learner_metrics.items()
    }
    if result.agents is None:
        env_runners.update(_one_agent_figures(sampled, totals))
        # The one module trains every row: its counts are the learner's (RLlib's keys).
        for metrics in learners.values():
            metrics["num_module_steps_trained"] = float(trained)
            metrics["num_module_steps_trained_lifetime"] = float(
                totals.num_env_steps_trained_lifetime
            )
    merge_into(env_runners, dict(totals.env_runner_metrics), "env_runners/")
    module_rows = sum(m.get("num_module_steps_trained", 0.0) for m in learners.values())
    return {
        "env_runners": env_runners,
        "learners": {
            **learners,
            ALL_MODULES: {
                "num_module_steps_trained": int(module_rows),
                "num_non_finite_updates": totals.num_non_finite_updates,
                "num_non_finite_updates_lifetime": totals.num_non_finite_updates_lifetime,
                "num_non_finite_weights_loaded": totals.num_non_finite_weights_loaded,
                "num_env_steps_trained": trained,
                "num_env_steps_trained_lifetime": totals.num_env_steps_trained_lifetime,
                "num_env_steps_trained_per_second": _per_second(trained, elapsed),
            },
        },
        "timers": {"training_iteration": elapsed, **result.timers.as_dict()},
        "fault_tolerance": dict(totals.fault_tolerance),
        "num_env_steps_sampled_lifetime": totals.num_env_steps_sampled_lifetime,
        "num_env_steps_trained_lifetime": totals.num_env_steps_trained_lifetime,
        "num_env_steps_sampled_per_second": env_runners["num_env_steps_sampled_per_second"],
        "training_iteration": totals.iteration,
        "time_this_iter_s": elapsed,
        "time_total_s": totals.time_total_s,
        "timestamp": int(time.time()),
        "done": False,
        "trial_id": "default",
        "date": time.strftime("%Y-%m-%d_%H-%M-%S"),
        "pid": os.getpid(),
        "hostname": platform.node(),
        "node_ip": node_ip(),
        "config": config,
        "time_since_restore": totals.time_since_restore,
        "iterations_since_restore": totals.iterations_since_restore,
    }


__all__ = ["AgentStepCounter", "IterationTotals", "node_ip", "result_dict"]
