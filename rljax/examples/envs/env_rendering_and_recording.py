"""RLlib's ``EnvRenderCallback`` (``ray.rllib.examples.envs.env_rendering_and_recording``): records
the best and worst episode of each iteration as a video in the env runners' metrics.

Each step of an episode renders the env (``on_episode_step``: the gymnasium sub-env's
``render()``, which must return an RGB array), resized to 64 x 96 and stored channels first in
the episode's ``custom_data``; ``on_episode_end`` keeps the episode if its return is the best or
worst so far in the iteration; ``on_sample_end`` logs the two as ``episode_videos_best`` and
``episode_videos_worst`` (``[1, T, 3, 64, 96]`` uint8, ``reduce="item_series"``), where the
result loggers (TensorBoard, W&B) find them.

Per-step rendering needs the env at each step: rljax calls episode hooks live on host runners
(gymnasium envs; ``rljax.callbacks.episodes``). Rendered frames are resized with
``rljax.utils.images.resize`` (OpenCV).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from rljax.callbacks.callbacks import RLlibCallback
from rljax.utils.images import resize


def _sub_env(env: Any, env_index: int) -> Any:
    """The sub-env an episode runs in, from the hook's ``env`` (a vector env or one env)."""
    unwrapped = getattr(env, "unwrapped", env)
    envs = getattr(unwrapped, "envs", None)
    if isinstance(unwrapped, gym.vector.VectorEnv) or envs is not None:
        return envs[env_index] if envs is not None else unwrapped
    return unwrapped


class EnvRenderCallback(RLlibCallback):
    """Renders each step of each episode and logs the iteration's best and worst episode as
    videos (see the module docstring).

    Args:
      env_runner_indices: Record on these env runners only (their ``worker_index``); None:
        on all.
    """

    def __init__(self, env_runner_indices: Sequence[int] | None = None):
        super().__init__()
        self._env_runner_indices = env_runner_indices
        self.best_episode_and_return: tuple[Any, float] = (None, float("-inf"))
        self.worst_episode_and_return: tuple[Any, float] = (None, float("inf"))

    def _active(self, env_runner: Any) -> bool:
        return self._env_runner_indices is None or (
            getattr(env_runner, "worker_index", 0) in self._env_runner_indices
        )

    def on_episode_step(
        self,
        *,
        episode: Any,
        env_runner: Any = None,
        metrics_logger: Any = None,
        env: Any = None,
        env_index: int = 0,
        rl_module: Any = None,
        **kwargs: Any,
    ) -> None:
        if not self._active(env_runner) or episode.is_done:
            return  # on the last step the sub-env is reset already (a same-step reset)
        image = _sub_env(env, env_index).render()
        image = np.transpose(resize(np.asarray(image, np.uint8), 64, 96), axes=[2, 0, 1])
        episode.custom_data.setdefault("render_images", []).append(image)

    def on_episode_end(
        self,
        *,
        episode: Any,
        env_runner: Any = None,
        metrics_logger: Any = None,
        env: Any = None,
        env_index: int = 0,
        rl_module: Any = None,
        **kwargs: Any,
    ) -> None:
        if not self._active(env_runner):
            return
        images = episode.custom_data.get("render_images")
        if not images:
            return
        episode_return = episode.get_return()
        if (
            episode_return > self.best_episode_and_return[1]
            or episode_return < self.worst_episode_and_return[1]
        ):
            video = np.expand_dims(np.stack(images, axis=0), axis=0)
            if episode_return > self.best_episode_and_return[1]:
                self.best_episode_and_return = (video, episode_return)
            else:
                self.worst_episode_and_return = (video, episode_return)

    def on_sample_end(
        self,
        *,
        env_runner: Any = None,
        metrics_logger: Any = None,
        samples: Any = None,
        **kwargs: Any,
    ) -> None:
        if self.best_episode_and_return[0] is not None:
            metrics_logger.log_value(
                "episode_videos_best", self.best_episode_and_return[0], reduce="item_series"
            )
            self.best_episode_and_return = (None, float("-inf"))
        if self.worst_episode_and_return[0] is not None:
            metrics_logger.log_value(
                "episode_videos_worst", self.worst_episode_and_return[0], reduce="item_series"
            )
            self.worst_episode_and_return = (None, float("inf"))


__all__ = ["EnvRenderCallback"]
