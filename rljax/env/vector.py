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
  (ASYNC with a batch smaller than the sub-envs) vector envs keep next-step resets: the reset
  result arrives in a later batch.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import traceback
import warnings
from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np

from rljax.env.api_check import ApiCheckedEnv
from rljax.env.env_context import EnvContext
from rljax.env.registry import registered_creator, registered_names
from rljax.env.steps import StepResult
from rljax.env.workers import main_hidden, sigint_blocked
from rljax.utils.errors import ConfigError, closest

logger = logging.getLogger("rljax")

# EnvPool declares float64 bounds on its float32 Box spaces, and gymnasium warns about it every time
# EnvPool builds a space (on make, recv and xla alike). The warning says nothing a user can act on.
warnings.filterwarnings("ignore", message=r".*Box (low|high)'s precision lowered by casting.*")

SYNC = "SYNC"
ASYNC = "ASYNC"


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


def envpool_reset_ended(env: Any) -> Callable[[Any, Any, Any], Any]:
    """``reset_ended(obs, env_id, done) -> obs``, traced: ``_reset_ended_rows`` for the fused
    rollout, as a host callback that runs only in steps where an episode ended."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import io_callback

    def reset_ended(obs: Any, env_id: Any, done: Any) -> Any:
        shapes = jax.tree.map(lambda o: jax.ShapeDtypeStruct(o.shape, o.dtype), obs)

        def call(args: Any) -> Any:
            return io_callback(functools.partial(_reset_ended_rows, env), shapes, *args)

        return jax.lax.cond(jnp.any(done), call, lambda args: args[0], (obs, env_id, done))

    return reset_ended


@functools.lru_cache(maxsize=1)
def _envpool_ids() -> tuple[str, ...]:
    try:
        import envpool
    except ImportError:  # pragma: no cover - envpool is a dependency on Linux
        return ()
    return tuple(envpool.list_all_envs())


def normalize_vectorize_mode(mode: Any) -> str:
    """Accepts "SYNC"/"ASYNC" (any case) and gymnasium's ``VectorizeMode`` values."""
    value = getattr(mode, "value", mode)
    if isinstance(value, str) and value.upper() in (SYNC, ASYNC):
        return value.upper()
    if isinstance(value, str) and value.lower() in ("sync", "async"):
        return value.upper()
    raise ConfigError(
        f"gym_env_vectorize_mode={mode!r} ({type(mode).__name__}) is not valid; use 'SYNC', "
        "'ASYNC' or "
        "gymnasium.VectorizeMode.SYNC / .ASYNC"
    )


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """A resolved environment: which backend runs it and how to create it.

    Attributes:
      backend: "envpool" or "gymnasium".
      name: The env id (or a readable name of the class / creator).
      creator: For gymnasium: ``creator(env_config) -> gymnasium.Env``.
      env_config: The user's env_config.
    """

    backend: str
    name: str
    creator: Callable[[dict[str, Any]], Any] | None
    env_config: dict[str, Any]

    def gymnasium_creator(self) -> Callable[[dict[str, Any]], Any]:
        """``creator`` of a gymnasium env (``resolve_env`` gives every one a creator; an EnvPool
        task has none: EnvPool builds its envs in C++)."""
        assert self.creator is not None, f"{self.name!r} runs on EnvPool: no gymnasium creator"
        return self.creator


