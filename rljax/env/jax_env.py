"""Environments written in JAX: a functional protocol, stepped inside the training program.

An env that follows the protocol is pure JAX: its state is a pytree, and reset and step are
traceable, so a rollout is ``lax.scan`` over ``vmap``-ed envs and rollout, postprocess and
update compile into one program (``rljax.runners.jax_env``); no host thread or callback steps
it.

The protocol (``JaxEnv``):

```python
reset(key) -> (state, obs)
step(state, action, key) -> (state, obs, reward, terminated, truncated, info)
```

with gymnasium spaces (``observation_space``, ``action_space``) and the env's parameters bound
when it is built. ``terminated`` (a terminal state) and ``truncated`` (cut by a time limit) stay
apart: a truncated episode's value is bootstrapped from its last observation. ``TimeLimit``
adds truncation at a step count; ``auto_reset_step`` resets an env whose episode ended inside
the same step (same-step auto-reset: every step is a transition, so a batch of N rows holds N
env steps, as on the other paths), returning the ended episode's last observation apart.

Envs are selected by name as EnvPool ids are: ``"rljax:CartPole-v1"`` (rljax's own, no extra
library), ``"gymnax:CartPole-v1"``, ``"jumanji:Snake-v1"``, ``"brax:ant"`` (adapters,
``rljax.env.jax_adapters``), or a user's ``JaxEnv`` subclass passed to
``.environment()`` or registered with ``register_env(name, TheClass)`` (built with the
``env_config``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.utils.checks import TIME_LIMIT
from rljax.utils.errors import ConfigError

JAX_BACKEND = "jax"
"""The ``EnvSpec.backend`` of a JAX env (the others: ``"envpool"`` and ``"gymnasium"``)."""


class JaxEnv:
    """The protocol of an environment written in JAX (subclass it, or follow it).

    Attributes:
      observation_space: A gymnasium space of one env's observations.
      action_space: A gymnasium space of one env's actions.
      max_episode_steps: The env's own time limit, or None. ``make_jax_env`` wraps the env in
        ``TimeLimit`` with it (``env_config["max_episode_steps"]`` overrides it).

    An env may also define ``render(state) -> np.ndarray``: an ``[H, W, 3]`` uint8 picture of
    one env's state, called on the host (not traced). Evaluation videos
    (``algo.evaluate(record_video=DIR)``) then play the env through ``JaxGymEnv``, whose
    ``render_mode`` is ``"rgb_array"``.
    """

    observation_space: gym.Space
    action_space: gym.Space
    max_episode_steps: int | None = None

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        """``(state, obs)`` of a new episode; traceable."""
        raise NotImplementedError

    def step(
        self, state: Any, action: Any, key: jax.Array
    ) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        """``(state, obs, reward, terminated, truncated, info)`` of one step; traceable. No
        auto-reset: after an episode end the caller resets (``auto_reset_step``)."""
        raise NotImplementedError


def is_jax_env(obj: Any) -> bool:
    """Whether ``obj`` (an instance) follows the protocol."""
    if isinstance(obj, JaxEnv):
        return True
    methods = all(callable(getattr(obj, name, None)) for name in ("reset", "step"))
    return methods and isinstance(getattr(obj, "observation_space", None), gym.Space)


class TimeLimitState(NamedTuple):
    """``TimeLimit``'s state: the env's, and the steps taken in the episode."""

    env: Any
    t: jax.Array


class TimeLimit(JaxEnv):
    """Truncates an episode after ``max_episode_steps`` steps (unless it terminated then).

    Args:
      env: A ``JaxEnv``.
      max_episode_steps: The limit, at least 1.
    """

    def __init__(self, env: Any, max_episode_steps: int):
        self.env = env
        self._limit = int(TIME_LIMIT("max_episode_steps", max_episode_steps))  # type: ignore[arg-type]
        self.max_episode_steps = self._limit
        self.observation_space = env.observation_space
        self.action_space = env.action_space

    def reset(self, key: jax.Array) -> tuple[TimeLimitState, Any]:
        state, obs = self.env.reset(key)
        return TimeLimitState(state, jnp.zeros((), jnp.int32)), obs

    def step(
        self, state: TimeLimitState, action: Any, key: jax.Array
    ) -> tuple[TimeLimitState, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        inner, obs, reward, terminated, truncated, info = self.env.step(state.env, action, key)
        t = state.t + 1
        terminated = jnp.asarray(terminated, bool)
        truncated = (jnp.asarray(truncated, bool) | (t >= self._limit)) & ~terminated
        return TimeLimitState(inner, t), obs, reward, terminated, truncated, info

    def __getattr__(self, name: str) -> Any:
        if name == "render" and callable(getattr(self.env, "render", None)):
            return lambda state: self.env.render(state.env)
        raise AttributeError(name)


def strong_types(tree: Any) -> Any:
    """``tree`` with every weak-typed leaf made strong (the same dtype), traceable. A runner state
    an iteration returns has no weak types (``jnp.where`` with a strong operand drops them), so
    a first state that has some (an env's ``reset`` writing a Python number) would make the
    iteration's program compile twice; on the host path, an env step jitted on its own would
    compile again for the second step's strong state."""

    def strong(x: Any) -> Any:
        if not hasattr(x, "dtype"):  # a Python number (gymnax's reset writes ``time=0``)
            x = jnp.asarray(x)
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended):
            return x
        return jnp.asarray(x).astype(x.dtype)

    return jax.tree.map(strong, tree)


