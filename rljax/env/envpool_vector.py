"""EnvPool behind rljax's vector-env interface: its outputs as ``StepResult``s (numpy on the
host, traced inside the fused rollout's XLA program), resets and steps with same-step
auto-reset, building an env (Atari in RLlib's channels-last layout) and reading its spaces."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from rljax.env.envpool_settings import _envpool_defaults, envpool_config, is_envpool_atari
from rljax.env.resolve import SYNC, EnvSpec
from rljax.types import StepResult
from rljax.utils.errors import ConfigError


def envpool_result(
    obs: Any,
    reward: Any,
    terminated: Any,
    truncated: Any,
    info: dict,
    xp: Any = np,
    keep_info: bool = False,
    reset_ended: Callable[[Any, Any, Any], Any] | None = None,
) -> StepResult:
    """A ``StepResult`` from EnvPool's outputs (numpy or traced), with Atari's metric fields
    (and the info arrays themselves with ``keep_info``); with ``reset_ended``
    (``_reset_ended_rows`` bound to the env, or ``envpool_reset_ended``'s traced form) the
    result of a same-step reset, the final observations in ``final_obs``."""
    final_obs = None
    if reset_ended is not None:
        final_obs = obs
        obs = reset_ended(obs, info["env_id"], xp.asarray(terminated) | xp.asarray(truncated))
    return StepResult(
        obs,
        xp.asarray(reward, xp.float32),
        xp.asarray(terminated, bool),
        xp.asarray(truncated, bool),
        xp.asarray(info["env_id"], xp.int32),
        xp.asarray(info["reward"], xp.float32) if "reward" in info else None,
        (xp.asarray(info["terminated"], bool) | xp.asarray(truncated, bool))
        if "lives" in info
        else None,
        info=dict(info) if keep_info else None,
        final_obs=final_obs,
    )


def _row_positions(env_id: np.ndarray, rows_env_id: np.ndarray) -> np.ndarray:
    """For each id in ``env_id``, its row in a batch whose rows hold ``rows_env_id``."""
    pos = np.full(int(max(rows_env_id.max(), env_id.max())) + 1, -1, np.int64)
    pos[rows_env_id] = np.arange(len(rows_env_id))
    return pos[env_id]


def _reset_ended_rows(env: Any, obs: Any, env_id: Any, done: Any) -> Any:
    """Sends a SYNC EnvPool's reset step to the sub-envs of the rows where ``done`` (EnvPool
    resets on the step after an episode end and ignores its action); returns ``obs`` with those
    rows replaced by the first observations of the next episodes."""
    import jax

    done = np.asarray(done, bool)
    env_id = np.asarray(env_id, np.int32)
    if not done.any():
        return obs
    ended = env_id[done]
    space = env.action_space
    env.send(np.zeros((len(ended), *space.shape), space.dtype), ended)
    new_obs, _rew, _term, _trunc, info = env.recv()
    rows = _row_positions(np.asarray(info["env_id"], np.int32), env_id)

    def replace(old: Any, new: Any) -> np.ndarray:
        out = np.array(old)  # a copy: callback operands are read-only
        out[rows] = new
        return out

    return jax.tree.map(replace, obs, new_obs)


def envpool_same_step(env: Any, same_step: bool) -> bool:
    """Whether ``env`` (an EnvPool) resets same-step: asked for, and SYNC (every sub-env in
    each batch; a first-ready batch's reset result would arrive in a later batch)."""
    return same_step and env.config["batch_size"] == env.config["num_envs"]


def envpool_reset(env: Any, keep_info: bool = False, same_step: bool = False) -> StepResult:
    """Resets every sub-env of ``env`` (an EnvPool) and returns the first result; a same-step
    one carries ``final_obs`` (equal to ``obs``: no episode ended)."""
    env.async_reset()
    obs, rew, term, trunc, info = env.recv()
    result = envpool_result(obs, rew, term, trunc, info, keep_info=keep_info)
    return result._replace(final_obs=result.obs) if same_step else result


def envpool_step(
    env: Any, action: Any, env_id: Any, keep_info: bool = False, same_step: bool = False
) -> StepResult:
    """Sends ``action`` to the sub-envs ``env_id`` of ``env`` (an EnvPool) and returns the next
    result; ``same_step``: the ended sub-envs are reset at once (``_reset_ended_rows``)."""
    env.send(action, np.asarray(env_id, np.int32))
    obs, rew, term, trunc, info = env.recv()
    reset = functools.partial(_reset_ended_rows, env) if same_step else None
    return envpool_result(obs, rew, term, trunc, info, keep_info=keep_info, reset_ended=reset)


def envpool_reset_ended(
    env: Any, host_fn: Callable[..., Any] | None = None
) -> Callable[[Any, Any, Any], Any]:
    """``reset_ended(obs, env_id, done) -> obs``, traced: ``_reset_ended_rows`` for the fused
    rollout, as a host callback that runs only in steps where an episode ended. ``host_fn``:
    a function of ``_reset_ended_rows``'s arguments to call in its place (a profile's wrapper
    around it)."""
    import jax
    import jax.numpy as jnp

    from rljax.utils.host_call import host_call

    def reset_ended(obs: Any, env_id: Any, done: Any) -> Any:
        shapes = jax.tree.map(lambda o: jax.ShapeDtypeStruct(o.shape, o.dtype), obs)

        def call(args: Any) -> Any:
            host = _reset_ended_rows if host_fn is None else host_fn
            # Not io_callback: it moves the operands to a device and back on every call
            # (rljax.utils.host_call).
            return host_call(functools.partial(host, env), shapes, *args)

        return jax.lax.cond(jnp.any(done), call, lambda args: args[0], (obs, env_id, done))

    return reset_ended


def envpool_kwargs(spec: EnvSpec) -> dict[str, Any]:
    """EnvPool's make() kwargs for a task: Atari gets the standard DQN preprocessing, then the
    checked ``env_config`` (``envpool_config``)."""
    checked = envpool_config(spec.name, spec.env_config)
    kwargs: dict[str, Any] = {}
    if _envpool_defaults(spec.name)[1]:
        kwargs.update(episodic_life=True, reward_clip=True)
    kwargs.update(checked)
    return kwargs


def channels_last_space(space: gym.spaces.Box) -> gym.spaces.Box:
    """An EnvPool Atari observation space ``[S, H, W]`` as RLlib's ``[H, W, S]``."""
    low, high = (np.moveaxis(np.asarray(b), 0, -1) for b in (space.low, space.high))
    dtype: Any = space.dtype  # gymnasium < 1.4 types Box's dtype as a scalar type
    return gym.spaces.Box(low, high, dtype=dtype)


class ChannelsLastAtari:
    """An EnvPool Atari env whose observations are ``[H, W, S]`` (RLlib's Atari layout: frames
    stacked on the last axis, as convolutions read them) instead of EnvPool's ``[S, H, W]``.

    Every way rljax reads observations goes through here: ``recv`` and ``step`` (numpy), and
    the XLA interface's ``recv`` and ``step`` (traced, transposed inside the jitted program).
    Everything else is EnvPool's.
    """

    def __init__(self, env: Any):
        self._env = env
        self.observation_space = channels_last_space(env.observation_space)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    @staticmethod
    def _moved(out: tuple, xp: Any = np) -> tuple:
        obs, *rest = out
        return (xp.moveaxis(obs, 1, -1), *rest)

    def recv(self, *args: Any, **kwargs: Any) -> tuple:
        return self._moved(self._env.recv(*args, **kwargs))

    def step(self, *args: Any, **kwargs: Any) -> tuple:
        return self._moved(self._env.step(*args, **kwargs))

    def reset(self, *args: Any, **kwargs: Any) -> tuple:
        return self._moved(self._env.reset(*args, **kwargs))

    def xla(self) -> tuple:
        import jax.numpy as jnp

        handle, recv, send, step = self._env.xla()

        def xla_recv(handle: Any) -> Any:
            handle, out = recv(handle)
            return handle, self._moved(out, jnp)

        def xla_step(handle: Any, action: Any, env_id: Any) -> Any:
            handle, out = step(handle, action, env_id)
            return handle, self._moved(out, jnp)

        return handle, xla_recv, send, xla_step


def make_envpool(spec: EnvSpec, num_envs: int, batch_size: int, seed: int) -> Any:
    """The EnvPool env of ``spec`` (its env_config checked first); any failure to build it is a
    ``ConfigError`` naming the task and the env_config. Atari tasks' observations are
    ``[H, W, S]``, RLlib's layout (``ChannelsLastAtari``)."""
    import envpool

    kwargs = envpool_kwargs(spec)
    try:
        env = envpool.make(
            spec.name,
            env_type="gymnasium",
            num_envs=num_envs,
            batch_size=batch_size,
            seed=seed,
            **kwargs,
        )
    except Exception as e:  # EnvPool's C++ raises RuntimeError (an Atari mode it lacks), ...
        raise ConfigError(
            f"EnvPool could not build {spec.name!r} with env_config={spec.env_config}: "
            f"{type(e).__name__}: {e}"
        ) from e
    return ChannelsLastAtari(env) if is_envpool_atari(spec.name) else env


def envpool_spaces(spec: EnvSpec) -> tuple[gym.Space, gym.Space]:
    """The single-env spaces of an EnvPool task with its env_config, from EnvPool's spec.

    An EnvPool env's spaces are its spec's (``GymnasiumEnvPool.observation_space`` reads
    ``spec.gymnasium_observation_space``), so no env is built: the memory check runs before
    EnvPool starts a thread or allocates a frame.
    """
    import envpool

    kwargs = envpool_kwargs(spec)
    try:
        task_spec = envpool.make_spec(spec.name, **kwargs)
        obs_space = task_spec.gymnasium_observation_space
        if is_envpool_atari(spec.name):
            obs_space = channels_last_space(obs_space)
        return obs_space, task_spec.gymnasium_action_space
    except Exception as e:
        raise ConfigError(
            f"EnvPool could not describe {spec.name!r} with env_config={spec.env_config}: "
            f"{type(e).__name__}: {e}"
        ) from e


class EnvPoolHostEnv:
    """EnvPool driven from Python with ``send``/``recv``; ASYNC when ``batch_size < num_envs``."""

    def __init__(
        self, spec: EnvSpec, num_envs: int, batch_size: int, seed: int, same_step: bool = False
    ):
        self.env = make_envpool(spec, num_envs, batch_size, seed)
        self.num_envs = num_envs
        self.batch_size = batch_size
        self.keep_info = False  # results carry the info arrays (for episode callbacks)
        self.action_space = self.env.action_space
        self._same_step = envpool_same_step(self.env, same_step)

    def reset(self) -> StepResult:
        return envpool_reset(self.env, self.keep_info, self._same_step)

    def step(self, action: np.ndarray, env_id: np.ndarray) -> StepResult:
        return envpool_step(self.env, action, env_id, self.keep_info, self._same_step)

    def close(self, terminate: bool = False) -> None:
        self.env.close()  # EnvPool's C++ envs do not hang in Python


def envpool_batch_size(num_envs: int, mode: str, async_batch_size: int | None) -> int:
    """EnvPool's batch: all sub-envs in SYNC mode, the first ``async_batch_size`` ready in ASYNC."""
    if mode == SYNC:
        return num_envs
    return async_batch_size or max(1, num_envs // 2)
