"""Runners that step vector envs from Python, and the group of runner threads that feeds the learner.

The policy still runs jitted on whole batches; Python only moves the batch between the env and the
jitted ``act_step``. With ``num_env_runners=n`` each runner is a thread with its own vector env;
finished fragments reach the learner through bounded queues (one slot per runner) and weights go
back after every update. EnvPool, XLA and the pipes of ASYNC gymnasium envs release the GIL while
they wait, so runners really sample in parallel.

Fragment k of a runner is sampled with weights of version >= k - max_lag. ``max_lag=0`` is
synchronous sampling (every update sees samples of the current policy); ``max_lag=1`` lets runners
sample the next fragment while the learner updates, with samples at most one version old.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.state import EnvStateError, EnvStateMalformed, decode, encode
from rljax.env.vector import EnvSpec, make_host_env
from rljax.runners.acting import ActorState, Transition, init_actor_state

logger = logging.getLogger("rljax")

# Restarts of a runner slot in a row, none delivering one env step, before it is given up on.
# A flaky env's replacement can fail on its very first step by chance: with n sub-envs each
# failing on a fraction p of steps, it does with probability 1 - (1 - p)^n (15% for p = 1% and
# n = 16). A limit of three ended such runs within a few hundred restarts; ten in a row has odds
# of 6e-9. An env that fails every time costs ten quick restarts.
MAX_FRESH_FAILURES = 10


def _jitted_step(act_step: Callable, device: jax.Device) -> Callable:
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
        per_device[device] = jax.jit(step, donate_argnums=(2, 4))
    return per_device[device]


def _dtype_of(x: Any) -> np.dtype:
    # An array's own dtype: np.result_type(jax_array) is a deprecated implicit conversion.
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x)


def _initial_state(
    policy_fn: Callable, act_step: Callable, params: Any, result: Any, streams: int, key: Any
) -> tuple[ActorState, Any]:
    """A new runner's actor state (nothing pending) and the shapes of its fragments' rows.

    Both follow from the shapes of the weights and the env's results alone, so they are traced
    once per act step and shapes (cached on ``act_step``, as ``_jitted_step``): a replacement
    after an env failure, which a flaky env may need every hundred steps, reuses them instead of
    tracing the policy twice. The cached state is copied, because ``act_step`` donates it."""
    cache = act_step.__dict__.setdefault("_rljax_initial_states", {})
    leaves, tree = jax.tree.flatten((params, result))
    shapes = (tree, streams, tuple((np.shape(x), _dtype_of(x)) for x in leaves))
    if shapes not in cache:
        obs0 = jax.tree.map(lambda o: jnp.asarray(o[0]), result.obs)
        actor = init_actor_state(policy_fn, params, obs0, streams)
        cache[shapes] = (actor, jax.eval_shape(act_step, params, key, actor, result)[2])
    actor, transition_shape = cache[shapes]
    return jax.tree.map(jnp.copy, actor), transition_shape


class HostRunner:
    """One vector env and its actor state; ``sample`` returns a ``Transition`` of [T, K].

    When the env raises in ``step``, ``sample`` returns the fragment cut there, with ``error``
    set: the runner is spent. Its group replaces it, and the replacement fills the rest of that
    fragment (``sample(resume=...)``).
    """

    def __init__(
        self,
        spec: EnvSpec,
        num_envs: int,
        mode: str,
        seed: int,
        async_batch_size: int | None,
        policy_fn: Callable,
        act_step: Callable,
        to_env_action: Callable[[np.ndarray], np.ndarray],
        params: Any,
        device: jax.Device,
        env_id_offset: int = 0,
        worker_index: int = 0,
        num_workers: int = 0,
        env: Any = None,
        restart_sub_envs: bool = False,
    ):
        # ``env``: a vector env built by the caller (multi-agent slots); else one from ``spec``.
        self.env = env or make_host_env(
            spec,
            num_envs,
            mode,
            seed,
            async_batch_size,
            worker_index=worker_index,
            num_workers=num_workers,
            restart_sub_envs=restart_sub_envs,
        )
        self.num_sub_env_restarts = 0
        self.busy = False
        self.error: str | None = None  # the env's traceback once its step raised (spent)
        self.last_num_steps = 0  # env steps (vector steps) that returned in the last sample()
        self.last_num_rows = 0  # rows of its last fragment used up (the length unless cut)
        self.offset = env_id_offset
        self.last_stats: Any = None
        self.device = device
        self.to_env_action = to_env_action
        try:
            self.result = self.env.reset()
            self.key = jax.random.PRNGKey(seed + 1)  # as the fused path: env seed + 1
            # One pending entry per stream: a sub-env, or a multi-agent env's agent slot.
            streams = getattr(self.env, "num_slots", num_envs)
            self.actor: ActorState
            self.actor, self._transition_shape = _initial_state(
                policy_fn, act_step, params, self.result, streams, self.key
            )
            self._step = _jitted_step(act_step, device)
        except BaseException:  # a failed first reset, or Ctrl-C: no env process left behind
            self.env.close(terminate=True)
            raise

    def _empty_fragment(self, length: int) -> Transition:
        return jax.tree.map(
            lambda s: jnp.zeros((length, *s.shape), s.dtype, device=self.device),
            self._transition_shape,
        )

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
        for t in range(first_row, length):
            if tracking:
                self._track_episodes(t, episode_rows, dropped)
            action, self.actor, traj, self.key = self._step(
                params, self.key, self.actor, self.result, traj, t
            )
            env_action = self.to_env_action(np.asarray(action))
            try:
                self.result = self.env.step(env_action, self.result.env_id)
            except Exception:  # noqa: BLE001 (the env broke: the rows so far are real)
                self.error, end = traceback.format_exc(), t + 1
                break
        self.last_num_steps = end - first_row - (self.error is not None)
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
        sub-env's current episode, which ends here if the result is done; a restarted sub-env's
        episode is broken, and its rows so far in this fragment are dropped."""
        result = self.result
        done = np.asarray(result.terminated) | np.asarray(result.truncated)
        restarted = np.asarray(result.restarted)
        for j, k in enumerate(np.asarray(result.env_id).tolist()):
            if restarted[j]:
                dropped.extend(episode_rows.pop(k, ()))
                self.num_sub_env_restarts += 1
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
        saved = [decode(x) for x in state["arrays"]]
        if len(saved) != len(leaves) or any(
            np.shape(a) != np.shape(b) or np.asarray(a).dtype != np.asarray(b).dtype
            for a, b in zip(saved, leaves, strict=True)
        ):
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


