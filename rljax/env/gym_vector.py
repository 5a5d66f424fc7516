"""gymnasium's vector envs behind rljax's vector-env interface: ``SyncVectorEnv`` /
``AsyncVectorEnv`` of sub-envs built from a creator (API-checked, optionally restarting),
whose mid-episode state a checkpoint saves and restores."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np

from rljax.env.api_check import ApiCheckedEnv
from rljax.env.env_context import EnvContext
from rljax.env.failures import runner_name
from rljax.env.resolve import ASYNC, EnvSpec
from rljax.env.workers import main_hidden, sigint_blocked
from rljax.types import StepResult
from rljax.utils.errors import ConfigError


def not_a_gym_env(env: Any) -> str:
    """What a creator returned instead of a gymnasium env, and for a JAX env (a ``JaxEnv``,
    which a creator function cannot announce) how to register it."""
    from rljax.env.jax_env import is_jax_env
    from rljax.env.jax_multi_agent import JaxMultiAgentEnv

    what = f"{type(env).__name__}, not a gymnasium.Env"
    if is_jax_env(env) or isinstance(env, JaxMultiAgentEnv):
        return (
            f"{what} but a JAX env: register its class itself (register_env(name, "
            f"{type(env).__name__}) or .environment({type(env).__name__}); rljax builds it with "
            "the env_config), so that it runs inside the compiled iteration"
        )
    return what


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
            raise TypeError(f"the env creator returned {not_a_gym_env(env)}")
        return env

    def __call__(self) -> gym.Env:
        env: gym.Env
        if self.restart:
            from rljax.env.fault_tolerance import RestartingEnv

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

    @property
    def unwrapped(self) -> gym.vector.VectorEnv:
        """gymnasium's vector env (RLlib's ``env.unwrapped``: a callback renders
        ``env.unwrapped.envs[i]`` on SYNC runners)."""
        return self.env

    @property
    def envs(self) -> list[gym.Env]:
        """The sub-envs (SYNC: in this process; ASYNC's live in their worker processes)."""
        envs = getattr(self.env, "envs", None)
        if envs is None:
            raise AttributeError(
                "an ASYNC vector env's sub-envs run in worker processes and are not reachable "
                "here; use gym_env_vectorize_mode='SYNC' to read or render them"
            )
        return list(envs)

    def reset(self) -> StepResult:
        obs: Any
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
        obs: Any
        rew: Any
        term: Any
        trunc: Any
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


def gymnasium_spaces(spec: EnvSpec) -> tuple[gym.Space, gym.Space]:
    """The single-env observation and action spaces of a gymnasium env: one env is built and
    closed; any failure is a ``ConfigError`` naming the env."""
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
        raise ConfigError(f"the env creator for {spec.name!r} returned {not_a_gym_env(env)}")
    spaces = env.observation_space, env.action_space
    env.close()
    return spaces
