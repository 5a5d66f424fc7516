"""Replay of stacked image observations that stores each frame once (EnvPool's Atari frames).

EnvPool's Atari observation is a uint8 stack ``[S, H, W]`` (S = 4, 84 x 84) whose last frame is
the newest; inside an episode consecutive observations share S - 1 frames. Storing ``obs`` and
``next_obs`` as given costs ``2 * S * H * W`` bytes per transition (56,448 for Atari); this buffer
keeps one frame per env step, ``H * W`` bytes (7,056), and rebuilds both stacks with gathers.

**Layout.** Every sub-env ``k`` of ``num_envs`` has its own ring of ``R = capacity // num_envs``
rows; row ``r`` holds the newest frame of one observation, the other per-step fields (action,
reward, terminated, truncated, ...) of the step taken from it, and ``S`` uint8 offsets: stack
frame ``j`` of that observation is the newest frame of row ``r - offsets[j]``. The next
observation of row ``r`` is row ``r + 1`` of the same ring. Slot indices are ``k * R + r``.

**What is stored per env step.** ``add`` takes, for B sub-envs, the observation acted on and the
step's fields, in env-step order per sub-env: exactly the project's ``Transition`` rows, including
the auto-reset step after an episode end (``valid`` False: its observation is the final
observation of the ended episode, needed as the last transition's ``next_obs``; its action was
ignored). The offsets are found by comparing frames when the observation arrives, not by assuming
a reset convention: stack frame ``j`` points to the newest frame of this row (offset 0) if it
equals it, or else to where frame ``j + 1`` of the previous observation came from, if it equals
that. This covers EnvPool's resets (the first frame repeated S times) and its episodic-life
"resets" after a lost life (the stack keeps sliding), across truncation and termination alike.
An observation that fits neither (the first one of a stream that starts mid-episode) is marked
not rebuildable, and the transitions from and into it are never sampled. Every sampled ``obs``
and ``next_obs`` is therefore bit for bit the stack that was given.

**What can be sampled.** Slot ``(k, r)`` is sampled only when its step is ``valid``, both its
observation and the next one are rebuildable, the next one has arrived, and, once the ring has
wrapped, it is not one of the ``S - 1`` oldest rows (their stacks may point at overwritten
frames; a slightly conservative rule, which costs ``S - 1`` slots per sub-env).
This set is kept as the nonzero leaves of a sum tree: 1 each for uniform sampling, the priority
for prioritized sampling (``make_prioritized_frame_stack_buffer``), so both sample in O(log N)
with no rejection loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import chex
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from rljax.replay import kary_tree
from rljax.replay.base import (
    PrioritizedReplayBuffer,
    ReplayBuffer,
    batch_size_of,
    item_spec,
)
from rljax.replay.priorities import (
    importance_weights,
    priorities_from_td,
    stratified_targets,
)

NOT_REBUILDABLE = 255  # an offset marking a stack frame that no stored frame equals
_RESERVED_KEYS = ("next_obs", "valid", "env_id")


@flax.struct.dataclass
class FrameStackBufferState:
    """Per-sub-env rings of frames (K sub-envs, R rows each, stacks of S frames).

    Attributes:
      frames: A uint8 tensor of shape [K, R, *frame_shape]: each row's newest frame.
      offsets: A uint8 tensor of shape [K, R, S]: stack frame ``j`` of row ``r`` is
        ``frames[k, r - offsets[k, r, j]]`` (modulo R); ``NOT_REBUILDABLE`` where no stored frame
        matches.
      storage: The other fields of the example item, every leaf [K, R, *leaf_shape].
      insert_pos: An int32 tensor of shape [K], each ring's next row.
      size: An int32 tensor of shape [K], each ring's filled rows (at most R).
      last_obs: A uint8 tensor of shape [K, S, *frame_shape]: each sub-env's latest observation,
        compared with the next one. Kept apart from ``frames`` so that ``add`` only writes to
        the large arrays: reading them too would make XLA copy them (no in-place update).
      last_offsets: A uint8 tensor of shape [K, S], the offsets of ``last_obs``.
      last_valid: A bool tensor of shape [K]: the latest step was a real transition and its
        observation is rebuildable.
      sum_tree: A ``kary_tree`` sum tree over the K * R slots: 0 for a slot that cannot be
        sampled, else 1 (uniform) or its priority (prioritized).
      min_tree: A ``kary_tree`` min tree of the same leaves (``+inf`` for
        slots that cannot be sampled); None for uniform sampling.
      max_priority: A float32 scalar, the largest priority given so far (1 at the start).
    """

    frames: jax.Array
    offsets: jax.Array
    storage: Any
    insert_pos: jax.Array
    size: jax.Array
    last_obs: jax.Array
    last_offsets: jax.Array
    last_valid: jax.Array
    sum_tree: kary_tree.Tree
    min_tree: kary_tree.Tree | None
    max_priority: jax.Array


def gather(state: FrameStackBufferState, indices: chex.Array) -> dict[str, Any]:
    """Rebuilds the transitions at slots ``indices`` (``k * R + r``), an int tensor of shape [N].

    Returns:
      A dict with ``obs`` and ``next_obs`` (uint8 [N, S, *frame_shape]) and every stored field
      ([N, *leaf_shape]). Only meaningful for slots that can be sampled.
    """
    chex.assert_rank(indices, 1)
    rows_per_env = state.frames.shape[1]
    env = indices // rows_per_env
    row = indices % rows_per_env

    def stack(r):
        rows = (r[:, None] - state.offsets[env, r].astype(jnp.int32)) % rows_per_env
        return state.frames[env[:, None], rows]

    batch = {"obs": stack(row), "next_obs": stack((row + 1) % rows_per_env)}
    batch.update(jax.tree.map(lambda s: s[env, row], state.storage))
    return batch


def frame_stack_nbytes_per_transition(example_item: Mapping[str, Any], capacity: int) -> dict:
    """Bytes per stored transition of this buffer and of storing ``obs`` and ``next_obs`` as given.

    Args:
      example_item: As for ``make_frame_stack_buffer``.
      capacity: The number of slots (the sum trees round it up to a power of two).

    Returns:
      A dict: ``frame_stack`` and ``frame_stack_prioritized`` (this module's state divided by
      ``capacity``), ``stacked`` (``obs`` + ``next_obs`` + the fields, no tree) and
      ``stacked_prioritized`` (plus a sum and a min tree), all floats.
    """
    obs = item_spec(example_item["obs"])
    fields = item_spec({k: v for k, v in example_item.items() if k != "obs"})
    field_bytes = sum(
        np.prod(s.shape, dtype=np.int64) * s.dtype.itemsize for s in jax.tree.leaves(fields)
    )
    stack_bytes = int(np.prod(obs.shape)) * obs.dtype.itemsize
    frame_bytes = stack_bytes // obs.shape[0]
    tree_bytes = kary_tree.num_nodes(capacity) * 4 / capacity
    # frame + offsets (S bytes) + fields + one sum tree; the per-sub-env arrays are left out.
    frame_stack = frame_bytes + obs.shape[0] + field_bytes + tree_bytes
    stacked = 2 * stack_bytes + field_bytes
    return {
        "frame_stack": float(frame_stack),
        "frame_stack_prioritized": float(frame_stack + tree_bytes),
        "stacked": float(stacked),
        "stacked_prioritized": float(stacked + 2 * tree_bytes),
    }


class _Core:
    """The state layout and the add/sample logic shared by the uniform and prioritized buffers."""

    def __init__(self, example_item, num_envs, capacity, prioritized):
        if not isinstance(example_item, Mapping) or "obs" not in example_item:
            raise ValueError("example_item must be a dict with an 'obs' entry")
        if reserved := [k for k in _RESERVED_KEYS if k in example_item]:
            raise ValueError(
                f"example_item must not contain {reserved}: next_obs is rebuilt, and valid and "
                "env_id are given with each added batch"
            )
        self.obs_spec = item_spec(example_item["obs"])
        if len(self.obs_spec.shape) < 2:
            raise ValueError(f"obs must be a stack [S, *frame_shape], got {self.obs_spec.shape}")
        self.stack = self.obs_spec.shape[0]
        self.frame_shape = tuple(self.obs_spec.shape[1:])
        if not 1 <= self.stack < NOT_REBUILDABLE:
            raise ValueError(f"stack size {self.stack} out of range")
        self.fields_spec = item_spec({k: v for k, v in example_item.items() if k != "obs"})
        if num_envs < 1 or capacity % num_envs:
            raise ValueError(f"capacity {capacity} must be a multiple of num_envs {num_envs}")
        self.num_envs = num_envs
        self.rows = capacity // num_envs
        if self.rows < self.stack + 2:
            raise ValueError(
                f"each sub-env needs at least {self.stack + 2} rows, got {self.rows} "
                f"(capacity {capacity} / num_envs {num_envs})"
            )
        self.capacity = capacity
        self.prioritized = prioritized

    def init(self) -> FrameStackBufferState:
        k, r = self.num_envs, self.rows
        return FrameStackBufferState(
            frames=jnp.zeros((k, r, *self.frame_shape), self.obs_spec.dtype),
            offsets=jnp.full((k, r, self.stack), NOT_REBUILDABLE, jnp.uint8),
            storage=jax.tree.map(lambda s: jnp.zeros((k, r, *s.shape), s.dtype), self.fields_spec),
            insert_pos=jnp.zeros((k,), jnp.int32),
            size=jnp.zeros((k,), jnp.int32),
            last_obs=jnp.zeros((k, self.stack, *self.frame_shape), self.obs_spec.dtype),
            last_offsets=jnp.full((k, self.stack), NOT_REBUILDABLE, jnp.uint8),
            last_valid=jnp.zeros((k,), bool),
            sum_tree=kary_tree.init_tree(self.capacity, 0.0),
            min_tree=kary_tree.init_tree(self.capacity, jnp.inf) if self.prioritized else None,
            max_priority=jnp.ones((), jnp.float32),
        )

    def offsets_of(self, state, obs, env_id, has_prev):
        """The [B, S] offsets of the new observations, found by comparing frames."""
        prev_off = state.last_offsets[env_id]
        prev_obs = state.last_obs[env_id]
        frame_axes = tuple(range(2, 2 + len(self.frame_shape)))
        same = jnp.all(obs[:, :-1] == obs[:, -1:], axis=frame_axes)
        slide = (
            jnp.all(obs[:, :-1] == prev_obs[:, 1:], axis=frame_axes)
            & (prev_off[:, 1:] != NOT_REBUILDABLE)
            & has_prev[:, None]
        )
        # Offset 0 is preferred: it depends on no older row.
        off = jnp.where(same, 0, jnp.where(slide, prev_off[:, 1:] + 1, NOT_REBUILDABLE))
        newest = jnp.zeros((obs.shape[0], 1), jnp.uint8)
        return jnp.concatenate([off.astype(jnp.uint8), newest], axis=1)

    def add(self, state: FrameStackBufferState, batch: Mapping[str, Any]) -> FrameStackBufferState:
        batch = dict(batch)
        try:
            obs, valid = batch.pop("obs"), batch.pop("valid")
        except KeyError as e:
            raise ValueError(f"the batch to add needs an {e} entry") from None
        env_id = batch.pop("env_id", None)
        size = batch_size_of(self.obs_spec, obs)
        if self.fields_spec and batch_size_of(self.fields_spec, batch) != size:
            raise ValueError("obs and the other fields disagree on the batch size")
        chex.assert_shape(valid, (size,))
        if env_id is None:
            if size != self.num_envs:
                raise ValueError(
                    f"a batch of {size} sub-envs needs env_id (without it, the batch must hold "
                    f"all num_envs={self.num_envs} in order)"
                )
            env_id = jnp.arange(size, dtype=jnp.int32)
        chex.assert_shape(env_id, (size,))
        obs = jnp.asarray(obs).astype(self.obs_spec.dtype)
        env_id = jnp.asarray(env_id, jnp.int32)
        valid = jnp.asarray(valid, bool)

        row = state.insert_pos[env_id]
        prev_row = (row - 1) % self.rows
        has_prev = state.size[env_id] > 0
        offsets = self.offsets_of(state, obs, env_id, has_prev)
        rebuildable = jnp.all(offsets != NOT_REBUILDABLE, axis=1)
        # The previous step of each sub-env becomes a sampleable transition now that its next
        # observation has arrived (if both observations are rebuildable and the step was real).
        ready = has_prev & state.last_valid[env_id] & rebuildable
        priority = state.max_priority if self.prioritized else jnp.ones((), jnp.float32)

        # Leaves to set: the new row (0: no next observation yet), the S - 1 rows after it,
        # and the previous row. Once the ring has wrapped, the rows after the new one are the
        # oldest, and their stacks may point at the frame this write overwrote: 0 as well.
        # Before that they are left as they are (all of their history is still there).
        after = (row[:, None] + jnp.arange(1, self.stack)) % self.rows
        wrapped = jnp.broadcast_to((state.size[env_id] == self.rows)[:, None], after.shape)
        leaves = env_id[:, None] * self.rows + jnp.concatenate(
            [row[:, None], after, prev_row[:, None]], axis=1
        )
        write = jnp.concatenate([jnp.ones_like(row[:, None], bool), wrapped, ready[:, None]], 1)

        def set_leaves(tree, blocked, combine):
            values = jnp.full(write.shape, blocked, jnp.float32).at[:, -1].set(priority)
            return kary_tree.set_leaves(
                tree, leaves.reshape(-1), values.reshape(-1), combine, write.reshape(-1)
            )

        return dataclasses.replace(
            state,
            frames=state.frames.at[env_id, row].set(obs[:, -1]),
            offsets=state.offsets.at[env_id, row].set(offsets),
            storage=jax.tree.map(
                lambda s, x: s.at[env_id, row].set(jnp.asarray(x).astype(s.dtype)),
                state.storage,
                batch,
            ),
            insert_pos=state.insert_pos.at[env_id].set((row + 1) % self.rows),
            size=state.size.at[env_id].set(jnp.minimum(state.size[env_id] + 1, self.rows)),
            last_obs=state.last_obs.at[env_id].set(obs),
            last_offsets=state.last_offsets.at[env_id].set(offsets),
            last_valid=state.last_valid.at[env_id].set(valid & rebuildable),
            sum_tree=set_leaves(state.sum_tree, 0.0, jnp.add),
            min_tree=(
                set_leaves(state.min_tree, jnp.inf, jnp.minimum) if self.prioritized else None
            ),
        )

    def find(self, state, targets):
        # Clipped so that an empty buffer (total 0) still gathers in bounds.
        return jnp.minimum(kary_tree.find_prefix_sum(state.sum_tree, targets), self.capacity - 1)


def make_frame_stack_buffer(
    example_item: Mapping[str, Any], num_envs: int, capacity: int
) -> ReplayBuffer:
    """A uniform replay buffer that stores each frame of stacked observations once.

    Args:
      example_item: One step of one sub-env (no batch dimension): a dict with ``obs``, the
        stacked observation ``[S, *frame_shape]`` (e.g. uint8 [4, 84, 84], newest frame last),
        and the other fields to store per step (e.g. ``action``, ``reward``, ``terminated``,
        ``truncated``). Only shapes and dtypes are used. It must not contain ``next_obs``,
        ``valid`` or ``env_id``.
      num_envs: K, the number of sub-envs whose streams are added.
      capacity: The number of slots, a multiple of ``num_envs``; each sub-env gets
        ``capacity // num_envs`` rows (at least S + 2).

    Returns:
      ``ReplayBuffer(init, add, sample)``:

      * ``init() -> FrameStackBufferState``.
      * ``add(state, batch) -> state``: one env step of B sub-envs (B static), a dict with
        ``obs`` [B, S, *frame_shape], ``valid`` bool [B] (False for the auto-reset step after an
        episode end), optional ``env_id`` int32 [B] (distinct; default ``arange(num_envs)``) and
        the example's other fields with leading dimension B. Each sub-env's steps must be added
        in order, every step including the auto-reset ones, with no gaps.
      * ``sample(state, key, batch_size) -> (batch, indices)``: uniform with replacement over the
        slots that can be sampled (module docstring); ``batch`` is a dict with ``obs``,
        ``next_obs`` [batch_size, S, *frame_shape] and the fields; ``indices`` int32
        [batch_size] slot indices ``k * R + r``. ``batch_size`` is static. The number of slots
        that can be sampled is ``kary_tree.total(state.sum_tree)``; while it is 0 the batch is
        meaningless.
    """
    core = _Core(example_item, num_envs, capacity, prioritized=False)

    def sample(state: FrameStackBufferState, key: jax.Array, batch_size: int):
        targets = jax.random.uniform(key, (batch_size,)) * kary_tree.total(state.sum_tree)
        indices = core.find(state, targets)
        return gather(state, indices), indices

    return ReplayBuffer(init=core.init, add=core.add, sample=sample)


def make_prioritized_frame_stack_buffer(
    example_item: Mapping[str, Any],
    num_envs: int,
    capacity: int,
    alpha: float = 0.6,
    beta: float = 0.4,
    eps: float = 1e-6,
) -> PrioritizedReplayBuffer:
    """``make_frame_stack_buffer`` with proportional prioritized sampling.

    The priorities follow ``rljax.replay.priorities`` (stratified sampling, new
    transitions at the largest priority given so far, exact importance weights from a min tree,
    last write wins for repeated indices), with one difference: a transition gets its priority
    when its next observation arrives, and ``update_priorities`` leaves alone slots that cannot
    be sampled any more (overwritten or among the oldest rows since they were sampled); their
    TD errors do not count towards ``max_priority`` either.

    Returns:
      ``PrioritizedReplayBuffer(init, add, sample, update_priorities)``; ``sample(state, key,
      batch_size, beta=None) -> (batch, indices, weights)`` with ``batch`` as in
      ``make_frame_stack_buffer``.
    """
    core = _Core(example_item, num_envs, capacity, prioritized=True)
    default_beta = beta  # ``sample``'s own ``beta`` argument shadows the factory's.

    def sample(
        state: FrameStackBufferState,
        key: jax.Array,
        batch_size: int,
        beta: float | jax.Array | None = None,
    ):
        assert state.min_tree is not None  # a prioritized state has one
        total = kary_tree.total(state.sum_tree)
        indices = core.find(state, stratified_targets(key, total, batch_size))
        weights = importance_weights(
            kary_tree.get_leaves(state.sum_tree, indices),
            kary_tree.minimum(state.min_tree),
            default_beta if beta is None else beta,
        )
        return gather(state, indices), indices, weights

    def update_priorities(
        state: FrameStackBufferState, indices: chex.Array, td_errors: chex.Array
    ) -> FrameStackBufferState:
        return update_live_priorities(state, indices, td_errors, alpha, eps)

    return PrioritizedReplayBuffer(
        init=core.init, add=core.add, sample=sample, update_priorities=update_priorities
    )


def update_live_priorities(
    state: Any, indices: chex.Array, td_errors: chex.Array, alpha: float, eps: float
) -> Any:
    """Sets ``(|td| + eps) ** alpha`` on the slots that can still be sampled.

    For any buffer state with ``sum_tree``, ``min_tree`` (``kary_tree``) and ``max_priority``:
    slots overwritten or blocked since they were sampled keep 0, and their TD errors do not count
    towards ``max_priority``. Where an index repeats, the last one wins.
    """
    chex.assert_rank([indices, td_errors], 1)
    chex.assert_equal_shape([indices, td_errors])
    priorities = priorities_from_td(td_errors, alpha, eps)
    sum_t, min_t, live = kary_tree.set_live_priorities(
        state.sum_tree, state.min_tree, indices, priorities
    )
    return dataclasses.replace(
        state,
        sum_tree=sum_t,
        min_tree=min_t,
        max_priority=jnp.maximum(state.max_priority, jnp.where(live, priorities, 0.0).max()),
    )
