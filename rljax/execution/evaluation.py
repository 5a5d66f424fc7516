"""Evaluation: run a greedy policy on its own envs for a number of episodes or env steps.

One loop for single- and multi-agent envs: both are driven through ``EvaluationEnv`` (what
``MultiAgentVectorEnv`` already offers; ``SingleAgentEpisodes`` adds its episode accounting to a
single-agent vector env), and report RLlib's ``evaluation`` dict, with the per-policy and
per-agent returns when there are agents.

``run_evaluation`` is one evaluation of an algorithm as its config asks (``evaluation_*``
settings, ``evaluation_config`` overrides, a video, or ``custom_evaluation``), given the
policy's actions, the env to run on and a seed; ``Algorithm.evaluate`` adds the callbacks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from rljax.connectors.env_to_module.episode_connector import spec_with_host_pieces
from rljax.env.multi_agent_vector import FinishedEpisode
from rljax.env.single_agent_episode import SingleAgentEpisode, start_episode
from rljax.env.vector import EnvSpec, make_host_env, resolve_env
from rljax.execution.episode_stats import _mean, episode_summary
from rljax.execution.parts import PolicyParts
from rljax.execution.video import record_episodes, rendering_env
from rljax.utils.errors import ConfigError
from rljax.utils.metrics.metrics_logger import MetricsLogger
from rljax.utils.seeding import derive_seed

logger = logging.getLogger("rljax")


class EvaluationEnv(Protocol):
    """A vector env whose every step takes one action per row and keeps its own episode stats."""

    def reset(self) -> Any: ...  # a result with ``.obs``
    def step(self, actions: np.ndarray) -> Any: ...

    def drain_stats(self) -> tuple[list[FinishedEpisode], int]:
        """Episodes finished and env steps taken since the previous call."""
        ...

    def close(self) -> None: ...


class SingleAgentEpisodes:
    """A single-agent host vector env (``make_host_env``) as an ``EvaluationEnv``.

    Counts only real transitions: the step that auto-resets a sub-env after its episode ended
    is no env step and starts the next episode.
    """

    def __init__(
        self,
        env: Any,
        num_envs: int,
        record: Callable[[SingleAgentEpisode], None] | None = None,
    ):
        self.env = env
        self._ret = np.zeros(num_envs)
        self._length = np.zeros(num_envs, int)
        self._valid = np.ones(num_envs, bool)  # the reset observations start real episodes
        self._finished: list[FinishedEpisode] = []
        self._steps = 0
        self._env_id: Any = None
        # ``record``: each finished episode, whole (offline_data(output=...)).
        self._record = record
        self._episodes: list[SingleAgentEpisode | None] = [None] * num_envs

    def reset(self) -> Any:
        result = self.env.reset()
        self._env_id = result.env_id
        if self._record is not None:
            self._start_episodes(result, np.ones(len(result.env_id), bool))
        return result

    def _start_episodes(self, result: Any, rows: np.ndarray) -> None:
        for j in np.flatnonzero(rows):
            self._episodes[int(result.env_id[j])] = start_episode(result.obs[j], {})

    def step(self, actions: np.ndarray) -> Any:
        result = self.env.step(actions, self._env_id)
        ids = self._env_id = result.env_id
        valid = self._valid[ids]
        self._ret[ids] += np.where(valid, result.reward, 0.0)
        self._length[ids] += valid
        self._steps += int(valid.sum())
        done = result.terminated | result.truncated
        if self._record is not None:
            self._record_step(result, actions, valid, done)
        for i in ids[done & valid]:
            self._finished.append(
                FinishedEpisode(int(i), int(self._length[i]), float(self._ret[i]), {}, {})
            )
        self._ret[ids[done]] = 0.0
        self._length[ids[done]] = 0
        self._valid[ids] = ~done
        return result

    def _record_step(
        self, result: Any, actions: np.ndarray, valid: np.ndarray, done: np.ndarray
    ) -> None:
        """Adds the step to each sub-env's episode; hands finished ones to ``record``. A row
        that is no transition (the auto-reset step) starts the sub-env's next episode."""
        assert self._record is not None
        for j, i in enumerate(result.env_id):
            episode = self._episodes[int(i)]
            if not valid[j] or episode is None:
                self._episodes[int(i)] = start_episode(result.obs[j], {})
                continue
            episode.add_env_step(
                result.obs[j],
                actions[j],
                float(result.reward[j]),
                {},
                terminated=bool(result.terminated[j]),
                truncated=bool(result.truncated[j]),
            )
            if done[j]:
                self._record(episode)
                self._episodes[int(i)] = None

    def drain_stats(self) -> tuple[list[FinishedEpisode], int]:
        finished, self._finished = self._finished, []
        steps, self._steps = self._steps, 0
        return finished, steps

    def close(self) -> None:
        self.env.close()