def resolve_env(env: Any, env_config: dict[str, Any] | None = None) -> EnvSpec:
    """Decides which backend runs ``env`` (an id, a ``gymnasium.Env`` class or a creator).

    Registered names win, then EnvPool task ids, then gymnasium ids. An id both have runs on
    gymnasium when ``env_config`` names settings EnvPool's task does not have and gymnasium's
    env takes (FrozenLake's ``desc``), with a warning that says so; Atari ids stay on EnvPool,
    and a setting neither takes is refused naming EnvPool's.
    """
    env_config = dict(env_config or {})
    if env is None:
        raise ConfigError("no environment given; call config.environment('CartPole-v1') or similar")
    from rljax.env.jax_env import resolve_jax_env  # JAX envs ("gymnax:..."): rljax.env.jax_env

    jax_spec = resolve_jax_env(env, env_config)
    if jax_spec is not None:
        return EnvSpec(*jax_spec)
    if isinstance(env, str):
        creator = registered_creator(env)
        if creator is not None:
            return EnvSpec("gymnasium", env, creator, env_config)
        if env in _envpool_ids():
            foreign = _not_envpool_settings(env, env_config)
            # gymnasium's settings of the same task (FrozenLake's desc, is_slippery): its env.
            # Not for Atari: gymnasium's ALE env lacks EnvPool's preprocessing, which a model
            # would notice; envpool_config then names the setting EnvPool does not have.
            if (
                not foreign
                or env not in gym.registry
                or _envpool_defaults(env)[1]
                or not _gymnasium_takes(env, foreign)
            ):  # envpool_config names the setting neither has
                return EnvSpec("envpool", env, None, env_config)
            logger.warning(
                "%s runs on gymnasium, not EnvPool: EnvPool's task has no setting %s",
                env,
                ", ".join(repr(k) for k in foreign[:5]),
            )
            return EnvSpec("gymnasium", env, _GymMake(env), env_config)
        if env in gym.registry:
            return EnvSpec("gymnasium", env, _GymMake(env), env_config)
        known = list(registered_names()) + list(_envpool_ids()) + list(gym.registry)
        raise ConfigError(
            f"unknown env {env!r}{closest(env, known)}; pass an EnvPool task id, a gymnasium id, "
            "a name given to rljax.register_env, or a gymnasium.Env class"
        )
    if inspect.isclass(env):
        if not issubclass(env, gym.Env):
            raise ConfigError(f"env class {env.__name__} is not a gymnasium.Env subclass")
        return EnvSpec("gymnasium", env.__qualname__, env, env_config)
    if callable(env):
        return EnvSpec("gymnasium", getattr(env, "__name__", repr(env)), env, env_config)
    raise ConfigError(
        f"env={env!r} ({type(env).__name__}); use an id string, a gymnasium.Env class or a creator"
    )


class _GymMake:
    """``gymnasium.make(id, **env_config)``, picklable for ASYNC workers."""

    def __init__(self, env_id: str):
        self.env_id = env_id

    def __call__(self, env_config: dict[str, Any]) -> gym.Env:
        return gym.make(self.env_id, **env_config)


# EnvPool settings that rljax sets on every EnvPool env it builds (from num_envs_per_env_runner,
# the vectorize mode, async_batch_size and seed), or leaves at EnvPool's defaults on purpose:
# env_config may not change them. ``num_threads: 2000`` started 2,000 threads; a seed list
# would bypass rljax's seeding; ``gym_reset_return_info=False`` makes EnvPool refuse the env.
ENVPOOL_RLJAX_KEYS = (
    "num_envs",
    "batch_size",
    "seed",
    "env_seed",
    "num_threads",
    "thread_affinity_offset",
    "max_num_players",
    "gym_reset_return_info",
)
# Bounds of the EnvPool settings that size an observation or the work of one step or reset.
# The tuned values sit far inside: Atari's 84x84 frames (210x160 unresized), a stack of 4 frames,
# frame skip 4 and up to 30 no-op frames; MuJoCo's frame skip up to 40. Beyond these, a file
# could make one step or reset run for hours (frame_skip 10**9) or an empty observation
# (stack_num 0). Observation sizes are also counted in the memory estimate: the spaces are
# read from EnvPool's spec with these values, before any env exists.
ENVPOOL_BOUNDS: dict[str, tuple[float, float]] = {
    "img_height": (1, 1024),
    "img_width": (1, 1024),
    "stack_num": (1, 64),
    "frame_stack": (1, 64),
    "frame_skip": (1, 100),
    "action_repeat": (1, 100),
    "noop_max": (0, 10_000),
    "max_episode_steps": (0, 2**31 - 1),
    "repeat_action_probability": (0.0, 1.0),
}
# Every other int setting must fit EnvPool's C++ int; a larger one fails inside pybind11.
_INT32 = (-(2**31), 2**31 - 1)


def _shown_key(key: str) -> str:
    """A key as messages show it: a file's key may be of any length."""
    return repr(key if len(key) <= 60 else key[:60] + "...")


@functools.lru_cache(maxsize=64)
def _envpool_defaults(task: str) -> tuple[tuple[tuple[str, Any], ...], bool]:
    """EnvPool's settings of ``task`` with their defaults, and whether it is an Atari task.

    Read from ``envpool.make_spec``, which builds no env: milliseconds, nothing started.
    """
    import envpool

    try:
        spec = envpool.make_spec(task)
    except Exception as e:  # a task whose EnvPool module cannot load (Procgen without Qt)
        raise ConfigError(f"EnvPool cannot describe {task!r}: {type(e).__name__}: {e}") from e
    defaults = tuple(zip(spec._config_keys, spec.config, strict=True))
    return defaults, type(spec).__name__.startswith("Atari")


