import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.replay import kary_tree, make_frame_stack_buffer, make_prioritized_frame_stack_buffer
from rljax.replay.frame_stack import NOT_REBUILDABLE, frame_stack_nbytes_per_transition, gather

NA = NOT_REBUILDABLE
EXAMPLE = {
    "obs": np.zeros((4, 2, 2), np.uint8),
    "action": np.int32(0),
    "reward": np.float32(0),
    "terminated": np.bool_(False),
    "truncated": np.bool_(False),
}


def stack(*values):
    """A [4, 2, 2] uint8 observation whose frame j is filled with values[j]."""
    return np.stack([np.full((2, 2), v, np.uint8) for v in values])


# One sub-env: an episode of 4 steps ending in a termination, its final observation (the
# auto-reset step, not a real transition), then a new episode. EnvPool's reset repeats the first
# frame; inside an episode the stack slides. Offsets (rows back to each stack frame) by hand:
STREAM = [
    # obs,           valid, terminated, offsets
    (stack(1, 1, 1, 1), True, False, [0, 0, 0, 0]),
    (stack(1, 1, 1, 2), True, False, [1, 1, 1, 0]),
    (stack(1, 1, 2, 3), True, False, [2, 2, 1, 0]),
    (stack(1, 2, 3, 4), True, True, [3, 2, 1, 0]),
    (stack(2, 3, 4, 5), False, False, [3, 2, 1, 0]),  # final obs, its action was ignored
    (stack(6, 6, 6, 6), True, False, [0, 0, 0, 0]),
    (stack(6, 6, 6, 7), True, False, [1, 1, 1, 0]),
    (stack(6, 6, 7, 8), True, False, [2, 2, 1, 0]),
    (stack(6, 7, 8, 9), True, False, [3, 2, 1, 0]),
    (stack(7, 8, 9, 10), True, False, [3, 2, 1, 0]),
    (stack(8, 9, 10, 11), True, False, [3, 2, 1, 0]),
]


def _step(t, obs, valid, terminated, env_ids=None):
    batch = {
        "obs": obs[None],
        "action": np.array([t], np.int32),
        "reward": np.array([t / 2], np.float32),
        "terminated": np.array([terminated]),
        "truncated": np.array([False]),
        "valid": np.array([valid]),
    }
    if env_ids is not None:
        batch["env_id"] = np.asarray(env_ids, np.int32)
    return batch


def _leaves(state):
    n = state.frames.shape[0] * state.frames.shape[1]
    return np.asarray(state.sum_tree[0][:n])


@pytest.mark.parametrize("jit", [pytest.param(False, marks=pytest.mark.slow), True])  # eager: 7 s
def test_offsets_sampleable_slots_and_wrap_around_hand_checked(jit):
    buffer = make_frame_stack_buffer(EXAMPLE, num_envs=1, capacity=8)
    add = jax.jit(buffer.add, donate_argnums=0) if jit else buffer.add
    state = buffer.init()
    assert state.frames.shape == (1, 8, 2, 2) and state.frames.dtype == np.uint8
    for t, (obs, valid, term, _) in enumerate(STREAM[:7]):
        state = add(state, _step(t, obs, valid, term))
    np.testing.assert_array_equal(state.offsets[0, :7], [s[3] for s in STREAM[:7]])
    np.testing.assert_array_equal(state.frames[0, :7, 0, 0], [1, 2, 3, 4, 5, 6, 7])
    # Steps 0-3 and 5 have their next observation; 4 is the auto-reset step; 6 is the newest.
    np.testing.assert_array_equal(_leaves(state), [1, 1, 1, 1, 0, 1, 0, 0])
    batch = gather(state, jnp.array([0, 3, 5]))
    np.testing.assert_array_equal(batch["obs"], [STREAM[t][0] for t in (0, 3, 5)])
    np.testing.assert_array_equal(batch["next_obs"], [STREAM[t + 1][0] for t in (0, 3, 5)])
    np.testing.assert_array_equal(batch["action"], [0, 3, 5])
    np.testing.assert_array_equal(batch["terminated"], [False, True, False])

    # Steps 7-10 wrap around: rows 0, 1, 2 now hold steps 8, 9, 10 (row = t % 8). The stacks of
    # steps 3, 4, 5 (rows 3-5, the oldest) may point at overwritten rows: not sampleable. Left:
    # steps 6, 7, 8, 9 in rows 6, 7, 0, 1.
    for t in range(7, 11):
        obs, valid, term, _ = STREAM[t]
        state = add(state, _step(t, obs, valid, term))
    np.testing.assert_array_equal(_leaves(state), [1, 1, 0, 0, 0, 0, 1, 1])
    assert (int(state.insert_pos[0]), int(state.size[0])) == (3, 8)
    rows = jnp.array([6, 7, 0, 1])
    batch = gather(state, rows)
    np.testing.assert_array_equal(batch["obs"], [STREAM[t][0] for t in (6, 7, 8, 9)])
    np.testing.assert_array_equal(batch["next_obs"], [STREAM[t + 1][0] for t in (6, 7, 8, 9)])
    np.testing.assert_array_equal(batch["reward"], [3.0, 3.5, 4.0, 4.5])

    sample = jax.jit(buffer.sample, static_argnums=2) if jit else buffer.sample
    batch, indices = sample(state, jax.random.key(0), 64)
    assert set(np.asarray(indices).tolist()) == {6, 7, 0, 1}
    t_of_row = {6: 6, 7: 7, 0: 8, 1: 9}
    for i, row in enumerate(np.asarray(indices)):
        np.testing.assert_array_equal(batch["obs"][i], STREAM[t_of_row[row]][0])
        np.testing.assert_array_equal(batch["next_obs"][i], STREAM[t_of_row[row] + 1][0])


