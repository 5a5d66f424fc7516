"""``StepResult``: what every vector env returns for one batch of sub-envs."""

from __future__ import annotations

from typing import Any, NamedTuple


class StepResult(NamedTuple):
    """What a vector env returns for the sub-envs of one batch.

    Attributes:
      obs: Observations of shape [K, *obs_shape].
      reward: A float32 tensor of shape [K].
      terminated: A bool tensor of shape [K].
      truncated: A bool tensor of shape [K].
      env_id: An int32 tensor of shape [K]: which sub-env each row belongs to.
      raw_reward: For metrics, the unclipped reward (Atari with reward clipping), or None.
      game_over: For metrics, where a whole game ended (Atari with episodic life, where losing a
        life terminates the learning episode), or None: then every end counts.
      restarted: Where a sub-env raised and was rebuilt (``restart_failed_sub_environments``):
        the row is the fresh env's first observation, and the broken episode is dropped. None
        when restarts are off.
      info: The env's info arrays, where episode callbacks asked for them; else None.
      final_obs: With same-step auto-reset (``same_step_reset``): the observation each row's
        step led to, [K, *obs_shape]. Where a row's episode ended, ``obs`` is already the next
        episode's first observation and ``final_obs`` the ended episode's last one; elsewhere
        the two are equal. None with next-step auto-reset, where the step after an episode end
        returns the first observation of the next episode and is no transition.
    """

    obs: Any
    reward: Any
    terminated: Any
    truncated: Any
    env_id: Any
    raw_reward: Any = None
    game_over: Any = None
    restarted: Any = None
    info: Any = None
    final_obs: Any = None


__all__ = ["StepResult"]