class EnvRunnerError(RuntimeError):
    """An env runner failed; the message names the runner and carries the env's traceback."""


@dataclasses.dataclass
class Fragment:
    """One runner's fragment and how it was made."""

    traj: Transition
    version: int
    sample_s: float
    wait_s: float  # time the runner waited for fresh weights or a free queue slot
    stats: Any = None  # the env's statistics of this fragment (HostRunner.last_stats)
    generation: int = 0  # of the runner slot's thread that made it
    index: int = 0  # the runner's fragment number k (sampled with weights >= k - max_lag)
    # The env steps that returned in the last runner's part of it (a fragment resumed after a
    # restart: the replacement's part), and the rows used (fewer when its env raised: the rows
    # written and the cut rows after them, HostRunner._cut).
    num_steps: int = 0
    num_rows: int = 0
    error: str | None = None  # that runner's env raised: rows from num_rows on are empty


def _joined(head: Fragment, tail: Fragment) -> Fragment:
    """A fragment begun by a runner whose env raised (``head``) and finished by its replacement
    (``tail``, which wrote into the same buffer)."""
    stats = tail.stats
    if head.stats is not None:
        # Env statistics are tuples of additive parts (MultiAgentVectorEnv.drain_stats:
        # finished episodes, env steps).
        stats = (
            head.stats
            if stats is None
            else tuple(a + b for a, b in zip(head.stats, stats, strict=True))
        )
    return dataclasses.replace(
        tail,
        version=min(head.version, tail.version),
        sample_s=head.sample_s + tail.sample_s,
        wait_s=head.wait_s + tail.wait_s,
        stats=stats,
    )