def test_stream_starting_mid_episode_and_env_id_subsets():
    # Sub-env 1 starts mid-episode: its first stacks hold frames never stored, so they are not
    # rebuildable (NA) until the stack has slid past them. Sub-env 0 is a fresh episode. The
    # batches come in any order and subset of sub-envs (EnvPool ASYNC).
    buffer = make_frame_stack_buffer(EXAMPLE, num_envs=2, capacity=16)
    add = jax.jit(buffer.add, donate_argnums=0)
    env0 = [stack(1, 1, 1, 1), stack(1, 1, 1, 2), stack(1, 1, 2, 3), stack(1, 2, 3, 4)]
    env1 = [stack(21 + t, 22 + t, 23 + t, 24 + t) for t in range(6)]
    state = buffer.init()
    calls = [([1], [0]), ([0, 1], [0, 1]), ([1, 0], [2, 1]), ([1], [3]), ([0, 1], [2, 4])]
    calls += [([0, 1], [3, 5])]
    for env_ids, ts in calls:
        obs = np.stack([(env0, env1)[k][t] for k, t in zip(env_ids, ts, strict=True)])
        batch = {
            "obs": obs,
            "action": np.array(ts, np.int32) + 100 * np.array(env_ids, np.int32),
            "reward": np.zeros(len(ts), np.float32),
            "terminated": np.zeros(len(ts), bool),
            "truncated": np.zeros(len(ts), bool),
            "valid": np.ones(len(ts), bool),
            "env_id": np.array(env_ids, np.int32),
        }
        state = add(state, batch)
    np.testing.assert_array_equal(state.size, [4, 6])
    np.testing.assert_array_equal(
        state.offsets[1, :6],
        [[NA, NA, NA, 0], [NA, NA, 1, 0], [NA, 2, 1, 0], [3, 2, 1, 0], [3, 2, 1, 0], [3, 2, 1, 0]],
    )
    np.testing.assert_array_equal(
        state.offsets[0, :4], [[0, 0, 0, 0], [1, 1, 1, 0], [2, 2, 1, 0], [3, 2, 1, 0]]
    )
    # Sub-env 0 (slots 0-7): steps 0-2. Sub-env 1 (slots 8-15): steps 3, 4 only, since the
    # observations of steps 0-2 cannot be rebuilt.
    np.testing.assert_array_equal(np.nonzero(_leaves(state))[0], [0, 1, 2, 11, 12])
    batch = gather(state, jnp.array([2, 11, 12]))
    np.testing.assert_array_equal(batch["obs"], [env0[2], env1[3], env1[4]])
    np.testing.assert_array_equal(batch["next_obs"], [env0[3], env1[4], env1[5]])
    np.testing.assert_array_equal(batch["action"], [2, 103, 104])


