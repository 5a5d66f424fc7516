"""EnvPool's settings: which tasks EnvPool has, their settings and defaults (read from its
spec, nothing built), and the check of a user's ``env_config`` against them
(``envpool_config``), with gymnasium ALE's names taken for Atari tasks."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from rljax.utils.checks import Bool, Int, Number
from rljax.utils.errors import ConfigError, closest

# EnvPool declares float64 bounds on its float32 Box spaces, and gymnasium warns about it every time
# EnvPool builds a space (on make, recv and xla alike). The warning says nothing a user can act on.
warnings.filterwarnings("ignore", message=r".*Box (low|high)'s precision lowered by casting.*")


@functools.lru_cache(maxsize=1)
def _envpool_ids() -> tuple[str, ...]:
    """EnvPool's task ids (listed once per process: about 2 s); none without EnvPool."""
    try:
        import envpool
    except ImportError:  # pragma: no cover - envpool is a dependency on Linux
        return ()
    return tuple(envpool.list_all_envs())


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