def _host_obs(obs: Any) -> Any:
    """An observation as numpy, in its space's structure: a Dict or Tuple space's observation
    stays a dict or tuple of arrays (``np.asarray`` of a dict is a 0-d object array, which
    gymnasium's vector envs cannot stack)."""
    return jax.tree.map(np.asarray, jax.device_get(obs))


def host_action(action: Any, space: gym.Space) -> Any:
    """An action from the host as a strong-typed array of ``space``'s dtype (canonical for JAX:
    int64 is int32 without x64), so that a jitted env step sees one signature whether the
    caller passes a Python number, a NumPy scalar or an array."""
    dtype = getattr(space, "dtype", None)
    if dtype is None:  # a composite space: each leaf as it is, made strong
        return strong_types(jax.tree.map(jnp.asarray, action))
    return jnp.asarray(np.asarray(action, jax.dtypes.canonicalize_dtype(dtype)))


class AutoResetStep(NamedTuple):
    """One step with same-step auto-reset.

    Attributes:
      obs: The next observation: where the episode ended, the next episode's first.
      reward: float32.
      terminated: bool.
      truncated: bool.
      final_obs: The observation the step led to (the ended episode's last where it ended;
        equal to ``obs`` elsewhere).
      info: The env's info of the step.
    """

    obs: Any
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: Any
    info: dict[str, Any]


def auto_reset_step(env: Any, state: Any, action: Any, key: jax.Array) -> tuple[Any, AutoResetStep]:
    """Steps ``env`` and, where the episode ended, resets it within the same step.

    The step and the reset take independent keys split from ``key``. Traceable, one env (vmap
    it for a batch)."""
    step_key, reset_key = jax.random.split(key)
    state, obs, reward, terminated, truncated, info = env.step(state, action, step_key)
    terminated = jnp.asarray(terminated, bool)
    truncated = jnp.asarray(truncated, bool)
    reset_state, reset_obs = env.reset(reset_key)
    done = terminated | truncated
    pick = lambda new, old: jnp.where(done, new, old)  # noqa: E731
    next_state = jax.tree.map(pick, reset_state, state)
    next_obs = jax.tree.map(pick, reset_obs, obs)
    return next_state, AutoResetStep(
        next_obs, jnp.asarray(reward, jnp.float32), terminated, truncated, obs, info
    )


def next_step_reset_step(
    env: Any, state: Any, action: Any, key: jax.Array, reset_now: jax.Array
) -> tuple[Any, AutoResetStep]:
    """Next-step auto-reset (EnvPool's and gymnasium's default): where the last step ended an
    episode (``reset_now``), this step resets instead and ignores the action (reward 0, not
    done); elsewhere the env steps. ``final_obs`` is the observation returned. Traceable, one
    env; off-policy algorithms run their JAX envs this way, so the step after an episode end
    holds the ended episode's last observation, as the replay buffers expect."""
    step_key, reset_key = jax.random.split(key)
    stepped, obs, reward, terminated, truncated, info = env.step(state, action, step_key)
    reset_state, reset_obs = env.reset(reset_key)
    pick = lambda new, old: jnp.where(reset_now, new, old)  # noqa: E731
    next_state = jax.tree.map(pick, reset_state, stepped)
    next_obs = jax.tree.map(pick, reset_obs, obs)
    not_done = jnp.zeros((), bool)
    terminated = jnp.where(reset_now, not_done, jnp.asarray(terminated, bool))
    truncated = jnp.where(reset_now, not_done, jnp.asarray(truncated, bool))
    reward = jnp.where(reset_now, 0.0, jnp.asarray(reward, jnp.float32))
    info = jax.tree.map(lambda x: jnp.where(reset_now, jnp.zeros_like(x), x), info)
    return next_state, AutoResetStep(next_obs, reward, terminated, truncated, next_obs, info)


