"""Evaluation: run a greedy policy on its own envs for a number of episodes or env steps.

One loop for single- and multi-agent envs: both are driven through ``EvaluationEnv`` (what
``MultiAgentVectorEnv`` already offers; ``SingleAgentEpisodes`` adds its episode accounting to a
single-agent vector env), and report RLlib's ``evaluation`` dict, with the per-policy and
per-agent returns when there are agents.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from rljax.env.multi_agent_vector import FinishedEpisode

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

    def __init__(self, env: Any, num_envs: int):
        self.env = env
        self._ret = np.zeros(num_envs)
        self._length = np.zeros(num_envs, int)
        self._valid = np.ones(num_envs, bool)  # the reset observations start real episodes
        self._finished: list[FinishedEpisode] = []
        self._steps = 0
        self._env_id: Any = None

    def reset(self) -> Any:
        result = self.env.reset()
        self._env_id = result.env_id
        return result

    def step(self, actions: np.ndarray) -> Any:
        result = self.env.step(actions, self._env_id)
        ids = self._env_id = result.env_id
        valid = self._valid[ids]
        self._ret[ids] += np.where(valid, result.reward, 0.0)
        self._length[ids] += valid
        self._steps += int(valid.sum())
        done = result.terminated | result.truncated
        for i in ids[done & valid]:
            self._finished.append(
                FinishedEpisode(int(i), int(self._length[i]), float(self._ret[i]), {}, {})
            )
        self._ret[ids[done]] = 0.0
        self._length[ids[done]] = 0
        self._valid[ids] = ~done
        return result

    def drain_stats(self) -> tuple[list[FinishedEpisode], int]:
        finished, self._finished = self._finished, []
        steps, self._steps = self._steps, 0
        return finished, steps

    def close(self) -> None:
        self.env.close()


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def episode_summary(returns: Sequence[float], lengths: Sequence[int], steps: int) -> dict[str, Any]:
    """RLlib's evaluation figures of finished episodes (NaN where there is none)."""
    return {
        "episode_return_mean": _mean(returns),
        "episode_return_max": float(np.max(returns)) if len(returns) else float("nan"),
        "episode_return_min": float(np.min(returns)) if len(returns) else float("nan"),
        "episode_len_mean": _mean(lengths),
        "num_episodes": len(returns),
        "num_env_steps_sampled": steps,
    }


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
) -> dict[str, Any]:
    """Steps ``env`` with ``actions(obs) -> env actions`` until ``duration`` episodes (or env
    steps) are done, closes it, and returns RLlib's ``evaluation`` result dict.

    Args:
      env: The evaluation envs (closed here, whatever happens).
      actions: The greedy policy: a batch of observations (or agent slots) -> env actions.
      duration: ``evaluation_duration``: episodes, or env steps with ``by_episodes=False``;
        None (``"auto"``): until ``until()`` is true (the episodes finished by then).
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
        if duration is None:
            return until is None or until()
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
