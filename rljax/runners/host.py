"""Runners that step vector envs from Python.

The policy still runs jitted on whole batches; Python only moves the batch between the env and the
jitted ``act_step``. With ``num_env_runners=n`` each runner is a thread of a ``RunnerGroup``
(runners/group.py) with its own vector env. EnvPool, XLA and the pipes of ASYNC gymnasium envs
release the GIL while they wait, so runners really sample in parallel.
"""

from __future__ import annotations

import collections
import dataclasses
import traceback
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.single_agent_episode import RESET_INFO, split_infos
from rljax.env.state import EnvStateError, decode_leaves, encode
from rljax.env.vector import EnvSpec, make_host_env
from rljax.runners.acting import (
    STEP_FIELDS,
    ActorState,
    ActStep,
    PolicyFn,
    Transition,
    init_actor_state,
    recorded_steps,
)

# The group and its parts, where callers have always imported them from.
from rljax.runners.faults import MAX_FRESH_FAILURES, EnvBugError, EnvRunnerError
from rljax.utils import xla_options


def _jitted_step(act_step: ActStep, device: jax.Device) -> Callable:
    """The jitted env step of ``act_step`` on ``device``, one per act step: the runners of an
    algorithm (and the replacements of failed ones) share its compilations. The cache lives on
    ``act_step`` itself, so it goes when the algorithm does."""
    per_device = act_step.__dict__.setdefault("_rljax_jitted_steps", {})
    if device not in per_device:

        def step(params, key, actor, result, traj, t):
            # Everything per env step in one jitted call: the key split, acting, and writing the
            # transition into the fragment's buffer (donated, so updated in place).
            key, sub = jax.random.split(key)
            action, actor, transition = act_step(params, sub, actor, result)
            traj = jax.tree.map(lambda buf, x: buf.at[t].set(x), traj, transition)
            return action, actor, traj, key

        # No device= (deprecated in JAX): the params, actor state, key and fragment buffer are
        # committed to ``device``, and a jitted call runs where its committed arguments live.
        per_device[device] = jax.jit(
            step, donate_argnums=(2, 4), compiler_options=xla_options.current("act")
        )
    return per_device[device]


@jax.jit
def _row_of(traj: Transition, t: jax.Array) -> dict[str, Any]:
    """Row ``t`` of a fragment's recorded steps as ``[1, K]`` arrays (live episode hooks;
    ``reward`` the env's own where training's is clipped)."""
    steps = recorded_steps(traj, STEP_FIELDS)
    steps.pop("info")  # a host runner's infos stay on the host (``last_infos``)
    return jax.tree.map(lambda x: x[t][None], steps)


def _dtype_of(x: Any) -> np.dtype:
    # An array's own dtype: np.result_type(jax_array) is a deprecated implicit conversion.
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x)


def _initial_state(
    policy_fn: PolicyFn,
    act_step: ActStep,
    params: Any,
    result: Any,
    streams: int,
    key: Any,
    device: jax.Device,
) -> tuple[ActorState, Any]:
    """A new runner's actor state (nothing pending) on ``device`` and the shapes of its
    fragments' rows.

    Both follow from the shapes of the weights and the env's results alone, so they are traced
    once per act step and shapes (cached on ``act_step``, as ``_jitted_step``): a replacement
    after an env failure, which a flaky env may need every hundred steps, reuses them instead of
    tracing the policy twice. The cached state is copied, because ``act_step`` donates it, and
    committed to ``device``: the jitted step's outputs are committed arrays, and a first call
    with uncommitted ones would compile a program of its own (JAX keys a compilation on whether
    each argument is committed)."""
    cache = act_step.__dict__.setdefault("_rljax_initial_states", {})
    leaves, tree = jax.tree.flatten((params, result))
    shapes = (tree, streams, tuple((np.shape(x), _dtype_of(x)) for x in leaves))
    if shapes not in cache:
        obs0 = jax.tree.map(lambda o: jnp.asarray(o[0]), result.obs)
        actor = init_actor_state(policy_fn, params, obs0, streams)
        cache[shapes] = (actor, jax.eval_shape(act_step, params, key, actor, result)[2])
    actor, transition_shape = cache[shapes]
    return jax.device_put(actor, device, may_alias=False), transition_shape