def is_envpool_atari(task: str) -> bool:
    """Whether ``task`` is one of EnvPool's Atari games."""
    return _envpool_defaults(task)[1]


def _check_envpool_setting(task: str, key: str, value: Any, default: Any) -> Any:
    """One env_config entry against the type of EnvPool's default (and ``ENVPOOL_BOUNDS``)."""
    from rljax.utils.checks import Bool, Int, Number

    name = f"env_config[{_shown_key(key)}]"
    bounds = ENVPOOL_BOUNDS.get(key)
    if isinstance(default, bool):
        return Bool()(name, value)
    if isinstance(default, int):
        low, high = _INT32 if bounds is None else (int(bounds[0]), int(bounds[1]))
        return Int(low, high)(name, value)
    if isinstance(default, float):
        number = Number(*bounds) if bounds is not None else Number()
        checked = number(name, value)
        assert isinstance(checked, (int, float))  # neither optional nor with literals: a number
        return float(checked)
    # Text settings name files, directories or games (base_path, xml_file, task, wad_path);
    # lists and dicts are the same in structured form. EnvPool opens what they name in C++: a
    # FIFO blocks the process, a path reads any file, an unknown game ends the process.
    kind = "text" if isinstance(default, str) else type(default).__name__
    raise ConfigError(
        f"{name} is a {kind} setting of EnvPool's {task!r} (it names a file, path or game "
        "that EnvPool opens); rljax passes EnvPool numbers and booleans only: choose the game "
        "or model by the env id"
    )


def _gymnasium_takes(env_id: str, keys: list[str]) -> bool:
    """Whether gymnasium's env ``env_id`` (its registered class) takes every one of ``keys``
    as a keyword argument, judged from its signature without building it."""
    try:
        entry = gym.spec(env_id).entry_point
        creator = gym.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
        if not callable(creator):
            return False
        params = inspect.signature(creator).parameters.values()
    except Exception:  # noqa: BLE001 - an entry point that cannot be read: not gymnasium's
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return True
    names = {p.name for p in params}
    return all(k in names for k in keys)


def _not_envpool_settings(task: str, env_config: dict[str, Any]) -> list[str]:
    """The keys of ``env_config`` that are no setting of EnvPool's ``task`` at all (rljax's
    own EnvPool keys count as settings: ``envpool_config`` refuses them by name)."""
    defaults, _ = _envpool_defaults(task)
    known = {k for k, _ in defaults} | set(ENVPOOL_RLJAX_KEYS)
    return [k for k in env_config if k not in known]


def _from_ale_names(task: str, env_config: dict[str, Any]) -> dict[str, Any]:
    """An Atari task's ``env_config`` with gymnasium's ALE names (``ale_py``'s ``AtariEnv``
    keywords, which RLlib's Atari scripts use) put in EnvPool's terms.

    ``repeat_action_probability``, ``full_action_space``, ``mode`` and ``difficulty`` are
    EnvPool's names too; ``frameskip=k`` (k > 1) is EnvPool's ``frame_skip`` (EnvPool
    max-pools the last two frames, as RLlib's ``MaxAndSkipEnv`` does). The ALE settings whose
    meaning would change under EnvPool's name are refused, saying what to set: ``frameskip=1``
    (RLlib's scripts set it on the raw game and let their wrapper skip 4 frames), a random
    ``frameskip`` range, ``max_num_frames_per_episode`` (frames, where EnvPool's
    ``max_episode_steps`` counts agent steps), ``obs_type`` and ``render_mode``.
    """
    if "frameskip" not in env_config and not any(k in env_config for k in _ALE_REFUSED):
        return env_config
    out = dict(env_config)
    for key, why in _ALE_REFUSED.items():
        if key in out:
            raise ConfigError(f"env_config[{key!r}]={out[key]!r} is gymnasium ALE's; {why}")
    skip = out.pop("frameskip", None)
    if skip is None:
        return out
    if "frame_skip" in out:
        raise ConfigError(
            f"env_config sets both 'frameskip' ({skip!r}, gymnasium ALE's name) and "
            f"'frame_skip' ({out['frame_skip']!r}, EnvPool's): set one"
        )
    if isinstance(skip, bool) or not isinstance(skip, (int, np.integer)):
        raise ConfigError(
            f"env_config['frameskip']={skip!r}: EnvPool's Atari task {task!r} repeats each "
            "action a fixed number of frames (an int; ALE's random range has no equivalent)"
        )
    if skip == 1:
        raise ConfigError(
            f"env_config['frameskip']=1 on EnvPool's Atari task {task!r}: RLlib's Atari scripts "
            "set it on the raw game because their wrapper (wrap_atari_for_new_api_stack) then "
            "repeats each action 4 frames, max-pooling the last two; EnvPool's task is that "
            "preprocessed game. Leave 'frameskip' out for its 4 frames, or set EnvPool's "
            "'frame_skip': 1 to act on every frame"
        )
    out["frame_skip"] = int(skip)
    return out


