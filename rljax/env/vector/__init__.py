"""Vector envs behind one host interface, and the choice between EnvPool and gymnasium.

Two auto-reset modes, the same on every backend:

- next-step (the default): the step after an episode ends returns the first observation of the
  next episode with zero reward, and the action sent for the final observation is ignored. The
  runners mark that step's transition invalid. Replay buffers rely on it: the row after an
  episode's last step holds its final observation.
- same-step (``same_step=True``, for on-policy algorithms, as RLlib's env runners step): a step
  that ends an episode returns the next episode's first observation, and the final one in
  ``StepResult.final_obs``, so every step is a transition and a batch of N rows holds N env
  steps. gymnasium's ``AutoresetMode.SAME_STEP`` does it for gymnasium envs; EnvPool only resets
  on the next step, so a SYNC EnvPool sends that step at once for the sub-envs whose episode
  ended (their action is ignored) and returns its observations, from Python on the host path
  and through a host callback inside the fused rollout (``envpool_reset_ended``). First-ready
  gymnasium vector envs (ASYNC with ``async_batch_size``) reset inside each sub-env's process,
  in the step that ended the episode (``rljax.env.first_ready``); first-ready EnvPool envs
  (ASYNC with a batch smaller than the sub-envs) keep next-step resets: the reset result
  arrives in a later batch.

Where each job lives (this module dispatches between the backends and re-exports them):

- ``rljax.env.resolve``: which backend runs an env (``resolve_env`` -> ``EnvSpec``), the
  vectorize modes;
- ``rljax.env.envpool_settings``: EnvPool's tasks and settings, ``env_config`` checks;
- ``rljax.env.envpool_vector``: EnvPool's results, resets and steps (host and XLA), building it;
- ``rljax.env.gym_vector``: gymnasium's vector envs, their sub-envs' state;
- ``rljax.types``: ``StepResult``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rljax.env.envpool_settings import (
    ENVPOOL_BOUNDS,
    ENVPOOL_RLJAX_KEYS,
    _envpool_defaults,
    _envpool_ids,
    envpool_config,
    is_envpool_atari,
)
from rljax.env.envpool_vector import (
    ChannelsLastAtari,
    EnvPoolHostEnv,
    _reset_ended_rows,
    channels_last_space,
    envpool_batch_size,
    envpool_kwargs,
    envpool_reset,
    envpool_reset_ended,
    envpool_result,
    envpool_same_step,
    envpool_spaces,
    envpool_step,
    make_envpool,
)
from rljax.env.gym_vector import GymVectorHostEnv, _EnvFn, _StateAccess, env_fns, gymnasium_spaces
from rljax.env.resolve import ASYNC, SYNC, EnvSpec, normalize_vectorize_mode, resolve_env
from rljax.types import StepResult


def env_spaces(spec: EnvSpec) -> tuple[gym.Space, gym.Space]:
    """The single-env observation and action spaces.

    EnvPool: from the task's spec, without building an env (``envpool_spaces``). gymnasium:
    one env is built and closed (``gymnasium_spaces``); any failure is a ``ConfigError`` naming
    the env.
    """
    if spec.backend == "envpool":
        return envpool_spaces(spec)
    return gymnasium_spaces(spec)


def make_host_env(
    spec: EnvSpec,
    num_envs: int,
    mode: str,
    seed: int,
    async_batch_size: int | None,
    worker_index: int = 0,
    num_workers: int = 0,
    restart_sub_envs: bool = False,
    same_step: bool = False,
) -> Any:
    """The vector env of one runner (``restart_sub_envs``: gymnasium sub-envs are rebuilt when
    they raise; EnvPool's C++ envs do not raise; ``same_step``: same-step auto-reset where the
    vector env steps every sub-env together, see the module docstring).

    EnvPool: SYNC steps all sub-envs together; ASYNC returns the first ``async_batch_size`` ready.
    gymnasium: SYNC is ``SyncVectorEnv``; ASYNC is ``AsyncVectorEnv`` (lock-step, a process per
    sub-env), or, with ``async_batch_size`` set, first-ready batches as with EnvPool.
    """
    if spec.backend == "envpool":
        batch = envpool_batch_size(num_envs, mode, async_batch_size)
        return EnvPoolHostEnv(spec, num_envs, batch, seed, same_step)
    if mode == ASYNC and async_batch_size is not None:
        from rljax.env.first_ready import FirstReadyVectorEnv

        fns = env_fns(spec, num_envs, worker_index, num_workers, restart_sub_envs)
        return FirstReadyVectorEnv(fns, async_batch_size, seed, restart_sub_envs, same_step)
    return GymVectorHostEnv(
        spec, num_envs, mode, seed, worker_index, num_workers, restart_sub_envs, same_step
    )


__all__ = [
    "ASYNC",
    "ENVPOOL_BOUNDS",
    "ENVPOOL_RLJAX_KEYS",
    "SYNC",
    "ChannelsLastAtari",
    "EnvPoolHostEnv",
    "EnvSpec",
    "GymVectorHostEnv",
    "StepResult",
    "_EnvFn",
    "_StateAccess",
    "_envpool_defaults",
    "_envpool_ids",
    "_reset_ended_rows",
    "channels_last_space",
    "env_fns",
    "env_spaces",
    "envpool_batch_size",
    "envpool_config",
    "envpool_kwargs",
    "envpool_reset",
    "envpool_reset_ended",
    "envpool_result",
    "envpool_same_step",
    "envpool_spaces",
    "envpool_step",
    "gymnasium_spaces",
    "is_envpool_atari",
    "make_envpool",
    "make_host_env",
    "normalize_vectorize_mode",
    "resolve_env",
]