@dataclasses.dataclass(frozen=True)
class RunnerSpec:
    """Everything a ``HostRunner`` is built from but its first weights.

    Attributes:
      env: The env to build (``resolve_env``'s spec); None where ``make_env`` builds it.
      num_envs: Sub-envs of its vector env (``num_envs_per_env_runner``).
      mode: ``gym_env_vectorize_mode``: "SYNC" or "ASYNC".
      seed: The env seed; the acting key is ``PRNGKey(seed + 1)``, as on the fused path.
      async_batch_size: First-ready batches of this many sub-envs (ASYNC), or None (lock-step).
      policy_fn: The policy (``acting.PolicyFn``): its outputs' shapes give the fragments'.
      act_step: The acting step (``acting.make_act_step``), jitted once per device.
      to_env_action: Policy actions -> the env's actions, on the host.
      device: Where acting runs and fragments live.
      env_id_offset: Added to its streams' ids, so ids are unique across a group's runners.
      worker_index: RLlib's ``worker_index`` seen by the env's config (0: the driver's runner).
      num_workers: RLlib's ``num_workers`` seen by the env's config.
      restart_sub_envs: Rebuild a gymnasium sub-env that raises (``RestartingEnv``).
      make_env: Builds the vector env instead (multi-agent slots); returning None falls back
        to building ``env``.
      record_infos: Keep the env's infos of each fragment on the host (``last_infos``), for
        episode callbacks.
      live_steps: Called after each act step with ``(runner, row, infos)``: the fragment's row
        just written (``[1, K]`` arrays of ``episode_arrays``' steps, global stream ids) and its
        infos, while the env is still at that row's next observation, so per-step episode hooks
        can read or render it (``rljax.callbacks.episodes``); None: rows are replayed after
        sampling.
    """

    env: EnvSpec | None
    num_envs: int
    mode: str
    seed: int
    async_batch_size: int | None
    policy_fn: PolicyFn
    act_step: ActStep
    to_env_action: Callable[[np.ndarray], np.ndarray]
    device: jax.Device
    env_id_offset: int = 0
    worker_index: int = 0
    num_workers: int = 0
    restart_sub_envs: bool = False
    make_env: Callable[[], Any] | None = None
    record_infos: bool = False
    same_step: bool = False
    live_steps: Callable[[Any, dict[str, Any], list[list[dict[str, Any]]] | None], None] | None = (
        None
    )


def _vector_env(spec: RunnerSpec) -> Any:
    """The vector env ``spec.env`` describes, with the spec's count, mode, seed and indexes."""
    assert spec.env is not None, "a runner without an env spec gets its env from make_env"
    return make_host_env(
        spec.env,
        spec.num_envs,
        spec.mode,
        spec.seed,
        spec.async_batch_size,
        worker_index=spec.worker_index,
        num_workers=spec.num_workers,
        restart_sub_envs=spec.restart_sub_envs,
        same_step=spec.same_step,
    )