# gymnasium ALE settings whose meaning would change under EnvPool's name: why, what to set.
_ALE_REFUSED = {
    "max_num_frames_per_episode": (
        "it counts frames, and EnvPool's 'max_episode_steps' counts agent steps of "
        "'frame_skip' frames each (27000 steps = 108000 frames by default): set that instead"
    ),
    "obs_type": (
        "EnvPool's Atari observations are stacks of preprocessed 84x84 frames ('gray_scale': "
        "True, the default, or False for RGB); it has no RAM observations"
    ),
    "render_mode": (
        "EnvPool's envs do not render; rljax records Atari games with "
        "algo.evaluate(record_video=DIR) (or `rljax evaluate --video DIR`)"
    ),
}


def envpool_config(task: str, env_config: dict[str, Any]) -> dict[str, Any]:
    """``env_config`` checked against EnvPool's spec of ``task``, in its normal form.

    Only the task's own settings, each of its default's type (int, float or bool; an int is
    taken for a float), within ``ENVPOOL_BOUNDS`` where listed and a C++ int otherwise. Text
    and structured settings and ``ENVPOOL_RLJAX_KEYS`` are refused: the ``ConfigError`` names
    the key and what is allowed. An Atari task takes gymnasium ALE's names too
    (``_from_ale_names``). Nothing is built.
    """
    defaults, atari = _envpool_defaults(task)
    if atari:
        env_config = _from_ale_names(task, env_config)
    settable = {k: v for k, v in defaults if k not in ENVPOOL_RLJAX_KEYS}
    numeric = sorted(k for k, v in settable.items() if isinstance(v, (bool, int, float)))
    out: dict[str, Any] = {}
    for key, value in env_config.items():
        if key in ENVPOOL_RLJAX_KEYS:
            raise ConfigError(
                f"env_config[{_shown_key(key)}] is set by rljax on every EnvPool env "
                "(num_envs_per_env_runner, gym_env_vectorize_mode, async_batch_size and seed "
                "decide the env count, batch and seeds; threads are EnvPool's default); "
                "remove it from env_config"
            )
        if key not in settable:
            shown = ", ".join(numeric[:40]) + (", ..." if len(numeric) > 40 else "")
            raise ConfigError(
                f"env_config key {_shown_key(key)} is not a setting of EnvPool's {task!r} (its "
                f"settings: {shown or 'none'}){closest(key[:60], numeric)}"
            )
        out[key] = _check_envpool_setting(task, key, value, settable[key])
    return out


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
    return gym.spaces.Box(low, high, dtype=space.dtype)


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


def env_spaces(spec: EnvSpec) -> tuple[gym.Space, gym.Space]:
    """The single-env observation and action spaces.

    EnvPool: from the task's spec, without building an env (``envpool_spaces``). gymnasium:
    one env is built and closed; any failure is a ``ConfigError`` naming the env.
    """
    if spec.backend == "envpool":
        return envpool_spaces(spec)
    try:
        env = spec.gymnasium_creator()(EnvContext(spec.env_config))
    except ConfigError:
        raise
    except TypeError as e:  # most often a class whose __init__ takes no config
        raise ConfigError(
            f"building the env {spec.name!r} failed: {e}. rljax calls env classes and creators "
            "with the env_config, as RLlib does: define __init__(self, config=None)"
        ) from e
    except Exception as e:  # a missing dependency (ImportError), a bad env_config, ...
        raise ConfigError(f"building the env {spec.name!r} failed: {type(e).__name__}: {e}") from e
    if not isinstance(env, gym.Env):
        raise ConfigError(
            f"the env creator for {spec.name!r} returned {type(env).__name__}, not a gymnasium.Env"
        )
    spaces = env.observation_space, env.action_space
    env.close()
    return spaces


