"""Replay of env-step streams with n-step returns built at sample time (RLlib's episode buffers).

Every sub-env ``k`` of ``num_envs`` has its own ring of ``R = capacity // num_envs`` rows, filled
in env-step order with the project's ``Transition`` rows: the observation acted on, the action,
reward, terminated, truncated and ``valid`` (False for the auto-reset step after an episode end,
whose observation is the final observation of the ended episode). Observations are stored once
per step: the next observation of row ``r`` is the observation of row ``r + 1``.

Because whole streams are kept, the n-step window is chosen when a batch is sampled, not when
data is stored: ``sample(..., n_step=n)`` takes any ``1 <= n <= max_n_step`` (also a traced
value, so RLlib's ``n_step=(low, high)`` draws a new ``n`` per batch inside jit). For a start row
``r`` the window runs over rows ``r .. r+m-1`` (``m = n``, or fewer when the episode ends first;
``rljax.ops.value_learning.n_step_window``) and the bootstrap observation is row ``r + m``.

Row ``(k, r)`` can be sampled once it is a real step (``valid``) and the ``max_n_step`` rows
after it have arrived, so that every window it can start is complete. This set is kept as the
nonzero leaves of a sum tree (1 for uniform sampling, the priority for prioritized sampling), so
both sample in O(log N) without rejection. Rows are overwritten oldest first; a row's window
only reaches newer rows, so it stays complete until the row itself is overwritten.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

import chex
import flax.struct
import jax
import jax.numpy as jnp

from rljax.ops.value_learning import n_step_window
from rljax.replay import frame_stack, kary_tree
from rljax.replay.base import PrioritizedReplayBuffer, ReplayBuffer, batch_size_of, item_spec
from rljax.replay.priorities import importance_weights, stratified_targets

REQUIRED_FIELDS = ("obs", "action", "reward", "terminated", "truncated")


@flax.struct.dataclass
class EpisodeBufferState:
    """Per-sub-env rings (K sub-envs, R rows each).

    Attributes:
      storage: A dict with ``obs``, ``action``, ``reward``, ``terminated``, ``truncated`` and
        ``valid``, every leaf of shape [K, R, *leaf_shape].
      insert_pos: An int32 tensor of shape [K], each ring's next row.
      size: An int32 tensor of shape [K], each ring's filled rows (at most R).
      sum_tree: A ``kary_tree`` sum tree over the K * R slots ``k * R + r``: 0 for a slot
        that cannot be sampled, else 1 (uniform) or its priority (prioritized).
      min_tree: The min tree of the same leaves (``+inf`` where a slot cannot be sampled); None
        for uniform sampling.
      max_priority: A float32 scalar, the largest priority given so far (1 at the start).
    """

    storage: dict[str, Any]
    insert_pos: jax.Array
    size: jax.Array
    sum_tree: kary_tree.Tree
    min_tree: kary_tree.Tree | None
    max_priority: jax.Array


class EpisodeReplayBuffer(NamedTuple):
    """Pure, jit-able functions of an ``EpisodeBufferState``.

    Attributes:
      init: ``init() -> state``.
      add: ``add(state, rows) -> state``: one env step of B distinct sub-envs (B static): a dict
        with ``obs``, ``action``, ``reward``, ``terminated``, ``truncated``, ``valid`` (all
        [B, ...]), optional ``env_id`` int32 [B] (default ``arange(num_envs)``) and optional
        ``present`` bool [B] (default all): a row with ``present`` False is not added and its
        ring is left as it is (an agent slot whose agent did not act in the step). Each
        sub-env's steps must be added in order, auto-reset steps included.
      sample: ``sample(state, key, batch_size, n_step=1, gamma=0.99, beta=None) -> (batch,
        indices, weights)``: ``batch`` has ``obs``, ``action``, ``reward`` (the n-step return),
        ``discount`` (``gamma ** m`` or 0 after termination), ``next_obs`` (the bootstrap
        observation) and ``n_steps`` (``m``); ``indices`` int32 [batch_size] slots;
        ``weights`` float32 importance weights (all 1 when uniform). ``batch_size`` is static.
      update_priorities: ``update_priorities(state, indices, td_errors) -> state``; a no-op for
        uniform buffers. Slots that cannot be sampled any more are left alone.
      prioritized: Whether sampling is prioritized.
    """

    init: Any
    add: Any
    sample: Any
    update_priorities: Any
    prioritized: bool


def has_sampleable_rows(state: Any) -> jax.Array:
    """Whether a batch can be sampled from ``state`` (an episode or frame-stacked buffer's):
    some row is a real step with its whole n-step window stored, bool scalar (traceable)."""
    return kary_tree.total(state.sum_tree) > 0


def episode_nbytes_per_transition(
    example_item: Mapping[str, Any], capacity: int, prioritized: bool
) -> float:
    """Bytes per stored step: the fields (observation once), ``valid`` and the tree leaves."""
    spec = item_spec(dict(example_item))
    fields = sum(
        int(jnp.prod(jnp.asarray(s.shape))) * s.dtype.itemsize for s in jax.tree.leaves(spec)
    )
    trees = (2 if prioritized else 1) * kary_tree.num_nodes(capacity) * 4 / capacity
    return float(fields + 1 + trees)


def make_episode_buffer(
    example_item: Mapping[str, Any],
    num_envs: int,
    capacity: int,
    max_n_step: int = 1,
    prioritized: bool = False,
    alpha: float = 0.6,
    beta: float = 0.4,
    eps: float = 1e-6,
) -> EpisodeReplayBuffer:
    """A replay buffer over the env-step streams of ``num_envs`` sub-envs.

    Args:
      example_item: One step of one sub-env (no batch dimension): a dict with ``obs``,
        ``action``, ``reward``, ``terminated`` and ``truncated``; only shapes and dtypes are used
        (uint8 images stay uint8).
      num_envs: K, the number of sub-envs whose streams are added.
      capacity: The number of env steps kept, a multiple of ``num_envs``; each sub-env gets
        ``capacity // num_envs`` rows, more than ``max_n_step + 1``.
      max_n_step: The largest ``n_step`` that ``sample`` will be asked for.
      prioritized: Proportional prioritized sampling (Schaul et al., 2016) with stratified
        targets, new steps at the largest priority given so far and exact importance weights
        ``(N P(i)) ** -beta / max_j (N P(j)) ** -beta`` from a min tree.
      alpha, beta, eps: The priority exponent, the default importance exponent and the
        priority offset ``p = (|td| + eps) ** alpha``.
    """
    missing = [k for k in REQUIRED_FIELDS if k not in example_item]
    if missing:
        raise ValueError(
            f"example_item needs the fields {list(REQUIRED_FIELDS)}; missing {missing}"
        )
    spec = item_spec({k: example_item[k] for k in REQUIRED_FIELDS})
    spec["valid"] = jax.ShapeDtypeStruct((), jnp.bool_)
    if num_envs < 1 or capacity % num_envs:
        raise ValueError(f"capacity {capacity} must be a positive multiple of num_envs {num_envs}")
    rows = capacity // num_envs
    if max_n_step < 1:
        raise ValueError(f"max_n_step must be >= 1, got {max_n_step}")
    if rows < max_n_step + 2:
        raise ValueError(
            f"each sub-env needs more than max_n_step + 1 = {max_n_step + 1} rows; capacity "
            f"{capacity} / num_envs {num_envs} gives {rows}"
        )
    default_beta = beta

    def init() -> EpisodeBufferState:
        return EpisodeBufferState(
            storage=jax.tree.map(lambda s: jnp.zeros((num_envs, rows, *s.shape), s.dtype), spec),
            insert_pos=jnp.zeros((num_envs,), jnp.int32),
            size=jnp.zeros((num_envs,), jnp.int32),
            sum_tree=kary_tree.init_tree(capacity, 0.0),
            min_tree=kary_tree.init_tree(capacity, jnp.inf) if prioritized else None,
            max_priority=jnp.ones((), jnp.float32),
        )

    def add(state: EpisodeBufferState, batch: Mapping[str, Any]) -> EpisodeBufferState:
        batch = dict(batch)
        env_id = batch.pop("env_id", None)
        present = batch.pop("present", None)
        fields = {k: batch[k] for k in spec}
        size = batch_size_of(spec, fields)
        if env_id is None:
            if size != num_envs:
                raise ValueError(
                    f"a batch of {size} sub-envs needs env_id (without it, the batch must hold "
                    f"all num_envs={num_envs} in order)"
                )
            env_id = jnp.arange(size, dtype=jnp.int32)
        env_id = jnp.asarray(env_id, jnp.int32)
        chex.assert_shape(env_id, (size,))
        row = state.insert_pos[env_id]
        # The row max_n_step steps back now has its whole window: it becomes sampleable if it
        # was a real step. The new row cannot be sampled yet (its slot may hold an old one).
        back = (row - max_n_step) % rows
        ready = (state.size[env_id] >= max_n_step) & state.storage["valid"][env_id, back]
        # ... and if its stream is unbroken: within its window, an invalid row may only follow an
        # episode end (the auto-reset step). One after a step that did not end the episode marks a
        # cut stream (a dropped runner's empty rows, a sub-env rebuilt mid-episode): that step's
        # next observation is not stored, so the rows whose windows reach it are never sampled.
        ahead = (back[:, None] + jnp.arange(1, max_n_step + 1)) % rows  # [size, max_n_step]
        st = state.storage
        valid_ahead = st["valid"][env_id[:, None], ahead].at[:, -1].set(fields["valid"])
        before = (ahead - 1) % rows
        ended = st["terminated"][env_id[:, None], before] | st["truncated"][env_id[:, None], before]
        ended_so_far = jnp.cumsum(ended.astype(jnp.int32), axis=1) > 0
        ready = ready & ~jnp.any(~valid_ahead & ~ended_so_far, axis=1)
        leaves = jnp.concatenate([env_id * rows + row, env_id * rows + back])
        write = jnp.concatenate([jnp.ones_like(ready), ready])
        if present is not None:  # absent rows write nothing and leave their rings alone
            present = jnp.asarray(present, jnp.bool_)
            chex.assert_shape(present, (size,))
            write = write & jnp.concatenate([present, present])
            fields = jax.tree.map(
                lambda s, x: jnp.where(
                    present.reshape((size,) + (1,) * (jnp.ndim(x) - 1)),
                    jnp.asarray(x).astype(s.dtype),
                    s[env_id, row],
                ),
                state.storage,
                fields,
            )
            step = present.astype(jnp.int32)
        else:
            step = jnp.ones((size,), jnp.int32)
        priority = state.max_priority if prioritized else jnp.ones((), jnp.float32)

        def set_tree(tree, blocked, combine):
            values = jnp.concatenate(
                [jnp.full((size,), blocked, jnp.float32), jnp.full((size,), 1.0) * priority]
            )
            return kary_tree.set_leaves(tree, leaves, values, combine, write)

        return dataclasses.replace(
            state,
            storage=jax.tree.map(
                lambda s, x: s.at[env_id, row].set(jnp.asarray(x).astype(s.dtype)),
                state.storage,
                fields,
            ),
            insert_pos=state.insert_pos.at[env_id].set((row + step) % rows),
            size=state.size.at[env_id].set(jnp.minimum(state.size[env_id] + step, rows)),
            sum_tree=set_tree(state.sum_tree, 0.0, jnp.add),
            min_tree=set_tree(state.min_tree, jnp.inf, jnp.minimum) if prioritized else None,
        )

    def sample(
        state: EpisodeBufferState,
        key: jax.Array,
        batch_size: int,
        n_step: int | jax.Array = 1,
        gamma: float = 0.99,
        beta: float | jax.Array | None = None,
    ) -> tuple[dict[str, jax.Array], jax.Array, jax.Array]:
        total = kary_tree.total(state.sum_tree)
        if prioritized:
            targets = stratified_targets(key, total, batch_size)
        else:
            targets = jax.random.uniform(key, (batch_size,)) * total
        # Clipped so that an empty buffer (total 0) still gathers in bounds.
        indices = jnp.minimum(kary_tree.find_prefix_sum(state.sum_tree, targets), capacity - 1)
        env, row = indices // rows, indices % rows
        window = (row[:, None] + jnp.arange(max_n_step)) % rows
        st = state.storage
        returns, discounts, steps = n_step_window(
            st["reward"][env[:, None], window].astype(jnp.float32),
            st["terminated"][env[:, None], window],
            st["truncated"][env[:, None], window],
            gamma,
            n_step,
        )
        next_row = (row + steps) % rows
        batch = {
            # An observation may be a structure (a Dict space's dict of arrays).
            "obs": jax.tree.map(lambda o: o[env, row], st["obs"]),
            "action": st["action"][env, row],
            "reward": returns,
            "discount": discounts,
            "next_obs": jax.tree.map(lambda o: o[env, next_row], st["obs"]),
            "n_steps": steps,
        }
        if prioritized:
            assert state.min_tree is not None  # a prioritized state has one
            weights = importance_weights(
                kary_tree.get_leaves(state.sum_tree, indices),
                kary_tree.minimum(state.min_tree),
                default_beta if beta is None else beta,
            )
        else:
            weights = jnp.ones((batch_size,), jnp.float32)
        return batch, indices, weights

    def update_priorities(
        state: EpisodeBufferState, indices: chex.Array, td_errors: chex.Array
    ) -> EpisodeBufferState:
        if not prioritized:
            return state
        return frame_stack.update_live_priorities(state, indices, td_errors, alpha, eps)

    return EpisodeReplayBuffer(
        init=init,
        add=add,
        sample=sample,
        update_priorities=update_priorities,
        prioritized=prioritized,
    )


def make_frame_stack_episode_buffer(
    example_item: Mapping[str, Any],
    num_envs: int,
    capacity: int,
    prioritized: bool = False,
    alpha: float = 0.6,
    beta: float = 0.4,
    eps: float = 1e-6,
    channels_last: bool = False,
) -> EpisodeReplayBuffer:
    """The frame-deduplicating buffer (``rljax.replay.frame_stack``) behind this module's interface.

    For EnvPool's stacked Atari frames: each frame is stored once. Windows are one step long
    (``sample`` accepts ``n_step=1`` only); ``discount`` is ``gamma (1 - terminated)``.
    ``channels_last``: observations are ``[H, W, S]`` (RLlib's layout, rljax's Atari envs'),
    moved to the stack-first layout the buffer stores and back.
    """
    item = {k: example_item[k] for k in REQUIRED_FIELDS}
    if channels_last:  # the stack-first layout the buffer stores (shapes and dtypes only)
        obs = item["obs"]
        item["obs"] = jax.ShapeDtypeStruct((obs.shape[-1], *obs.shape[:-1]), obs.dtype)
    inner: ReplayBuffer | PrioritizedReplayBuffer
    if prioritized:
        inner = frame_stack.make_prioritized_frame_stack_buffer(
            item, num_envs, capacity, alpha=alpha, beta=beta, eps=eps
        )
    else:
        inner = frame_stack.make_frame_stack_buffer(item, num_envs, capacity)

    def add(state, batch):
        batch = {k: batch[k] for k in (*REQUIRED_FIELDS, "valid", "env_id") if k in batch}
        if channels_last:
            batch["obs"] = jnp.moveaxis(jnp.asarray(batch["obs"]), -1, 1)
        return inner.add(state, batch)

    def sample(state, key, batch_size, n_step=1, gamma=0.99, beta=None):
        if not isinstance(n_step, int) or n_step != 1:
            raise ValueError(
                f"the frame-stack buffer samples 1-step windows; got n_step={n_step!r}"
            )
        if isinstance(inner, PrioritizedReplayBuffer):
            out, indices, weights = inner.sample(state, key, batch_size, beta)
        else:
            out, indices = inner.sample(state, key, batch_size)
            weights = jnp.ones((batch_size,), jnp.float32)
        batch = {
            "obs": out["obs"],
            "action": out["action"],
            "reward": out["reward"].astype(jnp.float32),
            "discount": jnp.where(out["terminated"], 0.0, gamma).astype(jnp.float32),
            "next_obs": out["next_obs"],
            "n_steps": jnp.ones((batch_size,), jnp.int32),
        }
        if channels_last:
            for name in ("obs", "next_obs"):
                batch[name] = jnp.moveaxis(batch[name], 1, -1)
        return batch, indices, weights

    def update_priorities(state, indices, td_errors):
        if isinstance(inner, PrioritizedReplayBuffer):
            return inner.update_priorities(state, indices, td_errors)
        return state

    return EpisodeReplayBuffer(
        init=inner.init,
        add=add,
        sample=sample,
        update_priorities=update_priorities,
        prioritized=prioritized,
    )
