"""How an algorithm evaluates (``EvaluationHooks``, a base of ``Algorithm``, whose
``evaluate()`` and ``train()`` call it): one evaluation as the config asks
(``rljax.execution.evaluation``), with the current weights or a snapshot of them, on the
evaluation envs, with the actions of the algorithm's inference (``Inference``).

A subclass overrides ``_evaluation_env`` where its envs differ (multi-agent PPO's).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rljax.algorithms.rllib_surface import EnvRunner
from rljax.callbacks.episodes import replay_finished
from rljax.env.single_agent_episode import SingleAgentEpisode
from rljax.env.vector import EnvSpec
from rljax.execution import evaluation as evaluation_job
from rljax.execution.evaluation import EvaluationEnv
from rljax.execution.iteration import evaluation_due
from rljax.execution.parts import PolicyParts
from rljax.offline.learning import OfflineLossEvaluation
from rljax.offline.recording import end_of_sampling
from rljax.utils.errors import ConfigError
from rljax.utils.metrics.metrics_logger import MetricsLogger, merge_into
from rljax.utils.seeding import derive_seed

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.core.rl_module.inference import Inference


# The episode hooks an evaluation's episodes run (single-agent runs).
EPISODE_HOOKS = ("on_episode_created", "on_episode_start", "on_episode_step", "on_episode_end")


def _both(first: Callable[[Any], None] | None, second: Callable[[Any], None]) -> Any:
    """One callable that calls ``first`` (if any), then ``second``."""

    def call(item: Any) -> None:
        if first is not None:
            first(item)
        second(item)

    return call


class EvaluationHooks:
    """An algorithm's evaluations; ``Algorithm`` sets what is declared."""

    # Set by ``Algorithm.__init__`` (and ``parts``, ``state`` by the subclass's ``_setup()``).
    config: AlgorithmConfig
    parts: PolicyParts[Any]
    state: Any
    env_spec: EnvSpec | None
    observation_space: Any
    action_space: Any
    seed: int
    metrics: MetricsLogger
    possible_agents: list[Any] | None
    _inference: Inference
    _num_evaluations: int
    _recorder: Any  # offline_data(output=...)'s EpisodeRecorder, or None

    iteration: int
    callbacks: Any  # ``Algorithm``'s dispatcher of the user's hooks

    if TYPE_CHECKING:  # ``Algorithm``'s

        def _policy_ids(self) -> list[str]: ...

        def _module(self, policy_id: str | None = None) -> Any: ...

    def _offline_loss_evaluation(self) -> OfflineLossEvaluation | None:
        """The algorithm's evaluation of its loss on offline data (BC's, MARWIL's); None."""
        return None

    def evaluate_offline(self) -> dict[str, Any]:
        """RLlib's ``Algorithm.evaluate_offline()``: BC's or MARWIL's training loss with the
        current weights on batches of the offline data (``offline_eval_batch_size_per_runner``
        rows, ``dataset_num_iters_per_offline_eval_runner`` of them), between the
        ``on_evaluate_offline_start`` / ``_end`` hooks; ``{"offline_eval_runners": {...}}`` in
        RLlib's layout (``total_eval_loss`` per policy).

        Raises:
          ConfigError: the algorithm has no offline data to evaluate on.
        """
        evaluation = self._offline_loss_evaluation()
        if evaluation is None:
            raise ConfigError(
                f"{type(self).__name__}.evaluate_offline() computes the loss on offline data, "
                "which BC and MARWIL learn from (offline_data(input_=...)); this algorithm "
                "has none"
            )
        self.callbacks("on_evaluate_offline_start", algorithm=self, metrics_logger=self.metrics)
        metrics = evaluation.run(self._policy_ids()[0], self.state, self.iteration)
        self.callbacks(
            "on_evaluate_offline_end",
            algorithm=self,
            metrics_logger=self.metrics,
            evaluation_metrics=metrics,
        )
        return {"offline_eval_runners": metrics}

    def _offline_evaluation(self, iteration: int) -> dict[str, Any] | None:
        """The offline evaluation of the iteration after ``iteration`` when one is due
        (``evaluation(offline_evaluation_interval=...)``): the entries it adds to
        ``result["evaluation"]``; None: none."""
        evaluation = self._offline_loss_evaluation()
        if evaluation is None or not evaluation_due(evaluation.interval, iteration):
            return None
        return {
            **self.evaluate_offline(),
            "num_healthy_offline_eval_runners": 0,
            "offline_runners_actor_manager_num_outstanding_async_reqs": 0,
            "num_remote_offline_eval_runners_restarts": 0,
        }

    def _evaluation_params(self) -> Any:
        """A copy of the weights evaluation acts with (so that training may go on)."""
        return evaluation_job.evaluation_params(self.parts, self.state)

    def _run_evaluation(
        self,
        video_dir: Path | None = None,
        params: Any = None,
        trained: threading.Event | None = None,
    ) -> dict[str, Any]:
        """One evaluation (no callbacks): with the current weights, or ``params``; ``trained``:
        set when the training step it runs beside has ended (``evaluation_duration="auto"``)."""
        cfg = self.config
        spaces = (self.observation_space, self.action_space)
        spec = evaluation_job.evaluation_spec(cfg, self.env_spec, spaces)
        self._num_evaluations += 1
        seed = derive_seed(self.seed, 7919 * self._num_evaluations)  # new episodes each time
        actions = self._evaluation_actions(evaluation_job.evaluation_explores(cfg), params)
        if cfg.custom_evaluation_function is not None and video_dir is None:
            return evaluation_job.custom_evaluation(
                self,
                cfg,
                actions,
                seed,
                spec,
                spaces,
                self.metrics,
                self.possible_agents is not None,
            )
        agents = self.possible_agents
        try:
            result = evaluation_job.run_evaluation(
                cfg,
                spec,
                seed,
                actions,
                self._evaluation_env,
                recurrent=self.parts.recurrent_inference is not None,
                video_dir=video_dir,
                trained=trained,
                policy_ids=self._policy_ids() if agents is not None else None,
                agent_ids=agents,
            )
            logged = self.__dict__.get("_evaluation_logger")
            if logged is not None and len(logged) and "env_runners" in result:
                merge_into(result["env_runners"], logged.reduce(), "evaluation/env_runners/")
            return result
        finally:
            end_of_sampling(self._recorder)  # offline_data(output=...)'s rows of this one

    def _evaluation_env(
        self, num_envs: int, seed: int, spec: EnvSpec | None = None
    ) -> EvaluationEnv:
        """``num_envs`` copies of the env ``spec`` (default: the training env) for
        evaluation (a multi-agent run builds its own)."""
        spec = spec or self.env_spec
        if spec is None:  # an offline learner built from environment(observation_space=...)
            raise ConfigError(
                f"{self.config.algo_name}: evaluation steps an env, and this algorithm has none "
                "(it learns from offline data with the spaces environment() gave); set "
                "config.environment(env) to evaluate, or evaluate the loss on offline data "
                "(evaluation(offline_evaluation_interval=...))"
            )
        recorder = self._recorder
        record = None if recorder is None else recorder.add
        if any(self.callbacks.users_only().defines(h) for h in EPISODE_HOOKS):
            record = _both(record, self._evaluation_episode_hooks)
        return evaluation_job.single_agent_env(spec, num_envs, seed, record)

    def _evaluation_episode_hooks(self, episode: SingleAgentEpisode) -> None:
        """The episode hooks over an evaluation episode that ended, as RLlib's evaluation env
        runners call them: their ``env_runner``'s config is the evaluation config
        (``in_evaluation`` True), and what they log goes to the evaluation's results."""
        view = self.__dict__.get("_evaluation_runner")
        if view is None:
            config = self.config.get_evaluation_config_object()
            view = self.__dict__["_evaluation_runner"] = EnvRunner(1, None, None, config, self, -2)
        context = {
            "env_runner": view,
            "env": None,  # the evaluation envs step on: an ended episode's env has moved on
            "env_index": episode.env_index,
            "rl_module": self._module(),
        }
        spaces = (self.observation_space, self.action_space)
        callbacks = self.callbacks.users_only()  # the recorder takes the episode directly
        replay_finished(callbacks, self._evaluation_metrics(), episode, context, spaces)

    def _evaluation_metrics(self) -> MetricsLogger:
        """The logger evaluation episode hooks log to (its values go to ``evaluation``'s
        ``env_runners`` results)."""
        logger = self.__dict__.get("_evaluation_logger")
        if logger is None:
            logger = self.__dict__["_evaluation_logger"] = MetricsLogger()
        return logger

    def _evaluation_actions(
        self, explore: bool = False, params: Any = None
    ) -> Callable[[Any], np.ndarray]:
        """Observations -> the policy's env actions (greedy, or sampled with ``explore``), for
        evaluation; with ``params`` (a snapshot) instead of the current weights."""
        return self._inference.evaluation_actions(explore, params)


__all__ = ["EvaluationHooks"]