class _EnvFn:
    """``creator(EnvContext(env_config, worker_index, vector_index, num_workers))``, picklable.

    ``restart``: wrap the env in ``RestartingEnv`` (rebuilt from this creator when it raises).
    The result is checked against gymnasium's API (``ApiCheckedEnv``, naming the env ``name``),
    outside the restarter: an env that breaks the API is a bug to report, not a failure to
    restart.
    """

    # Set by GymVectorHostEnv: wrap the env in _StateAccess (in its ASYNC worker, or a
    # SyncVectorEnv), whose state a checkpoint saves.
    state_access: bool = False

    def __init__(
        self,
        creator: Callable[[dict[str, Any]], Any],
        context: EnvContext,
        restart: bool = False,
        name: str = "",
    ):
        self.creator = creator
        self.context = context
        self.restart = restart
        self.name = name or getattr(creator, "__name__", type(creator).__name__)

    def _make(self) -> gym.Env:
        env = self.creator(self.context)
        if not isinstance(env, gym.Env):
            raise TypeError(f"the env creator returned {type(env).__name__}, not a gymnasium.Env")
        return env

    def __call__(self) -> gym.Env:
        env: gym.Env
        if self.restart:
            from rljax.env.fault_tolerance import RestartingEnv
            from rljax.runners.faults import runner_name

            where = (
                f"sub-env {self.context.vector_index} of {runner_name(self.context.worker_index)}"
            )
            env = RestartingEnv(self._make, name=where)
        else:
            env = self._make()
        env = ApiCheckedEnv(env, self.name)
        if self.state_access:
            env = _StateAccess(env)
        return env


class _StateAccess(gym.Wrapper):
    """Reads and writes a sub-env's state (inside its ASYNC worker, through
    ``AsyncVectorEnv.call``; directly in a ``SyncVectorEnv``), and keeps the vector env's
    next-step auto-reset right across a restore: gymnasium keeps a pending reset to itself (a
    local variable in an ASYNC worker, a private attribute of ``SyncVectorEnv``), so a restored
    sub-env whose episode had just ended does that reset here, after a reset of the vector env
    cleared gymnasium's own flags, returning what gymnasium's reset would have.

    A state to check or restore arrives first as ``_rljax_incoming`` (``set_attr``: each worker
    gets only its own). Nothing raises out of these methods (an exception in a worker closes its
    pipe): problems come back as text, raised by the caller.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._ended = False  # the last step ended the episode: the next step resets
        self._force_reset = False
        self._rljax_incoming: Any = None

    def reset(self, **kwargs: Any):
        self._ended = self._force_reset = False
        return self.env.reset(**kwargs)

    def step(self, action: Any):
        if self._force_reset:
            obs, info = self.reset()
            return obs, 0.0, False, False, info
        out = self.env.step(action)
        self._ended = bool(out[2] or out[3])
        return out

    def rljax_get_state(self) -> dict[str, Any]:
        from rljax.env.state import get_env_state

        try:
            return {"layers": get_env_state(self.env), "ended": self._ended}
        except Exception:  # noqa: BLE001 (see the class docstring)
            return {"error": traceback.format_exc()}

    def rljax_check_state(self) -> str:
        from rljax.env.state import check_env_state

        try:
            check_env_state(self.env, self._rljax_incoming["layers"])
        except Exception:  # noqa: BLE001
            return traceback.format_exc()
        return ""

    def rljax_set_state(self) -> str:
        from rljax.env.state import set_env_state

        state, self._rljax_incoming = self._rljax_incoming, None
        try:
            set_env_state(self.env, state["layers"])
        except Exception:  # noqa: BLE001
            return traceback.format_exc()
        # Called right after a reset of the vector env: the worker's auto-reset flag is clear.
        self.restore_ended(bool(state["ended"]))
        return ""

    @property
    def ended(self) -> bool:
        """The last step ended the episode: the vector env resets this sub-env next step."""
        return self._ended

    def restore_ended(self, ended: bool) -> None:
        """After a reset of the vector env: the next step resets when the saved one would."""
        self._ended = self._force_reset = ended


def env_fns(
    spec: EnvSpec,
    num_envs: int,
    worker_index: int = 0,
    num_workers: int = 0,
    restart: bool = False,
) -> list[_EnvFn]:
    return [
        _EnvFn(
            spec.gymnasium_creator(),
            EnvContext(spec.env_config, worker_index, j, num_workers),
            restart,
            spec.name,
        )
        for j in range(num_envs)
    ]


def _restarted(info: dict, num_envs: int) -> np.ndarray:
    """The vector env's per-sub-env ``rljax_restarted`` flags (False where absent)."""
    from rljax.env.fault_tolerance import RESTARTED

    flags = np.zeros(num_envs, bool)
    if RESTARTED in info:
        flags |= np.asarray(info[RESTARTED], bool) & np.asarray(
            info.get("_" + RESTARTED, np.ones(num_envs, bool)), bool
        )
    return flags