def test_prioritized_frames_new_transitions_max_priority_and_no_revival():
    buffer = make_prioritized_frame_stack_buffer(
        EXAMPLE, num_envs=1, capacity=8, alpha=1.0, beta=1.0, eps=0.0
    )
    add = jax.jit(buffer.add, donate_argnums=0)
    sample = jax.jit(buffer.sample, static_argnums=2)
    update = jax.jit(buffer.update_priorities, donate_argnums=0)
    state = buffer.init()
    for t, (obs, valid, term, _) in enumerate(STREAM[:7]):
        state = add(state, _step(t, obs, valid, term))
    np.testing.assert_array_equal(_leaves(state), [1, 1, 1, 1, 0, 1, 0, 0])
    # Slot 4 (the auto-reset step) and 6 (no next observation yet) cannot be sampled: updating
    # them leaves them at 0, and their TD errors (9) do not raise max_priority. Slot 1 gets 0.5
    # then 4 (last write wins), slot 2 gets |-2|, slot 5 gets 6.
    state = update(state, jnp.array([1, 4, 6, 2, 1, 5]), jnp.array([0.5, 9.0, 9.0, -2.0, 4.0, 6.0]))
    np.testing.assert_array_equal(_leaves(state), [1, 4, 2, 1, 0, 6, 0, 0])
    assert float(state.max_priority) == 6.0
    assert float(kary_tree.minimum(state.min_tree)) == 1.0
    # Step 7 arrives: step 6 becomes sampleable with the largest priority given so far.
    state = add(state, _step(7, *STREAM[7][:3]))
    np.testing.assert_array_equal(_leaves(state), [1, 4, 2, 1, 0, 6, 6, 0])
    batch, indices, weights = sample(state, jax.random.key(0), 20)
    # Total 20 in 20 strata of width 1: prefix sums 1 | 5 | 7 | 8 | 8 | 14 | 20.
    np.testing.assert_array_equal(indices, [0, 1, 1, 1, 1, 2, 2, 3] + [5] * 6 + [6] * 6)
    # beta = 1, min priority 1: w = 1 / p.
    np.testing.assert_allclose(weights, 1.0 / _leaves(state)[indices], rtol=1e-6)
    np.testing.assert_array_equal(batch["obs"][-1], STREAM[6][0])
    np.testing.assert_array_equal(batch["next_obs"][-1], STREAM[7][0])


def test_bytes_per_transition_for_atari():
    example = {
        "obs": np.zeros((4, 84, 84), np.uint8),
        "action": np.int32(0),
        "reward": np.float32(0),
        "terminated": False,
        "truncated": False,
    }
    nbytes = frame_stack_nbytes_per_transition(example, 2**20)
    # One 84 x 84 frame + 4 offsets + 10 bytes of fields + a float32 16-ary tree
    # (2^20 + 2^16 + 2^12 + 2^8 + 16 nodes: 4.27 bytes a slot).
    tree = 4 * (2**20 + 2**16 + 2**12 + 2**8 + 16) / 2**20
    assert nbytes["frame_stack"] == pytest.approx(7056 + 4 + 10 + tree)
    assert nbytes["stacked"] == 2 * 4 * 7056 + 10
    state = jax.eval_shape(make_frame_stack_buffer(example, 4, 2**20).init)
    total = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(state))
    # The per-sub-env arrays (latest observation, offsets, ...) add 4 * 28,245 bytes: 0.1 a slot.
    assert total / 2**20 == pytest.approx(nbytes["frame_stack"] + 0.108, abs=0.001)


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="multiple"):
        make_frame_stack_buffer(EXAMPLE, num_envs=3, capacity=32)
    with pytest.raises(ValueError, match="at least 6 rows"):
        make_frame_stack_buffer(EXAMPLE, num_envs=2, capacity=10)
    with pytest.raises(ValueError, match="next_obs"):
        make_frame_stack_buffer({**EXAMPLE, "next_obs": EXAMPLE["obs"]}, 1, 8)
    buffer = make_frame_stack_buffer(EXAMPLE, num_envs=2, capacity=16)
    with pytest.raises(ValueError, match="env_id"):
        buffer.add(buffer.init(), _step(0, *STREAM[0][:3]))


# ---------------------------------------------------------------- real EnvPool Atari data
def _collect(task, steps, seed, **kwargs):
    """Random-action EnvPool rollout: the observations [steps + 1, 2, 4, 84, 84] and the steps."""
    import envpool

    env = envpool.make(
        task,
        env_type="gymnasium",
        num_envs=2,
        batch_size=2,
        episodic_life=True,
        reward_clip=True,
        seed=seed,
        **kwargs,
    )
    obs, info = env.reset()
    rng = np.random.default_rng(seed)
    done = np.zeros(2, bool)
    observations, records = [obs], []
    for _ in range(steps):
        env_id = info["env_id"]
        action = rng.integers(0, env.action_space.n, size=2).astype(np.int32)
        obs, reward, terminated, truncated, info = env.step(action, env_id)
        np.testing.assert_array_equal(info["env_id"], [0, 1])
        # After an episode end the step returns the next episode's first observation and the
        # action is ignored: the transition from the final observation is not a real one.
        records.append(
            {
                "action": action,
                "reward": reward.astype(np.float32),
                "terminated": terminated,
                "truncated": truncated,
                "valid": ~done,
                "env_id": env_id.astype(np.int32),
                "game_over": info["terminated"].astype(bool) | truncated,
            }
        )
        done = terminated | truncated
        observations.append(obs)
    env.close()
    return np.stack(observations), records