def evaluate_policy(
    env: EvaluationEnv,
    actions: Callable[[Any], np.ndarray],
    duration: int | None,
    by_episodes: bool,
    policy_ids: Sequence[str] | None = None,
    agent_ids: Sequence[Any] | None = None,
    until: Callable[[], bool] | None = None,
    timeout_s: float | None = None,
    window: int | None = None,
    auto_min_steps: int = 1,
) -> dict[str, Any]:
    """Steps ``env`` with ``actions(obs) -> env actions`` until ``duration`` episodes (or env
    steps) are done, closes it, and returns RLlib's ``evaluation`` result dict.

    Args:
      env: The evaluation envs (closed here, whatever happens).
      actions: The greedy policy: a batch of observations (or agent slots) -> env actions.
      duration: ``evaluation_duration``: episodes, or env steps with ``by_episodes=False``;
        None (``"auto"``): until ``until()`` is true, at least ``auto_min_steps`` env steps
        were taken and an episode finished.
      by_episodes: ``evaluation_duration_unit == "episodes"``.
      policy_ids, agent_ids: A multi-agent run's policies and agents: adds each one's mean
        episode return (``module_episode_returns_mean``, ``agent_episode_returns_mean``).
      until: For ``duration=None``: whether to stop (the training step has ended).
      timeout_s: ``evaluation_sample_timeout_s``: counting episodes, stop (a warning says so)
        when none finished for this many seconds, with the episodes finished by then.
      window: ``evaluation_config``'s ``metrics_num_episodes_for_smoothing``: the return and
        length figures (per policy and agent too) are over the last ``window`` episodes
        (``num_episodes`` counts all).
    """
    finished: list[FinishedEpisode] = []
    steps = 0
    last_episode = time.monotonic()

    def done() -> bool:
        if duration is None:  # "auto": while the iteration trains, and at least auto_min_steps
            trained = until is None or until()
            return trained and steps >= auto_min_steps and bool(finished)
        return (by_episodes and len(finished) >= duration) or (
            not by_episodes and steps >= duration
        )

    try:
        result = env.reset()
        while not done():
            # RLlib's evaluation_sample_timeout_s: the time allowed to finish an episode.
            if (
                by_episodes
                and timeout_s is not None
                and time.monotonic() - last_episode > timeout_s
            ):
                logger.warning(
                    "evaluation stopped: no episode finished within evaluation_sample_timeout_s="
                    "%s s (%d episodes and %d env steps of the %s asked for); raise it, or "
                    "bound the env's episodes (a time limit)",
                    timeout_s,
                    len(finished),
                    steps,
                    "auto" if duration is None else duration,
                )
                break
            # A recurrent policy's actor reads the whole result (where episodes start).
            takes_result = getattr(actions, "takes_result", False)
            result = env.step(actions(result if takes_result else result.obs))
            episodes, n = env.drain_stats()
            finished += episodes
            steps += n
            if episodes:
                last_episode = time.monotonic()
    finally:
        env.close()
    if by_episodes and duration is not None:
        finished = finished[:duration]
    shown = finished[-window:] if window else finished
    out = episode_summary([ep.episode_return for ep in shown], [ep.length for ep in shown], steps)
    out["num_episodes"] = len(finished)
    if policy_ids is not None and agent_ids is not None:
        per_policy: dict[str, list[float]] = {p: [] for p in policy_ids}
        per_agent: dict[str, list[float]] = {str(a): [] for a in agent_ids}
        for ep in shown:
            sums: dict[str, float] = {}
            for agent, ret in ep.agent_returns.items():
                per_agent[str(agent)].append(ret)
                pid = ep.agent_policies[agent]
                sums[pid] = sums.get(pid, 0.0) + ret
            for pid, ret in sums.items():
                per_policy[pid].append(ret)
        out["module_episode_returns_mean"] = {p: _mean(r) for p, r in per_policy.items()}
        out["agent_episode_returns_mean"] = {a: _mean(r) for a, r in per_agent.items()}
    return {"env_runners": out}