def _final_observations(obs: Any, info: dict) -> Any:
    """gymnasium's same-step auto-reset as a dense batch: ``obs`` with the rows whose episode
    ended replaced by their final observations (``info["final_obs"]``, an object array)."""
    import jax

    ended = np.flatnonzero(np.asarray(info.get("_final_obs", ()), bool))
    if ended.size == 0:
        return obs
    final = jax.tree.map(np.array, obs)  # a copy, leaf by leaf (Dict spaces are dicts)
    for i in ended:

        def put(leaf: np.ndarray, value: Any, i: int = int(i)) -> None:
            leaf[i] = value

        jax.tree.map(put, final, info["final_obs"][i])
    return final


class GymVectorHostEnv:
    """gymnasium ``SyncVectorEnv`` (SYNC) or ``AsyncVectorEnv`` in spawned processes (ASYNC)."""

    def __init__(
        self,
        spec: EnvSpec,
        num_envs: int,
        mode: str,
        seed: int,
        worker_index: int = 0,
        num_workers: int = 0,
        restart_sub_envs: bool = False,
        same_step: bool = False,
    ):
        fns = env_fns(spec, num_envs, worker_index, num_workers, restart_sub_envs)
        self.restart_sub_envs = restart_sub_envs
        self.same_step = same_step
        mode_ = gym.vector.AutoresetMode
        autoreset = mode_.SAME_STEP if same_step else mode_.NEXT_STEP
        for fn in fns:
            fn.state_access = True  # see _StateAccess
        self.env: gym.vector.AsyncVectorEnv | gym.vector.SyncVectorEnv
        if mode == ASYNC:
            with main_hidden(), sigint_blocked():
                self.env = gym.vector.AsyncVectorEnv(fns, context="spawn", autoreset_mode=autoreset)
        else:
            self.env = gym.vector.SyncVectorEnv(fns, autoreset_mode=autoreset)
        self.num_envs = num_envs
        self.batch_size = num_envs
        self.keep_info = False  # results carry gymnasium's info dict (for episode callbacks)
        self.seed = seed
        self._ids = np.arange(num_envs, dtype=np.int32)
        self.action_space = self.env.single_action_space

    def reset(self) -> StepResult:
        obs, info = self.env.reset(seed=self.seed)
        n = self.num_envs
        return StepResult(
            obs,
            np.zeros(n, np.float32),
            np.zeros(n, bool),
            np.zeros(n, bool),
            self._ids,
            restarted=np.zeros(n, bool) if self.restart_sub_envs else None,
            info=info if self.keep_info else None,
            final_obs=obs if self.same_step else None,
        )

    def step(self, action: np.ndarray, env_id: np.ndarray) -> StepResult:
        del env_id  # every sub-env steps together, in env-id order
        obs, rew, term, trunc, info = self.env.step(action)
        return StepResult(
            obs,
            np.asarray(rew, np.float32),
            np.asarray(term, bool),
            np.asarray(trunc, bool),
            self._ids,
            restarted=_restarted(info, self.num_envs) if self.restart_sub_envs else None,
            info=info if self.keep_info else None,
            final_obs=_final_observations(obs, info) if self.same_step else None,
        )

    def get_state(self) -> dict[str, Any]:
        """The sub-envs' mid-episode state as plain data (``rljax.env.state``)."""
        from rljax.env.state import EnvStateError, encode, get_env_state

        if isinstance(self.env, gym.vector.SyncVectorEnv):
            try:
                layers = [get_env_state(e.env) for e in self._sync_envs()]
            except EnvStateError:
                raise
            except Exception as e:  # an env's own get_state() failed
                raise EnvStateError(f"reading a sub-env's state failed: {e!r}") from e
            ended = np.array([e.ended for e in self._sync_envs()])
        else:  # ASYNC: read inside each worker
            states = self.env.call("rljax_get_state")
            self._raise_problems([state.get("error") for state in states])
            layers = [state["layers"] for state in states]
            ended = np.array([state["ended"] for state in states])
        return {"envs": layers, "autoreset": encode(np.asarray(ended, bool), "autoreset flags")}

    def check_state(self, state: dict[str, Any]) -> None:
        """Raises ``EnvStateError`` unless ``state`` was saved from sub-envs built like these."""
        from rljax.env.state import EnvStateError, check_env_state, decode

        if not isinstance(state, dict) or not isinstance(state.get("envs"), list):
            raise EnvStateError("the saved vector env state must hold a list of sub-env states")
        autoreset = decode(state.get("autoreset"))
        if not isinstance(autoreset, np.ndarray) or autoreset.shape != (self.num_envs,):
            raise EnvStateError(f"the saved auto-reset flags must be {self.num_envs} booleans")
        if len(state["envs"]) != self.num_envs:
            raise EnvStateError(
                f"the saved state has {len(state['envs'])} sub-envs; this runner has "
                f"{self.num_envs}"
            )
        if isinstance(self.env, gym.vector.SyncVectorEnv):
            for env, env_state in zip(self._sync_envs(), state["envs"], strict=True):
                check_env_state(env.env, env_state)
            return
        self._send(state)
        self._raise_problems(self.env.call("rljax_check_state"))

    def set_state(self, state: dict[str, Any], checked: bool = False) -> None:
        """Restores ``state`` (``checked``: ``check_state`` already passed); if that fails, the
        sub-envs are reset as when built (so that they match the runner's first observation) and
        ``EnvStateError`` is raised."""
        from rljax.env.state import EnvStateError, decode, set_env_state

        if not checked:
            self.check_state(state)
        try:
            self.env.reset(seed=self.seed)  # clears gymnasium's auto-reset flags
            if isinstance(self.env, gym.vector.SyncVectorEnv):
                ended = decode(state["autoreset"])
                envs = self._sync_envs()
                for env, env_state, e in zip(envs, state["envs"], ended, strict=True):
                    set_env_state(env.env, env_state)
                    env.restore_ended(bool(e))
                return
            self._send(state)
            self._raise_problems(self.env.call("rljax_set_state"))
        except Exception as e:
            self.env.reset(seed=self.seed)
            if isinstance(e, EnvStateError):
                raise
            raise EnvStateError(f"restoring the sub-envs failed: {e!r}") from e

    def _sync_envs(self) -> list[_StateAccess]:
        """A ``SyncVectorEnv``'s sub-envs, each wrapped in ``_StateAccess`` (see ``__init__``)."""
        sync = cast(gym.vector.SyncVectorEnv, self.env)
        envs = [e for e in sync.envs if isinstance(e, _StateAccess)]
        if len(envs) != self.num_envs:
            raise TypeError("every sub-env of a SYNC runner is built wrapped in _StateAccess")
        return envs

    def _send(self, state: dict[str, Any]) -> None:
        """Hands each ASYNC worker its own sub-env's saved state."""
        from rljax.env.state import decode

        ended = decode(state["autoreset"])
        per_worker = [
            {"layers": layers, "ended": bool(e)}
            for layers, e in zip(state["envs"], ended, strict=True)
        ]
        self.env.set_attr("_rljax_incoming", per_worker)

    @staticmethod
    def _raise_problems(problems: Any) -> None:
        from rljax.env.state import EnvStateError, EnvStateMalformed

        for i, problem in enumerate(problems):
            if problem:
                # A worker reports its exception as text; a malformed state stays malformed.
                kind = EnvStateMalformed if "EnvStateMalformed" in problem else EnvStateError
                raise kind(f"sub-env {i}: {problem}")

    def close(self, terminate: bool = False) -> None:
        """``terminate``: a step may hang, so kill ASYNC worker processes instead of waiting."""
        if terminate:
            self.env.close(terminate=True)
        else:
            self.env.close()


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
        return FirstReadyVectorEnv(fns, async_batch_size, seed, restart_sub_envs)
    return GymVectorHostEnv(
        spec, num_envs, mode, seed, worker_index, num_workers, restart_sub_envs, same_step
    )