def _expected_slots(records, n, rows):
    """(slot, t, env) of every transition a buffer fed steps [0, n) must be able to sample."""
    lower = n - rows + 3 if n > rows else 0  # the 3 oldest rows of a wrapped ring are left out
    return [
        (k * rows + t % rows, t, k)
        for k in range(2)
        for t in range(max(lower, 0), n - 1)
        if records[t]["valid"][k]
    ]


@pytest.mark.parametrize(
    "task, kwargs, steps",
    [
        # Pong has no lives: short episodes come from the step limit (truncation).
        ("Pong-v5", {"max_episode_steps": 37}, 130),
        # Breakout: episodic life ends an episode at each lost life (termination, the stack keeps
        # sliding across the "reset"); the fifth lost life ends the game (a real reset).
        ("Breakout-v5", {}, 180),
    ],
)
@pytest.mark.slow
def test_atari_round_trip_is_bit_exact(task, kwargs, steps):
    start = time.perf_counter()
    observations, records = _collect(task, steps, seed=3, **kwargs)
    terminated = np.array([r["terminated"] for r in records])
    truncated = np.array([r["truncated"] for r in records])
    game_over = np.array([r["game_over"] for r in records])
    if task == "Pong-v5":
        assert truncated.sum() >= 4
    else:
        assert (terminated & ~game_over).sum() >= 4 and (terminated & game_over).any()

    rows = 48
    example = {k: v[0] for k, v in records[0].items() if k not in ("valid", "env_id", "game_over")}
    example["obs"] = observations[0, 0]
    uniform = make_frame_stack_buffer(example, num_envs=2, capacity=2 * rows)
    prioritized = make_prioritized_frame_stack_buffer(example, num_envs=2, capacity=2 * rows)
    add_u = jax.jit(uniform.add, donate_argnums=0)
    add_p = jax.jit(prioritized.add, donate_argnums=0)
    sample = jax.jit(uniform.sample, static_argnums=2)
    gather_all = jax.jit(gather)
    state_u, state_p = uniform.init(), prioritized.init()
    checkpoints = {rows - 1, rows, rows + 2, 2 * rows + 5, steps}
    key = jax.random.key(0)
    for t, record in enumerate(records):
        batch = {k: v for k, v in record.items() if k != "game_over"}
        batch["obs"] = observations[t]
        state_u, state_p = add_u(state_u, batch), add_p(state_p, batch)
        n = t + 1
        if n not in checkpoints:
            continue
        # Every observation EnvPool gave is rebuildable, so exactly the valid transitions whose
        # next observation has arrived can be sampled, less the oldest rows after a wrap.
        expected = _expected_slots(records, n, rows)
        slots = np.array([s for s, _, _ in expected])
        np.testing.assert_array_equal(np.nonzero(_leaves(state_u))[0], np.sort(slots))
        np.testing.assert_array_equal(np.nonzero(_leaves(state_p))[0], np.sort(slots))
        got = gather_all(state_u, jnp.asarray(slots))
        ts, ks = np.array([t for _, t, _ in expected]), np.array([k for _, _, k in expected])
        np.testing.assert_array_equal(got["obs"], observations[ts, ks])
        np.testing.assert_array_equal(got["next_obs"], observations[ts + 1, ks])
        for field in ("action", "reward", "terminated", "truncated"):
            np.testing.assert_array_equal(
                got[field], [records[i][field][k] for i, k in zip(ts, ks, strict=True)]
            )
        # And through sample(): each drawn slot maps back to its step.
        key, sub = jax.random.split(key)
        batch, indices = sample(state_u, sub, 64)
        where = {s: (t, k) for s, t, k in expected}
        tk = np.array([where[int(i)] for i in np.asarray(indices)])
        np.testing.assert_array_equal(batch["obs"], observations[tk[:, 0], tk[:, 1]])
        np.testing.assert_array_equal(batch["next_obs"], observations[tk[:, 0] + 1, tk[:, 1]])
    assert add_u._cache_size() == 1 and add_p._cache_size() == 1 and sample._cache_size() == 1
    # The episode ends inside the sampleable window were really exercised.
    window = _expected_slots(records, steps, rows)
    ends = [records[t]["terminated"][k] | records[t]["truncated"][k] for _, t, k in window]
    assert sum(ends) >= 2
    assert time.perf_counter() - start < 20