def batched_next_step(
    env: Any, states: Any, actions: Any, key: jax.Array, reset_now: jax.Array
) -> tuple[Any, AutoResetStep]:
    """``next_step_reset_step`` of N envs (leading axis [N]), each with its own key."""
    n = jax.tree.leaves(states)[0].shape[0]
    return jax.vmap(lambda s, a, k, r: next_step_reset_step(env, s, a, k, r))(
        states, actions, jax.random.split(key, n), reset_now
    )


def batched_reset(env: Any, key: jax.Array, num_envs: int) -> tuple[Any, Any]:
    """``(states, obs)`` of ``num_envs`` envs, leading axis [N], each from its own key. An env
    marked ``batches_itself`` (``jax_multi_agent.AgentSlots``: agents as rows) is asked for its
    ``num_envs`` rows."""
    if getattr(env, "batches_itself", False):
        return env.batched_reset(key, num_envs)
    return jax.vmap(env.reset)(jax.random.split(key, num_envs))


def batched_step(env: Any, states: Any, actions: Any, key: jax.Array) -> tuple[Any, AutoResetStep]:
    """``auto_reset_step`` of N envs (leading axis [N]), each with its own key (or the env's own
    ``batched_step``, as ``batched_reset``)."""
    if getattr(env, "batches_itself", False):
        return env.batched_step(states, actions, key)
    n = jax.tree.leaves(states)[0].shape[0]
    return jax.vmap(lambda s, a, k: auto_reset_step(env, s, a, k))(
        states, actions, jax.random.split(key, n)
    )


# ---------------------------------------------------------------------- resolution by name
# "library:id" prefixes and the adapter that builds each: ``make(id, env_config) -> JaxEnv``.
def _adapters() -> dict[str, Callable[[str, dict[str, Any]], Any]]:
    from rljax.env.jax_adapters import brax_adapter, classic, gymnax_adapter, jumanji_adapter

    return {
        "rljax": classic.make,
        "gymnax": gymnax_adapter.make,
        "jumanji": jumanji_adapter.make,
        "brax": brax_adapter.make,
    }


# What ``pip install`` brings each library (``rljax[gymnax]``, ...); rljax's own envs need none.
_EXTRAS = {"rljax": None, "gymnax": "gymnax", "jumanji": "jumanji", "brax": "brax"}


def jax_env_prefix(env: Any) -> str | None:
    """The adapter prefix of an env id (``"gymnax"`` of ``"gymnax:CartPole-v1"``), or None."""
    if isinstance(env, str) and ":" in env:
        prefix = env.split(":", 1)[0]
        if prefix in _EXTRAS:
            return prefix
    return None


class JaxEnvCreator:
    """``creator(env_config) -> JaxEnv`` of an env id or a user's class (picklable).

    Args:
      env: ``"library:id"`` or a ``JaxEnv`` subclass (or creator of one).
      name: The name the env was selected by.
    """

    def __init__(self, env: Any, name: str):
        self.env = env
        self.name = name

    def __call__(self, env_config: dict[str, Any]) -> Any:
        return make_jax_env(self.env, dict(env_config or {}), self.name)


def make_jax_env(env: Any, env_config: dict[str, Any], name: str | None = None) -> Any:
    """Builds the JAX env ``env`` (an id ``"library:id"`` or a class taking ``env_config``),
    in ``TimeLimit`` when it has a time limit: a class's ``env_config["max_episode_steps"]``
    (else its ``max_episode_steps`` attribute); an adapter passes the setting to its library."""
    config = dict(env_config)
    name = name or getattr(env, "__qualname__", None) or str(env)
    prefix = jax_env_prefix(env)
    limit = None
    if prefix is not None:  # the adapter reads the library's own time limit from env_config
        built = _adapters()[prefix](env.split(":", 1)[1], config)
    else:
        limit = config.pop("max_episode_steps", None)
        try:
            built = env(config)
        except TypeError as e:
            raise ConfigError(
                f"building the JAX env {name!r} failed: {e}. rljax builds a JaxEnv class with "
                "the env_config, as RLlib does: define __init__(self, config=None)"
            ) from e
    if not is_jax_env(built):
        raise ConfigError(
            f"{name!r} built {type(built).__name__}, which does not follow rljax's JaxEnv "
            "protocol (reset(key), step(state, action, key), gymnasium observation_space / "
            "action_space)"
        )
    for which in ("observation_space", "action_space"):
        if not isinstance(getattr(built, which, None), gym.Space):
            raise ConfigError(f"the JAX env {name!r} has no gymnasium {which}")
    if prefix is None:  # a user's class: its reset and step traced once against its spaces
        check_protocol(built, name)
    limit = limit if limit is not None else getattr(built, "max_episode_steps", None)
    if limit is not None and not isinstance(built, TimeLimit):
        built = TimeLimit(built, limit)
    return built