@dataclasses.dataclass
class GroupSample:
    """Fragments of every runner for one update, joined along the sub-env axis."""

    traj: Transition
    versions: list[int]
    sample_s: list[float]
    runner_wait_s: list[float]
    learner_wait_s: float
    stats: list[Any] = dataclasses.field(default_factory=list)  # one per runner


class RunnerGroup:
    """``num_env_runners`` runner threads feeding the learner through bounded queues.

    With ``make_runner`` and ``max_restarts > 0``, a failed runner is replaced by a new one with
    fresh envs, in its place and thread, and sampling goes on. When its env raised in ``step``,
    the rows it wrote before are kept (real transitions; its unfinished episodes are cut there as
    by a time limit and never reported: ``HostRunner._cut``), and the replacement writes the rest
    of the same fragment: the batch loses about two rows per sub-env per failure (the cut row and
    the replacement's first), not the fragment. When a runner failed otherwise (an exception
    outside its env's ``step``) or returned nothing within ``sample(timeout_s)`` (a hung env),
    its fragment is lost and the replacement starts a new one. A hung thread cannot be stopped;
    it is abandoned (a daemon), and whatever it might still return is ignored (each thread has a
    generation number). A replacement must be built (its envs made and reset: the health probe)
    within ``probe_timeout_s``, or the attempt counts as failed and is abandoned.

    A slot whose runners keep failing without delivering one env step is given up on after
    ``MAX_FRESH_FAILURES`` restarts in a row: an env that fails every time is not restarted until
    ``max_restarts`` is used up. A runner that delivered steps since its last restart starts the
    count again, so an env that fails now and then (after some steps) is restarted each time.

    ``ignore_failures``: a runner that failed and cannot be restarted is dropped instead of
    stopping the run. Its columns of every later batch are empty rows (``valid`` False), so the
    batch keeps its shape (nothing recompiles) and the learner trains on the healthy runners'
    samples. When every runner is gone, ``sample`` raises.
    """

    def __init__(
        self,
        runners: list[HostRunner],
        length: int,
        max_lag: int,
        poll_s: float = 0.05,
        make_runner: Callable[[int], HostRunner] | None = None,
        max_restarts: int = 0,
        ignore_failures: bool = False,
        probe_timeout_s: float = 30.0,
    ):
        if max_lag not in (0, 1):
            raise ValueError(f"max_lag must be 0 or 1; got {max_lag}")
        self.runners = runners
        self.length = length
        self.max_lag = max_lag
        self._poll_s = poll_s
        self._make_runner = make_runner
        self.max_restarts = max_restarts if make_runner is not None else 0
        self.num_restarts = 0
        self._queues: list[queue.Queue] = [queue.Queue(maxsize=1) for _ in runners]
        self._cond = threading.Condition()
        self._params: Any = None
        self._version = -1
        self._pending: Any = None  # weights published but not yet handed over (max_lag=0)
        self._pending_advance = False
        self._sampled_version = -1  # the weights version of the last sample()
        self._stop = threading.Event()
        self._errors: dict[int, str] = {}
        self._threads: list[threading.Thread] = []
        self._generation = [0] * len(runners)
        # Restarts of a runner slot since it last delivered an env step: an env that fails every
        # time is given up on after MAX_FRESH_FAILURES, not restarted for ever.
        self._fresh_restarts = [0] * len(runners)
        self._retired: list[HostRunner] = []  # replaced runners (closed when replaced)
        self.ignore_failures = ignore_failures
        self.probe_timeout_s = probe_timeout_s
        self.dropped: dict[int, str] = {}  # runner index -> why it was dropped

    @property
    def params(self) -> Any:
        """The newest weights published (None before the first)."""
        return self._pending if self._pending is not None else self._params

    @property
    def num_healthy(self) -> int:
        return len(self.runners) - len(self.dropped)

    @property
    def version(self) -> int:
        return self._version

    @property
    def num_sub_env_restarts(self) -> int:
        # Each runner once: a dropped runner is both retired and still in ``runners``.
        unique = {id(r): r for r in (*self.runners, *self._retired)}
        return sum(r.num_sub_env_restarts for r in unique.values())

    def publish(self, params: Any, advance: bool = True) -> int:
        """Hands new weights to the runners; returns their version (0 for the first).

        ``advance=False`` swaps the weights without counting a new version (weights set or
        restored between updates): the runners' on-policy schedule, one version per consumed
        fragment, stays as it was, and the next fragment a runner starts uses them.

        With ``max_lag=0`` the runners only get the weights at the next ``sample()``: a runner
        cannot start its next fragment before them anyway, and this way every runner rests at a
        fragment boundary between ``sample()`` calls, where its state can be saved or restored
        (``get_state`` / ``set_state``).
        """
        with self._cond:
            self._pending = params
            self._pending_advance = self._pending_advance or advance
            version = self._next_version()
        if self.max_lag > 0:
            self._deliver()
        return version

    def _next_version(self) -> int:
        """The version the pending weights get: one more if any publish advanced (or first)."""
        return self._version + (1 if self._pending_advance or self._version < 0 else 0)

    def _deliver(self) -> None:
        with self._cond:
            if self._pending is not None:
                self._params = self._pending
                self._version = self._next_version()
                self._pending, self._pending_advance = None, False
                self._cond.notify_all()
        if not self._threads:
            for i in range(len(self.runners)):
                self._threads.append(self._start(i))

    def get_state(self, include_envs: bool = True) -> dict[str, Any]:
        """Each runner's state at the fragment boundary where it rests (None for a dropped one;
        ``runners`` None without ``include_envs``), the dropped runners and the restart count.

        Only with ``max_lag=0``, between ``sample()`` calls: then no runner is stepping. Raises
        ``EnvStateError`` when a runner is stepping (a ``sample()`` was interrupted) or an env's
        state cannot be saved as plain data.
        """
        meta = {
            "runners": None,
            "dropped": {str(i): why for i, why in self.dropped.items()},
            "num_restarts": self.num_restarts,
        }
        if not include_envs:
            return meta
        self._check_resting("saved")
        for i, runner in enumerate(self.runners):
            if i not in self.dropped and runner.busy:
                raise EnvStateError(
                    f"env runner {i + 1} is in the middle of a fragment (an interrupted sample()); "
                    "its state can be saved only between iterations"
                )
        meta["runners"] = [
            None if i in self.dropped else r.get_state() for i, r in enumerate(self.runners)
        ]
        return meta

    def check_state(self, state: dict[str, Any]) -> list[Any] | None:
        """Raises ``EnvStateError`` unless ``get_state`` output ``state`` fits these runners
        (changing nothing); returns each runner's checked arrays (None: no env state saved)."""
        dropped = state.get("dropped", {})
        bad = [i for i in dropped if not (i.isdigit() and int(i) < len(self.runners))]
        if bad:
            raise EnvStateError(
                f"the saved state drops env runner(s) {bad[:5]}; this run has {len(self.runners)}"
            )
        if dropped and not self.ignore_failures:
            raise EnvStateError(
                "the saved run had dropped env runners (ignore_env_runner_failures=True); this "
                "run does not drop runners"
            )
        if len(set(dropped) | {str(i) for i in self.dropped}) >= len(self.runners):
            raise EnvStateError("the saved state drops every env runner")
        runners = state["runners"]
        if runners is None:
            return None
        self._check_resting("restored")
        if len(runners) != len(self.runners):
            raise EnvStateError(
                f"the saved state has {len(runners)} env runner(s); this run has "
                f"{len(self.runners)}"
            )
        if any(r.busy for r in self.runners):
            raise EnvStateError("env runners are stepping; restore between iterations")
        try:
            return [
                None if s is None else self.runners[i].check_state(s) for i, s in enumerate(runners)
            ]
        except EnvStateError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
            raise EnvStateMalformed(
                f"the saved runner state is malformed ({type(e).__name__})"
            ) from None

    def set_state(self, state: dict[str, Any], checked: list[Any] | None = None) -> None:
        """Puts ``get_state``'s output back (same number of runners and envs). Everything is
        checked before anything changes (``checked``: ``check_state``'s result, when the caller
        has checked already); runners dropped in the saved run are dropped again."""
        runners = state["runners"]
        if checked is None:
            checked = self.check_state(state)
        if runners is None or checked is None:  # the envs' state was not saved: the rest applies
            self._set_meta(state)
            return
        for i, (s, arrays) in enumerate(zip(runners, checked, strict=True)):
            if s is not None:
                self.runners[i].set_state(s, arrays)
        self._set_meta(state)

    def _set_meta(self, state: dict[str, Any]) -> None:
        for i, why in state.get("dropped", {}).items():
            if int(i) not in self.dropped:
                self._drop(int(i), f"dropped before the checkpoint: {why[:300]}")
        self.num_restarts = int(state.get("num_restarts", 0))

    def _check_resting(self, what: str) -> None:
        if self.max_lag != 0:
            raise EnvStateError(
                f"env runners' state cannot be {what} with sample_async=True: a runner is always "
                "in the middle of its next fragment"
            )

    def _start(
        self, i: int, start: int | None = None, resume: Fragment | None = None
    ) -> threading.Thread:
        # A replacement starts at the learner's current version, so that it keeps the lag rule
        # (fragment k waits for version k - max_lag) instead of running ahead; one that takes
        # over from a runner whose env raised goes on with that runner's fragment numbers
        # (``start``), first finishing its cut fragment (``resume``).
        k = max(0, self._version) if start is None else start
        t = threading.Thread(
            target=self._loop,
            args=(i, self._generation[i], k, resume),
            name=f"rljax-env-runner-{i + 1}",
            daemon=True,
        )
        t.start()
        return t

    def _loop(
        self, i: int, generation: int, start: int = 0, resume: Fragment | None = None
    ) -> None:
        runner = self.runners[i]
        k = start

        def current() -> bool:
            return self._generation[i] == generation and not self._stop.is_set()

        try:
            while current():
                t0 = time.perf_counter()
                with self._cond:
                    while self._version < k - self.max_lag and current():
                        self._cond.wait(self._poll_s)
                    params, version = self._params, self._version
                if not current():
                    return
                t1 = time.perf_counter()
                if resume is None:
                    traj = runner.sample(params, self.length)
                else:  # the rest of the fragment whose runner's env raised
                    traj = runner.sample(params, self.length, resume.traj, resume.num_rows)
                jax.block_until_ready(traj)
                t2 = time.perf_counter()
                fragment = Fragment(
                    traj,
                    version,
                    t2 - t1,
                    t1 - t0,
                    runner.last_stats,
                    generation,
                    index=k,
                    num_steps=runner.last_num_steps,
                    num_rows=runner.last_num_rows,
                    error=runner.error,
                )
                if resume is not None:
                    fragment, resume = _joined(resume, fragment), None
                while current():
                    try:
                        self._queues[i].put(fragment, timeout=self._poll_s)
                        break
                    except queue.Full:
                        continue
                fragment.wait_s += time.perf_counter() - t2
                if runner.error is not None:
                    return  # spent: the learner replaces it when it takes this fragment
                k += 1
        except BaseException:  # reported to the learner, which raises it with the runner's id
            if self._generation[i] == generation:
                self._errors[i] = traceback.format_exc()

    def _failure(self, i: int) -> str | None:
        if i in self._errors:
            return f"failed:\n{self._errors[i]}"
        if self._threads and not self._threads[i].is_alive() and not self._stop.is_set():
            return "stopped without a result"
        return None

    def _replace(
        self,
        i: int,
        why: str,
        close_on_error: bool = True,
        start: int | None = None,
        resume: Fragment | None = None,
    ) -> None:
        """Replaces runner ``i`` when restarts allowed (``start``, ``resume``: see ``_start``),
        or drops it (``ignore_failures``), or raises ``EnvRunnerError`` (closing the group first,
        unless ``close_on_error`` is False: a hung thread would delay the error)."""
        while (
            self.num_restarts < self.max_restarts and self._fresh_restarts[i] < MAX_FRESH_FAILURES
        ):
            self.num_restarts += 1
            self._fresh_restarts[i] += 1
            logger.warning("env runner %d %s; restarting it", i + 1, why)
            self._retire(i)
            self._errors.pop(i, None)
            runner, failure = self._probe(i)
            if runner is None:
                why = failure
                continue
            self.runners[i] = runner
            self._threads[i] = self._start(i, start, resume)
            return
        name = f"env runner {i + 1} (worker_index={i + 1})"
        if self._fresh_restarts[i] >= MAX_FRESH_FAILURES:
            n = self._fresh_restarts[i]
            message = (
                f"{name} failed again after {n} restarts in a row, and none of the {n} "
                "replacements delivered a single env step before it failed: the env fails every "
                f"time, so restarting cannot help ({self.num_restarts} of "
                f"max_num_env_runner_restarts={self.max_restarts} restarts used). "
                f"Last failure: {why}"
            )
        else:
            message = f"{name} {why.rstrip()}"
            if self.max_restarts:
                message += (
                    f"\nNo restart left: {self.num_restarts} of max_num_env_runner_restarts="
                    f"{self.max_restarts} used."
                )
        if self.ignore_failures and self.num_healthy > 1:
            self._drop(i, message)
            return
        if close_on_error:
            self.close()
        if self.ignore_failures:
            message = f"every env runner has failed (ignore_env_runner_failures=True); {message}"
        raise EnvRunnerError(message)

    def _probe(self, i: int) -> tuple[HostRunner | None, str]:
        """Builds a replacement for runner ``i``: ``(runner, "")``, or ``(None, why)`` when
        building raised or did not finish within ``probe_timeout_s``."""
        runner, error = build_within(
            lambda: self._make_runner(i),  # type: ignore[misc]
            self.probe_timeout_s,
            f"rljax-env-runner-{i + 1}-probe",
        )
        if runner is None:
            return None, f"could not be rebuilt: {error}"
        return runner, ""

    def _drop(self, i: int, why: str) -> None:
        """Gives up on runner ``i`` for the rest of the run (``ignore_failures``)."""
        logger.warning(
            "%s; dropping it (ignore_env_runner_failures=True): %d of %d env runners remain",
            why,
            self.num_healthy - 1,
            len(self.runners),
        )
        self.dropped[i] = why
        self._retire(i)  # it stays in ``runners``: its shapes give the empty rows

    def _retire(self, i: int) -> None:
        """Stops using slot ``i``'s current runner (once): whatever its thread still delivers
        is ignored, a fragment it left is discarded, and it is closed in the background with its
        worker processes terminated (a hung env may never return)."""
        old = self.runners[i]
        if any(r is old for r in self._retired):
            return
        self._retired.append(old)
        self._generation[i] += 1
        with contextlib.suppress(queue.Empty):
            self._queues[i].get_nowait()
        threading.Thread(target=_close_quietly, args=(old, True), daemon=True).start()

    def _empty_fragment(self, i: int) -> Fragment:
        """The rows of a dropped runner: its fragment's shape, every row invalid."""
        runner = self.runners[i]
        traj = runner._empty_fragment(self.length)
        streams = traj.env_id.shape[1]
        ids = jnp.broadcast_to(jnp.arange(streams, dtype=traj.env_id.dtype), traj.env_id.shape)
        traj = traj._replace(env_id=jax.device_put(ids + runner.offset, runner.device))
        return Fragment(traj, max(0, self._version), 0.0, 0.0, None)

    def sample(self, timeout_s: float | None = None) -> GroupSample:
        """One fragment from every runner. A failed or timed-out runner is restarted when
        allowed; otherwise this raises ``EnvRunnerError``."""
        self._deliver()
        if not self._threads:
            raise RuntimeError("publish() the first weights before sampling")
        if self.max_lag == 0 and self._version == self._sampled_version:
            # Each runner's next fragment waits for newer weights: waiting here would only end
            # in the sample timeout, with healthy runners taken for hung.
            raise RuntimeError(
                "synchronous sampling (max_lag=0): publish() new weights before the next sample()"
            )
        t0 = time.perf_counter()
        fragments: list[Fragment] = []
        for i, q in enumerate(self._queues):
            started = time.perf_counter()
            taken = None
            while i not in self.dropped:
                fragment = _get_nowait(q)  # a fragment delivered before a failure
                if fragment is None and (why := self._failure(i)) is not None:
                    # A thread may have put its fragment just before it ended: look again, or
                    # the replacement would discard it.
                    fragment = _get_nowait(q)
                    if fragment is None:
                        self._replace(i, why)
                        started = time.perf_counter()
                        continue
                if fragment is None:
                    try:
                        fragment = q.get(timeout=self._poll_s)
                    except queue.Empty:
                        if timeout_s is not None and time.perf_counter() - started > timeout_s:
                            self._replace(
                                i,
                                f"returned no sample within {timeout_s} s (sample_timeout_s)",
                                close_on_error=False,
                            )
                            started = time.perf_counter()
                        continue
                if fragment.generation != self._generation[i]:
                    continue  # the late fragment of a runner replaced meanwhile
                if fragment.num_steps > 0:
                    self._fresh_restarts[i] = 0  # progress: earlier failures are not "in a row"
                if fragment.error is None:
                    taken = fragment
                    break
                # Its env raised: the rows so far are kept. The replacement finishes this
                # fragment (or, if it was complete, starts the next one).
                complete = fragment.num_rows == self.length
                self._replace(
                    i,
                    f"failed after {fragment.num_steps} env step(s) of its fragment:\n"
                    f"{fragment.error}",
                    start=fragment.index + 1 if complete else fragment.index,
                    resume=None if complete else fragment,
                )
                if complete or i in self.dropped:  # a dropped runner's real rows are kept too
                    taken = fragment
                    break
                started = time.perf_counter()
            # A dropped runner's rows are empty (valid False): the batch keeps its shape.
            fragments.append(taken if taken is not None else self._empty_fragment(i))
        self._sampled_version = self._version
        learner_wait = time.perf_counter() - t0
        if len(fragments) == 1:
            traj = fragments[0].traj
        else:
            traj = jax.tree.map(
                lambda *xs: jnp.concatenate(xs, axis=1), *[f.traj for f in fragments]
            )
        return GroupSample(
            traj=traj,
            versions=[f.version for f in fragments],
            sample_s=[f.sample_s for f in fragments],
            runner_wait_s=[f.wait_s for f in fragments],
            learner_wait_s=learner_wait,
            stats=[f.stats for f in fragments],
        )

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        for i, t in enumerate(self._threads):
            if i not in self.dropped:  # a dropped runner's thread may hang; it was closed
                t.join(timeout=10)
        for i, r in enumerate(self.runners):
            if i not in self.dropped:
                _close_quietly(r)  # closing after a failure must not hide it


