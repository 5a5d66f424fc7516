"""``RLlibCallback``: user code called at RLlib's points of a run, with RLlib's arguments.

Subclass it and override the hooks you need; pass the class (or a list of classes) to
``config.callbacks(...)``, or pass single functions: ``config.callbacks(on_episode_end=fn)``.
Every hook takes keyword arguments only; accept ``**kwargs`` for the ones you do not use.

Where each hook runs here:

- ``on_algorithm_init``: at the end of ``build_algo()``.
- ``on_environment_created``: once for each vector env a runner builds (the fused path's
  EnvPool, each runner thread's env, a restarted runner's).
- ``on_episode_created`` / ``on_episode_start`` / ``on_episode_step`` / ``on_episode_end``: for
  every episode sampled, in the order the env produced them. rljax samples inside jitted code,
  so these run in ``train()``, once per iteration, over the steps sampled in it (handed to
  Python once per iteration, not once per step); each episode's hooks still see its steps in
  order, and values logged in them reach that iteration's result under ``env_runners``.
- ``on_sample_end``: once per iteration, after the episode hooks.
- ``on_train_result``: at the end of each ``train()``, with the result (which it may change).
- ``on_evaluate_start`` / ``on_evaluate_end``: around each ``evaluate()``.
- ``on_evaluate_offline_start`` / ``on_evaluate_offline_end``: around each
  ``evaluate_offline()`` (BC and MARWIL's loss on their offline data).
- ``on_checkpoint_loaded``: after ``restore_from_path`` / ``Algorithm.from_checkpoint``.
- ``on_env_runners_recreated``: in the ``train()`` during which runners were restarted.

An exception raised in a hook stops ``train()`` (or the call that ran it) with a
``CallbackError`` naming the hook and the callback class, the original chained to it.
"""

from __future__ import annotations

from typing import Any

HOOKS = (
    "on_algorithm_init",
    "on_train_result",
    "on_evaluate_start",
    "on_evaluate_end",
    "on_evaluate_offline_start",
    "on_evaluate_offline_end",
    "on_checkpoint_loaded",
    "on_env_runners_recreated",
    "on_environment_created",
    "on_episode_created",
    "on_episode_start",
    "on_episode_step",
    "on_episode_end",
    "on_sample_end",
)
EPISODE_HOOKS = ("on_episode_created", "on_episode_start", "on_episode_step", "on_episode_end")


class RLlibCallback:
    """The base class of user callbacks; every hook does nothing until overridden."""

    def on_algorithm_init(
        self, *, algorithm: Any, metrics_logger: Any = None, **kwargs: Any
    ) -> None:
        """The algorithm was built (``build_algo()``)."""

    def on_train_result(
        self, *, algorithm: Any, metrics_logger: Any = None, result: dict, **kwargs: Any
    ) -> None:
        """``train()`` finished an iteration; ``result`` may be changed in place."""

    def on_evaluate_start(
        self, *, algorithm: Any, metrics_logger: Any = None, **kwargs: Any
    ) -> None:
        """``evaluate()`` starts."""

    def on_evaluate_end(
        self,
        *,
        algorithm: Any,
        metrics_logger: Any = None,
        evaluation_metrics: dict,
        **kwargs: Any,
    ) -> None:
        """``evaluate()`` finished; ``evaluation_metrics`` may be changed in place."""

    def on_evaluate_offline_start(
        self, *, algorithm: Any, metrics_logger: Any = None, **kwargs: Any
    ) -> None:
        """``evaluate_offline()`` starts."""

    def on_evaluate_offline_end(
        self,
        *,
        algorithm: Any,
        metrics_logger: Any = None,
        evaluation_metrics: dict,
        **kwargs: Any,
    ) -> None:
        """``evaluate_offline()`` finished; ``evaluation_metrics`` may be changed in place."""

    def on_checkpoint_loaded(self, *, algorithm: Any, **kwargs: Any) -> None:
        """A checkpoint was restored into ``algorithm``."""

    def on_env_runners_recreated(
        self,
        *,
        algorithm: Any,
        env_runner_group: Any,
        env_runner_indices: list[int],
        is_evaluation: bool,
        **kwargs: Any,
    ) -> None:
        """Runners that failed were rebuilt (their indices; 1-based with runner threads)."""

    def on_environment_created(
        self,
        *,
        env_runner: Any,
        metrics_logger: Any = None,
        env: Any,
        env_context: Any,
        **kwargs: Any,
    ) -> None:
        """A runner built its vector env ``env``."""

    def on_episode_created(
        self,
        *,
        episode: Any,
        env_runner: Any = None,
        metrics_logger: Any = None,
        env: Any = None,
        env_index: int,
        rl_module: Any = None,
        **kwargs: Any,
    ) -> None:
        """A new episode object exists (before its first observation is added)."""

    def on_episode_start(
        self,
        *,
        episode: Any,
        env_runner: Any = None,
        metrics_logger: Any = None,
        env: Any = None,
        env_index: int,
        rl_module: Any = None,
        **kwargs: Any,
    ) -> None:
        """An episode starts: it holds the reset observation and info."""

    def on_episode_step(
        self,
        *,
        episode: Any,
        env_runner: Any = None,
        metrics_logger: Any = None,
        env: Any = None,
        env_index: int,
        rl_module: Any = None,
        **kwargs: Any,
    ) -> None:
        """An env step was added to ``episode`` (its last action, reward, observation, info)."""

    def on_episode_end(
        self,
        *,
        episode: Any,
        env_runner: Any = None,
        metrics_logger: Any = None,
        env: Any = None,
        env_index: int,
        rl_module: Any = None,
        **kwargs: Any,
    ) -> None:
        """``episode`` ended (terminated or truncated) with its last step added."""

    def on_sample_end(
        self, *, env_runner: Any = None, metrics_logger: Any = None, samples: Any, **kwargs: Any
    ) -> None:
        """An iteration's sampling is done: ``samples`` are its finished episodes."""


DefaultCallbacks = RLlibCallback  # RLlib's older name

__all__ = ["EPISODE_HOOKS", "HOOKS", "DefaultCallbacks", "RLlibCallback"]
