"""Which backend runs an env (``resolve_env``: a name, a class or a creator to an ``EnvSpec``),
and the vectorize modes (``SYNC`` / ``ASYNC``)."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rljax.env.envpool_settings import _envpool_defaults, _envpool_ids, _not_envpool_settings
from rljax.utils.errors import ConfigError, closest
from rljax.utils.registry import registered_creator, registered_names

logger = logging.getLogger("rljax")

SYNC = "SYNC"
ASYNC = "ASYNC"


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
      backend: "envpool", "gymnasium" or "jax" (an env written in JAX, ``rljax.env.jax_env``).
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

    Every env rljax runs is resolved here, once, before anything is built: a further backend
    is one more case in this function and one more ``EnvSpec.backend`` value, which
    ``rljax.env.vector``'s ``make_host_env`` and ``env_spaces`` dispatch on.
    """
    env_config = dict(env_config or {})
    if env is None:
        raise ConfigError("no environment given; call config.environment('CartPole-v1') or similar")
    # JAX envs ("gymnax:...", a JaxEnv class): rljax.env.jax_env. Imported here, not at the top:
    # an ASYNC gymnasium worker imports this module and must not load jax.
    from rljax.env.jax_env import resolve_jax_env

    jax_spec = resolve_jax_env(env, env_config)
    if jax_spec is not None:
        return EnvSpec(*jax_spec)
    if isinstance(env, str):
        creator = registered_creator(env)
        if creator is not None:
            return EnvSpec("gymnasium", env, creator, env_config)
        if env in _envpool_ids():
            foreign = _not_envpool_settings(env, env_config)
            if _stays_on_envpool(env, foreign):
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


def _stays_on_envpool(env: str, foreign: list[str]) -> bool:
    """Whether EnvPool's task ``env`` runs on EnvPool, given the settings ``foreign`` of its
    ``env_config`` that EnvPool's task does not have (none: it does). gymnasium's settings of the
    same task (FrozenLake's ``desc``, ``is_slippery``) send it to gymnasium's env; Atari never:
    gymnasium's ALE env lacks EnvPool's preprocessing, which a model would notice
    (``envpool_config`` then names the setting EnvPool does not have, as for a setting neither
    takes)."""
    return (
        not foreign
        or env not in gym.registry
        or bool(_envpool_defaults(env)[1])
        or not _gymnasium_takes(env, foreign)
    )


def runs_on_envpool(env: Any, env_config: dict[str, Any] | None = None) -> bool:
    """Whether ``resolve_env(env, env_config)`` picks EnvPool, decided by the same rules but
    quietly: no warning, no error (an env it would refuse is not EnvPool's), no env built and no
    JAX call (reading EnvPool's ids imports EnvPool, and with it JAX, but creates no JAX
    client). A JAX env's id has an adapter prefix (``"gymnax:..."``), which no EnvPool task id
    has, and a registered name is the registered env's. Settings EnvPool's task does not have
    are not checked here: ``envpool_config`` refuses them when the env is built."""
    if not isinstance(env, str) or env not in _envpool_ids() or registered_creator(env) is not None:
        return False
    try:
        return _stays_on_envpool(env, _not_envpool_settings(env, dict(env_config or {})))
    except ConfigError:  # EnvPool cannot describe the task: resolve_env refuses it
        return False


class _GymMake:
    """``gymnasium.make(id, **env_config)``, picklable for ASYNC workers."""

    def __init__(self, env_id: str):
        self.env_id = env_id

    def __call__(self, env_config: dict[str, Any]) -> gym.Env:
        return gym.make(self.env_id, **env_config)


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