# ------------------------------------------------------------------ an algorithm's evaluation
def evaluation_spec(
    config: Any, env_spec: EnvSpec | None, spaces: tuple[Any, Any]
) -> EnvSpec | None:
    """The env evaluation runs on: the training env ``env_spec``, or ``evaluation_config``'s
    (which must have the policy's ``spaces``: a ``ConfigError`` otherwise)."""
    overrides = config.evaluation_config or {}
    if env_spec is None or not ("env" in overrides or "env_config" in overrides):
        return env_spec
    spec = resolve_env(
        overrides.get("env", config.env),
        overrides.get("env_config", config.env_config),
    )
    spec, found = spec_with_host_pieces(config.env_to_module_connector, spec)
    if found != spaces:
        raise ConfigError(
            f"evaluation_config's env {spec.name!r} has spaces {found}; the policy was "
            f"trained on {spaces}"
        )
    return spec


def evaluation_explores(config: Any) -> bool:
    """Whether evaluation samples (``evaluation_config={"explore": True}``) or acts greedily."""
    return bool((config.evaluation_config or {}).get("explore", False))


def evaluation_params(parts: PolicyParts[Any], state: Any) -> Any:
    """A copy of the weights evaluation acts with (so that training may go on)."""
    if parts.greedy_slots is not None:
        params = parts.acting_params(state)
    else:
        params = parts.inference_params(state, None)
    return jax.tree.map(jnp.copy, params)


def single_agent_env(
    spec: EnvSpec,
    num_envs: int,
    seed: int,
    record: Callable[[SingleAgentEpisode], None] | None = None,
) -> EvaluationEnv:
    """``num_envs`` copies of the env ``spec`` for evaluation; ``record`` gets each finished
    episode whole."""
    return SingleAgentEpisodes(make_host_env(spec, num_envs, "SYNC", seed, None), num_envs, record)