class HostRunner:
    """One vector env and its actor state; ``sample`` returns a ``Transition`` of [T, K].

    When the env raises in ``step``, ``sample`` returns the fragment cut there, with ``error``
    set: the runner is spent. Its group replaces it, and the replacement fills the rest of that
    fragment (``sample(resume=...)``).
    """

    def __init__(self, spec: RunnerSpec, params: Any):
        self.spec = spec
        # A vector env built by the caller (multi-agent slots), else one from the env spec.
        env = spec.make_env() if spec.make_env is not None else None
        if not env:
            env = _vector_env(spec)
        self.env = env
        # Episode callbacks: the env's infos stay on the host, one dict per fragment row and
        # column (``last_infos``); the jitted step never sees them.
        self._record_infos = spec.record_infos and hasattr(env, "keep_info")
        if self._record_infos:
            env.keep_info = True
        self._info: Any = None
        self.last_infos: list[list[dict[str, Any]]] | None = None
        self.num_sub_env_restarts = 0
        self.busy = False
        self.error: str | None = None  # the env's traceback once its step raised (spent)
        self.exception: BaseException | None = None  # and what it raised
        self.num_env_steps = 0  # env steps (vector steps) that returned since it was built
        self.last_num_steps = 0  # env steps (vector steps) that returned in the last sample()
        self.last_num_rows = 0  # rows of its last fragment used up (the length unless cut)
        self.offset = spec.env_id_offset
        self.last_stats: Any = None
        self.device = spec.device
        self.to_env_action = spec.to_env_action
        try:
            self.result = self._take_info(self.env.reset())
            # As the fused path: env seed + 1; committed, as the actor state (_initial_state).
            self.key = jax.device_put(jax.random.PRNGKey(spec.seed + 1), spec.device)
            # One pending entry per stream: a sub-env, or a multi-agent env's agent slot.
            streams = getattr(self.env, "num_slots", spec.num_envs)
            self.actor: ActorState
            self.actor, self._transition_shape = _initial_state(
                spec.policy_fn, spec.act_step, params, self.result, streams, self.key, spec.device
            )
            self._step = _jitted_step(spec.act_step, spec.device)
        except BaseException:  # a failed first reset, or Ctrl-C: no env process left behind
            self.env.close(terminate=True)
            raise

    def rebuild_env(self, env: EnvSpec, params: Any) -> None:
        """Replaces the vector env with one built from ``env`` (a curriculum's next task, RLlib's
        ``env_runner.make_env()``): the old env is closed, the new one reset, and every sub-env
        starts a new episode (the unfinished ones are dropped, as by a restart). Called between
        iterations, while the runner does not sample."""
        if self.busy:
            raise RuntimeError("rebuild_env() while the runner samples; call it between iterations")
        if hasattr(self.env, "num_slots"):
            raise RuntimeError("a multi-agent runner's envs are built by its group")
        spec = dataclasses.replace(self.spec, env=env, make_env=None)
        new = _vector_env(spec)
        try:
            if self._record_infos:
                new.keep_info = True
            result = self._take_info(new.reset())
            streams = getattr(new, "num_slots", spec.num_envs)
            actor, shape = _initial_state(
                spec.policy_fn, spec.act_step, params, result, streams, self.key, spec.device
            )
        except BaseException:
            new.close(terminate=True)
            raise
        old, self.env, self.spec = self.env, new, spec
        self.result, self.actor, self._transition_shape = result, actor, shape
        old.close()

    def _started(self) -> bool:
        """Every stream has a pending action; false only before a same-step env's first step
        (next-step envs: always true, their first row is the reset's, as ever)."""
        if getattr(self.result, "final_obs", None) is None:
            return True
        return bool(np.all(np.asarray(self.actor.valid)))

    def _take_info(self, result: Any) -> Any:
        """``result`` without its info (kept in ``_info`` for the fragment's rows)."""
        if getattr(result, "info", None) is None:
            return result
        self._info = result.info
        return result._replace(info=None)

    def _empty_fragment(self, length: int) -> Transition:
        return jax.tree.map(
            lambda s: jnp.zeros((length, *s.shape), s.dtype, device=self.device),
            self._transition_shape,
        )

    def empty_fragment(self, length: int) -> Transition:
        """A fragment of this runner's shape with no transition in it (``valid`` False), each
        column one of its streams: the rows a dropped runner adds to every batch."""
        traj = self._empty_fragment(length)
        streams = traj.env_id.shape[1]
        ids = jnp.broadcast_to(jnp.arange(streams, dtype=traj.env_id.dtype), traj.env_id.shape)
        return traj._replace(env_id=jax.device_put(ids + self.offset, self.device))

    def sample(
        self, params: Any, length: int, resume: Transition | None = None, first_row: int = 0
    ) -> Transition:
        """A fragment of ``length`` env steps; with ``resume``, rows ``first_row..`` of that
        fragment (a predecessor's, cut where its env raised) are written instead, so a restart
        costs the batch a few rows (the cut rows and the replacement's first), not a fragment.

        If the env raises in ``step``, the fragment is returned cut there (``_cut``), with
        ``error`` set and ``last_num_rows`` the first row left for a replacement: the runner is
        spent, and sampling again raises."""
        if self.error is not None:
            raise RuntimeError(
                "this runner's env failed in an earlier fragment; replace the runner"
            )
        self.busy = True  # stepping: its state cannot be saved now
        try:
            return self._sample(params, length, resume, first_row)
        finally:
            self.busy = False

    def _sample(
        self, params: Any, length: int, resume: Transition | None, first_row: int
    ) -> Transition:
        traj = self._empty_fragment(length) if resume is None else resume
        # Sub-env restarts: the rows (t, column) of each sub-env's current episode in this
        # fragment, so a broken episode's transitions can be dropped.
        tracking = getattr(self.result, "restarted", None) is not None
        episode_rows: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
        dropped: list[tuple[int, int]] = []
        end = length
        width = int(np.shape(self.result.env_id)[0])
        infos: list[list[dict[str, Any]]] | None = None
        if self._record_infos:
            infos = [[{} for _ in range(width)] for _ in range(length)]
        # A same-step env's first step only starts the first transitions (acting on the reset
        # observations): its row is written over by the next, so the fragment holds as many env
        # steps as rows (``acting.prime`` on the fused path). If it raises, the row stays, as
        # the reset's row of a next-step env. First-ready batches bring the reset observations
        # a batch at a time: the row is written over until every stream has a pending action,
        # unless a batch already completes a transition (sub-envs not a multiple of the batch),
        # which is kept.
        started = self._started()
        primed: set[int] = set()  # before the start: the streams acted on so far
        reset_infos = None
        t = first_row
        while t < length:
            if tracking and started:
                self._track_episodes(t, episode_rows, dropped)
            if infos is not None:
                infos[t] = split_infos(self._info, width)
                if not started:
                    reset_infos = infos[t]
                elif reset_infos is not None:  # the first row carries the reset's infos
                    infos[t] = [
                        {**i, RESET_INFO: r} for i, r in zip(infos[t], reset_infos, strict=True)
                    ]
                    reset_infos = None
            action, self.actor, traj, self.key = self._step(
                params, self.key, self.actor, self.result, traj, t
            )
            if self.spec.live_steps is not None:  # per-step hooks, before the env moves on
                self._live_row(traj, t, infos)
            env_action = self.to_env_action(jax.tree.map(np.asarray, action))
            acted = self.result.env_id
            try:
                self.result = self._take_info(self.env.step(env_action, self.result.env_id))
            except Exception as e:  # noqa: BLE001 (the env broke: the rows so far are real)
                self.error, self.exception, end = traceback.format_exc(), e, t + 1
                break
            self.num_env_steps += 1
            if started:
                t += 1
            else:
                ids = np.asarray(acted).tolist()
                real = not primed.isdisjoint(ids)  # the row completed transitions: keep it
                primed.update(ids)
                t += int(real)
                started = real or self._started()
        self.last_num_steps = end - first_row - (self.error is not None)
        self.last_infos = infos
        if dropped:
            drop = np.zeros(traj.valid.shape, bool)
            rows, cols = zip(*dropped, strict=True)
            drop[list(rows), list(cols)] = True
            traj = traj._replace(valid=traj.valid & ~jnp.asarray(drop, device=self.device))
        self.last_num_rows = end
        if end < length:  # the env raised before the fragment was full
            traj, self.last_num_rows = self._cut(traj, first_row, end, length)
        # Env-side statistics of this fragment (multi-agent envs keep their finished episodes),
        # taken here, by the thread that stepped the env, so they travel with the fragment.
        drain = getattr(self.env, "drain_stats", None)
        self.last_stats = None
        if drain is not None:
            try:
                self.last_stats = drain()
            except Exception:  # a broken env's statistics are lost, not its rows
                if self.error is None:
                    raise
        # Sub-env ids are made global across runners so the learner can tell trajectories
        # apart (the rows of a resumed fragment before ``first_row`` have theirs already; on
        # the host, as a slice at a different row each time would compile a new op for each).
        if first_row == 0:
            return traj._replace(env_id=traj.env_id + self.offset)
        ids = np.array(traj.env_id)
        ids[first_row:] += self.offset
        return traj._replace(env_id=jax.device_put(ids, self.device))

    def _live_row(self, traj: Transition, t: int, infos: list[list[dict[str, Any]]] | None) -> None:
        assert self.spec.live_steps is not None
        row = jax.device_get(_row_of(traj, jnp.asarray(t, jnp.int32)))
        row["env_id"] = row["env_id"] + self.offset
        row["info"] = {}
        self.spec.live_steps(self, row, None if infos is None else [infos[t]])

    def _cut(
        self, traj: Transition, first_row: int, end: int, length: int
    ) -> tuple[Transition, int]:
        """Closes the streams of a fragment whose env raised after this runner wrote rows
        ``first_row .. end - 1``; returns it and the first row left for a replacement.

        The rows written are real transitions. The actions chosen last never got a result, so
        each stream's episode is cut where its last transition ended, as a time limit cuts it:
        that row is marked ``truncated`` (unless it ended the episode), and a cut row follows
        (``valid`` False) holding the observation the stream acted on last, that transition's
        next observation, just as the auto-reset row after an episode end holds the final
        one. So PPO bootstraps the cut episode with that observation's value and does not chain
        it to the replacement's episode in the same column, the replay buffers take it as the
        bootstrap observation, and the episode is never reported (it did not end).

        Every stream needs a cut row: one row with lock-step batches, more with first-ready
        ones. Without room for them, the rows left stay empty (``valid`` False: each stream's
        last real row is then the last of its fragment for PPO, and the replay buffers never
        sample a window that reaches an invalid row after an unfinished step). Rows left empty
        (until a replacement writes them, if ever) get the ids of row ``end - 1``, so that each
        sub-env keeps exactly T rows (lock-step postprocessing relies on it). Done on the host,
        except the observations (they may be large)."""
        ids, valid, done, truncated = (
            np.array(x)
            for x in jax.device_get(
                (traj.env_id, traj.valid, traj.terminated | traj.truncated, traj.truncated)
            )
        )
        streams, width = self.actor.valid.shape[0], ids.shape[1]
        cut_rows = -(-streams // width)
        if end + cut_rows > length:
            ids[end:] = ids[end - 1]
            return traj._replace(env_id=jax.device_put(ids, self.device)), length
        # Each stream's last transition written here (a multi-agent slot's may be followed by
        # rows where its agent did not act): the end of its episode unless that ended already.
        last: dict[int, tuple[int, int]] = {}
        for r, c in zip(*np.nonzero(valid[first_row:end]), strict=True):
            last[int(ids[first_row + r, c])] = (first_row + r, c)
        for r, c in last.values():
            truncated[r, c] |= not done[r, c]
        cut = np.arange(cut_rows * width) % streams  # every stream once (a few twice)
        ids[end + cut_rows :] = ids[end - 1]
        ids[end : end + cut_rows] = cut.reshape(cut_rows, width)
        # Fixed-shape index arrays: one compiled scatter per runner, whatever ``end`` is.
        rows = jnp.asarray(np.arange(end, end + cut_rows).repeat(width))
        cols = jnp.asarray(np.tile(np.arange(width), cut_rows))
        take = jnp.asarray(cut)
        obs = jax.tree.map(
            lambda buf, pending: buf.at[rows, cols].set(pending[take]), traj.obs, self.actor.obs
        )
        put = lambda x: jax.device_put(x, self.device)  # noqa: E731
        traj = traj._replace(obs=obs, env_id=put(ids), truncated=put(truncated))
        return traj, end + cut_rows

    def _track_episodes(
        self, t: int, episode_rows: dict[int, list[tuple[int, int]]], dropped: list
    ) -> None:
        """Row (t, j) completes the pending transition of sub-env ``env_id[j]``: it joins that
        sub-env's current episode, which ends here if the result is done; a sub-env restarted in
        its step has a broken episode, and its rows so far in this fragment are dropped (one
        restarted by its same-step reset, done, ended its episode first)."""
        result = self.result
        done = np.asarray(result.terminated) | np.asarray(result.truncated)
        restarted = np.asarray(result.restarted)
        for j, k in enumerate(np.asarray(result.env_id).tolist()):
            self.num_sub_env_restarts += int(restarted[j])
            if restarted[j] and not done[j]:
                dropped.extend(episode_rows.pop(k, ()))
            elif done[j]:
                episode_rows.pop(k, None)
            else:
                episode_rows[k].append((t, j))

    def get_state(self) -> dict[str, Any]:
        """Everything that decides this runner's next fragment, as plain data: its envs' state,
        the pending step result, the actor state and the acting key. Call it only while the
        runner is not stepping."""
        get_env = getattr(self.env, "get_state", None)
        if get_env is None:
            raise EnvStateError(
                f"{type(self.env).__name__} envs cannot save their state (EnvPool has no state "
                "API; multi-agent and first-ready envs are not built for it)"
            )
        arrays = jax.device_get((self.result, self.actor, self.key))
        leaves = [encode(np.asarray(x), "runner state") for x in jax.tree.leaves(arrays)]
        return {
            "env": get_env(),
            "arrays": leaves,
            "num_sub_env_restarts": self.num_sub_env_restarts,
        }

    def check_state(self, state: dict[str, Any]) -> list[Any]:
        """Raises ``EnvStateError`` unless ``state`` fits this runner; returns its arrays."""
        check_env = getattr(self.env, "check_state", None)
        if check_env is None:
            raise EnvStateError(f"{type(self.env).__name__} envs cannot restore a saved state")
        check_env(state["env"])
        leaves = jax.tree.leaves((self.result, self.actor, self.key))
        saved = decode_leaves(state["arrays"], leaves)
        if saved is None:
            raise EnvStateError(
                "the saved runner state does not fit this runner (other env, sizes or policy)"
            )
        return saved

    def set_state(self, state: dict[str, Any], checked: list[Any] | None = None) -> None:
        """Puts ``get_state``'s output back into a runner built with the same config (checked
        first, so a state that does not fit changes nothing)."""
        saved = checked if checked is not None else self.check_state(state)
        self.env.set_state(state["env"], checked=True)
        result, actor, key = jax.tree.unflatten(
            jax.tree.structure((self.result, self.actor, self.key)), saved
        )
        self.result = jax.tree.map(np.asarray, result)
        self.actor = jax.device_put(actor, self.device)
        self.key = jax.device_put(key, self.device)
        self.num_sub_env_restarts = int(state.get("num_sub_env_restarts", 0))

    def close(self, force: bool = False) -> None:
        """Closes the env; ``force``: its step may hang, so terminate worker processes instead
        of waiting for them."""
        self.env.close(terminate=force)


__all__ = [
    "MAX_FRESH_FAILURES",
    "EnvBugError",
    "EnvRunnerError",
    "HostRunner",
    "RunnerSpec",
]