def _shape(leaf: Any) -> tuple[int, ...] | None:
    return tuple(leaf.shape) if hasattr(leaf, "shape") else None


def _check_obs(obs: Any, space: gym.Space, where: str) -> None:
    """Raises ``ConfigError`` when the traced ``obs`` does not fit ``space`` (its shape, or a
    ``Dict`` space's keys and shapes)."""
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(obs, Mapping) or set(obs) != set(space.spaces):  # FrozenDict too
            got = sorted(obs) if isinstance(obs, Mapping) else type(obs).__name__
            raise ConfigError(
                f"{where} returned an observation {got}; its Dict observation_space has keys {sorted(space.spaces)}"
            )
        for k, sub in space.spaces.items():
            _check_obs(obs[k], sub, f"{where}[{k!r}]")
        return
    if space.shape is not None and _shape(obs) != tuple(space.shape):
        raise ConfigError(
            f"{where} returned an observation of shape {_shape(obs)}; its observation_space "
            f"{space} has shape {tuple(space.shape)}"
        )


def check_protocol(env: Any, name: str) -> None:
    """Traces ``env.reset`` and one ``env.step`` (``jax.eval_shape``: nothing runs) and
    checks what they return against the protocol and the env's spaces, so that a mistake is
    named here rather than failing inside the compiled rollout.

    Raises:
      ConfigError: reset or step fails to trace, returns the wrong number of values, an
        observation that does not fit ``observation_space``, or a reward or flag that is not a
        scalar (one env: rljax vmaps it).
    """
    where = f"the JAX env {name!r}"
    key = jax.random.PRNGKey(0)
    action = _traced_action(env.action_space)
    reset = _traced(where, "reset", env.reset, (key,), 2, "(state, obs)")
    _check_obs(reset[1], env.observation_space, f"{where}: reset()")
    form = "(state, obs, reward, terminated, truncated, info)"
    step = _traced(where, "step", env.step, (reset[0], action, key), 6, form)
    _check_obs(step[1], env.observation_space, f"{where}: step()")
    for i, what in ((2, "reward"), (3, "terminated"), (4, "truncated")):
        if _shape(step[i]) != ():
            raise ConfigError(
                f"{where}: step()'s {what} has shape {_shape(step[i])}; it must be a scalar "
                "(the step of one env: rljax vmaps it)"
            )