def run_evaluation(
    config: Any,
    spec: EnvSpec | None,
    seed: int,
    actions: Callable[[Any], Any],
    make_env: Callable[[int, int, EnvSpec | None], EvaluationEnv],
    *,
    recurrent: bool = False,
    video_dir: Path | None = None,
    trained: threading.Event | None = None,
    policy_ids: Sequence[str] | None = None,
    agent_ids: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """One evaluation as ``config`` asks, without callbacks (``evaluation_duration`` episodes or
    env steps, ``evaluation_num_envs`` env copies, ``evaluation_config``'s overrides).

    Args:
      config: The algorithm's config.
      spec: The env (``evaluation_spec``); None for a multi-agent run, whose ``make_env``
        builds its own.
      seed: The evaluation's seed (new episodes each evaluation).
      actions: The policy: observations (or each ``StepResult``, for an actor that
        ``takes_result``) -> env actions.
      make_env: ``make_env(num_envs, seed, spec)``: the evaluation envs.
      recurrent: The policy is recurrent (its videos are not recorded yet).
      video_dir: Play the episodes on a rendering copy of the env, one after another, and
        write each to ``video_dir/episode-<i>.mp4`` (``rljax.execution.video``).
      trained: Set when the training step this evaluation runs beside has ended
        (``evaluation_duration="auto"``).
      policy_ids, agent_ids: A multi-agent run's policies and agents (``evaluate_policy``).
    """
    overrides = config.evaluation_config or {}
    auto = config.evaluation_duration == "auto"
    duration = None if auto else int(config.evaluation_duration)
    by_episodes = config.evaluation_duration_unit == "episodes"
    num_envs = config.evaluation_num_envs
    if duration is not None and not by_episodes:
        # All env copies step together: as many as divide the steps asked for, so that the
        # evaluation takes exactly that many (10 steps on 8 copies: 5 copies, 2 steps each).
        num_envs = max(d for d in range(1, min(num_envs, duration) + 1) if duration % d == 0)
    if video_dir is not None and recurrent:
        raise ValueError("videos of a recurrent policy (use_lstm) are not recorded yet")
    if video_dir is not None:
        assert spec is not None
        wanted = num_envs if duration is None else duration
        return record_episodes(
            rendering_env(spec),
            actions,
            video_dir,
            seed,
            num_episodes=wanted if by_episodes or duration is None else None,
            min_steps=None if by_episodes or duration is None else duration,
        )
    # "auto": while the iteration trains (a parallel evaluation), else one episode per copy.
    return evaluate_policy(
        make_env(num_envs, seed, spec),
        actions,
        num_envs if auto and trained is None else duration,
        by_episodes or (auto and trained is None),
        policy_ids=policy_ids,
        agent_ids=agent_ids,
        until=trained.is_set if trained is not None else None,
        timeout_s=config.evaluation_sample_timeout_s,
        window=overrides.get("metrics_num_episodes_for_smoothing"),
        auto_min_steps=auto_min_steps(config) if trained is not None else 1,
    )


def auto_min_steps(config: Any) -> int:
    """``evaluation_duration="auto"``'s least env steps of an evaluation: RLlib's per
    evaluation env runner (``evaluation_auto_duration_min_env_steps_per_sample``), times the
    runners (one where there are none). RLlib's maximum bounds each of its runners' sampling
    rounds, which go on while the iteration trains; rljax's evaluation is one loop that goes
    on so too, and that maximum bounds nothing here."""
    runners = max(1, int(config.evaluation_num_env_runners or 0))
    return int(config.evaluation_auto_duration_min_env_steps_per_sample) * runners


def custom_evaluation(
    algorithm: Any,
    config: Any,
    actions: Callable[[Any], Any],
    seed: int,
    spec: EnvSpec | None,
    spaces: tuple[Any, Any],
    metrics: MetricsLogger,
    multi_agent: bool = False,
) -> dict[str, Any]:
    """``config.custom_evaluation_function(algorithm, eval_env_runner_group)``, on
    ``evaluation_num_env_runners`` (at least one) evaluation runners of
    ``num_envs_per_env_runner`` env copies of ``spec`` each (the policy's ``actions``, its
    ``spaces``), closed afterwards. What the function logged under "evaluation" in
    ``metrics`` (the algorithm's logger) joins its result."""
    if multi_agent or spec is None:
        raise ConfigError("custom_evaluation_function evaluates single-agent runs only")
    # Here, not at the top: importing rljax.algorithms runs its package's __init__, which
    # imports Algorithm, which imports this module.
    from rljax.algorithms.rllib_surface import EvaluationEnvRunner, EvaluationEnvRunnerGroup

    overrides = config.evaluation_config or {}
    per_runner = overrides.get("num_envs_per_env_runner", config.num_envs_per_env_runner)
    n = max(1, config.evaluation_num_env_runners)
    runners = []
    runner_config = config.copy()  # each runner's own, with evaluation_config's env applied
    runner_config.env = overrides.get("env", runner_config.env)
    runner_config.env_config = dict(overrides.get("env_config", runner_config.env_config))
    try:
        for i in range(n):

            def build(env_spec: EnvSpec, i: int = i) -> Any:
                return make_host_env(
                    env_spec, per_runner, "SYNC", derive_seed(seed, i), None, i + 1, n
                )

            runners.append(
                EvaluationEnvRunner(
                    i + 1, build(spec), actions, runner_config.copy(), build, spaces
                )
            )
        fn = config.custom_evaluation_function
        out = fn(algorithm, EvaluationEnvRunnerGroup(runners))
    finally:
        for runner in runners:
            runner.close()
    env_steps = None
    if isinstance(out, tuple) and len(out) == 3:
        out, env_steps, _agent_steps = out
    if not isinstance(out, dict):
        raise TypeError(
            f"custom_evaluation_function returned {type(out).__name__}; return (metrics dict, "
            "env_steps, agent_steps) or a metrics dict"
        )
    result_metrics = dict(out)
    if env_steps is not None:
        result_metrics.setdefault("num_env_steps_sampled", int(env_steps))
    # What the function logged under "evaluation" (RLlib's example aggregates its runners'
    # metrics there) is part of this evaluation's result, not of the next result's top.
    logged = metrics.pop_reduced("evaluation")
    result = {"env_runners": result_metrics}
    for section, values in logged.items():
        if isinstance(values, dict) and isinstance(result.get(section), dict):
            result[section] = {**values, **result[section]}
        else:
            result.setdefault(section, values)
    return result


class Background:
    """A call in a thread of its own (an evaluation parallel to training); ``result()`` waits
    for it and returns (or raises) what it did."""

    def __init__(self, fn: Callable[..., Any], *args: Any):
        self._out: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            self._out = fn(*args)
        except BaseException as e:  # raised in the caller's thread by result()
            self._error = e

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._out