def build_within(
    make: Callable[[], HostRunner], timeout_s: float, name: str
) -> tuple[HostRunner | None, str]:
    """Runs ``make`` (build a runner: make and reset its envs, the health probe) in a helper
    thread. Returns ``(runner, "")``, or ``(None, why)`` when it raised or did not finish within
    ``timeout_s``; a runner that finishes after that is closed, never used."""
    lock = threading.Lock()
    done = threading.Event()
    box: dict[str, Any] = {}

    def build() -> None:
        try:
            runner, error = make(), ""
        except BaseException:  # noqa: BLE001 (returned as the failure, SystemExit too)
            runner, error = None, traceback.format_exc()
        with lock:  # the caller either takes the result or has abandoned it
            if box.get("abandoned"):
                if runner is not None:
                    _close_quietly(runner, force=True)
                return
            box["runner"], box["error"] = runner, error
            done.set()

    threading.Thread(target=build, name=name, daemon=True).start()
    done.wait(timeout_s)
    with lock:
        if not done.is_set():
            box["abandoned"] = True
            return None, (
                f"building and resetting its envs (the health probe) took longer than "
                f"{timeout_s} s (env_runner_health_probe_timeout_s)"
            )
    if box["runner"] is None:
        return None, box["error"]
    return box["runner"], ""


def _get_nowait(q: queue.Queue) -> Any:
    try:
        return q.get_nowait()
    except queue.Empty:
        return None


def _close_quietly(runner: HostRunner, force: bool = False) -> None:
    with contextlib.suppress(Exception):
        runner.close(force=force)