def _traced_action(space: gym.Space) -> Any:
    """An action of ``space`` as ``jax.eval_shape`` takes it: a ``ShapeDtypeStruct`` (int32
    for integer spaces, float32 otherwise), or a dict / tuple of them for ``Dict`` / ``Tuple``
    spaces."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _traced_action(sub) for k, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_traced_action(sub) for sub in space.spaces)
    integer = space.dtype is not None and np.issubdtype(space.dtype, np.integer)
    return jax.ShapeDtypeStruct(tuple(space.shape or ()), jnp.int32 if integer else jnp.float32)


def _traced(where: str, call: str, fn: Any, args: tuple[Any, ...], count: int, form: str) -> Any:
    """``jax.eval_shape(fn, *args)``, checked to be a tuple of ``count`` values."""
    try:
        out = jax.eval_shape(fn, *args)
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(f"{where}: {call}() failed when traced: {type(e).__name__}: {e}") from e
    if not isinstance(out, tuple) or len(out) != count:
        got = f"{len(out)} values" if isinstance(out, tuple) else type(out).__name__
        raise ConfigError(f"{where}: {call}() returned {got}; the protocol's is {form}")
    return out


def resolve_jax_env(
    env: Any, env_config: dict[str, Any] | None = None
) -> tuple[str, str, GymCreator, dict[str, Any]] | None:
    """The ``EnvSpec`` fields ``(backend "jax", name, creator, env_config)`` of a JAX env, or
    None for any other env (``vector.resolve_env`` makes the spec).

    A JAX env is an id with an adapter prefix (``"gymnax:CartPole-v1"``), a ``JaxEnv``
    subclass, or a name given to ``register_env`` for a ``JaxEnv`` subclass. The spec's
    creator builds a gymnasium env around it (``JaxGymEnv``) for what steps envs on the host
    (evaluation, ``env_spaces``); ``jax_env_of(spec)`` builds the JAX env itself.
    """
    from rljax.env.registry import registered_creator

    env_config = dict(env_config or {})
    if isinstance(env, str):
        prefix = jax_env_prefix(env)
        if prefix is None:
            creator = registered_creator(env)
            if not (inspect.isclass(creator) and issubclass(creator, JaxEnv)):
                return None
            return JAX_BACKEND, env, GymCreator(JaxEnvCreator(creator, env)), env_config
        if _EXTRAS[prefix] is not None:
            _check_library(prefix, env)
        return JAX_BACKEND, env, GymCreator(JaxEnvCreator(env, env)), env_config
    if inspect.isclass(env) and issubclass(env, JaxEnv):
        name = env.__qualname__
        return JAX_BACKEND, name, GymCreator(JaxEnvCreator(env, name)), env_config
    return None


def _check_library(prefix: str, env: str) -> None:
    check_library(prefix, env, _EXTRAS[prefix])


def check_library(library: str, env: str, extra: str | None) -> None:
    """Raises ``ConfigError`` with the ``pip install`` line of ``extra`` unless ``library``
    (which runs ``env``) imports."""
    try:
        __import__(library)
    except ImportError as e:
        raise ConfigError(
            f"env {env!r} runs on {library}, which is not installed: pip install "
            f"'rljax[{extra}]' ({type(e).__name__}: {e})"
        ) from e


def is_jax_spec(spec: Any) -> bool:
    """Whether an ``EnvSpec`` is a JAX env's."""
    return spec is not None and getattr(spec, "backend", None) == JAX_BACKEND


def jax_env_of(spec: Any) -> Any:
    """The JAX env of a JAX env's ``EnvSpec``."""
    assert is_jax_spec(spec), f"{spec.name!r} is not a JAX env"
    return spec.creator.jax_creator(spec.env_config)


# ---------------------------------------------------------------------- on the host
class GymCreator:
    """``creator(env_config) -> JaxGymEnv``: a JAX env's gymnasium creator (picklable);
    ``jax_creator`` builds the JAX env."""

    def __init__(self, jax_creator: JaxEnvCreator):
        self.jax_creator = jax_creator

    def __call__(self, env_config: Any) -> JaxGymEnv:
        return JaxGymEnv(self.jax_creator(dict(env_config or {})))


class JaxGymEnv(gym.Env):
    """A JAX env as one ``gymnasium.Env``, stepped by jitted calls from Python (evaluation,
    ``env_spaces``); training steps the JAX env inside its program instead.

    Args:
      env: A ``JaxEnv``.
    """

    def __init__(self, env: Any):
        self.env = env
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        # An env that draws its state renders rgb_array frames (evaluation videos).
        self.render_mode = "rgb_array" if callable(getattr(env, "render", None)) else None
        # Strong-typed states: a reset writing Python numbers would make the step compile twice.
        self._reset = jax.jit(lambda key: strong_types(env.reset(key)))
        self._step = jax.jit(env.step)
        self._key = jax.random.PRNGKey(0)
        self._state: Any = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._key = jax.random.PRNGKey(seed)
        self._key, sub = jax.random.split(self._key)
        self._state, obs = self._reset(sub)
        return _host_obs(obs), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._state is None:
            raise RuntimeError("JaxGymEnv.step before reset")
        self._key, sub = jax.random.split(self._key)
        self._state, obs, reward, terminated, truncated, _info = self._step(
            self._state, host_action(action, self.action_space), sub
        )
        return _host_obs(obs), float(reward), bool(terminated), bool(truncated), {}

    def render(self) -> Any:
        """The env's picture of its current state (``render(state)``), an ``[H, W, 3]`` uint8
        array; None for an env that does not draw itself."""
        if self.render_mode is None or self._state is None:
            return None
        return np.asarray(self.env.render(jax.device_get(self._state)), np.uint8)


__all__ = [
    "JAX_BACKEND",
    "AutoResetStep",
    "GymCreator",
    "JaxEnv",
    "JaxEnvCreator",
    "JaxGymEnv",
    "host_action",
    "TimeLimit",
    "TimeLimitState",
    "auto_reset_step",
    "batched_reset",
    "batched_step",
    "is_jax_env",
    "is_jax_spec",
    "jax_env_of",
    "jax_env_prefix",
    "make_jax_env",
    "resolve_jax_env",
    "strong_types",
]
