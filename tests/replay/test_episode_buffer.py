"""The episode buffer: n-step windows built at sample time, wrap-around, priorities."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.ops.value_learning import n_step_window
from rljax.replay import kary_tree
from rljax.replay.episode import make_episode_buffer

ITEM = {
    "obs": np.zeros((2,), np.float32),
    "action": np.zeros((), np.int32),
    "reward": np.zeros((), np.float32),
    "terminated": np.zeros((), bool),
    "truncated": np.zeros((), bool),
}


def _step(obs, reward, term=False, trunc=False, valid=True, action=0):
    return {
        "obs": np.array([[obs, -obs]], np.float32),
        "action": np.array([action], np.int32),
        "reward": np.array([reward], np.float32),
        "terminated": np.array([term]),
        "truncated": np.array([trunc]),
        "valid": np.array([valid]),
    }


def _fill(buf, steps):
    state = buf.init()
    add = jax.jit(buf.add)
    for s in steps:
        state = add(state, s)
    return state


def test_n_step_window_hand_computed():
    r = jnp.array([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0], [1.0, 2.0, 4.0]])
    term = jnp.array([[False, False, False], [False, True, False], [False, False, False]])
    trunc = jnp.array([[False, False, False], [False, False, False], [True, False, False]])
    g, d, m = n_step_window(r, term, trunc, 0.5, 3)
    # Row 0: 1 + 0.5*2 + 0.25*4 = 3, discount 0.125. Row 1: terminated at step 1: 1 + 1 = 2,
    # discount 0. Row 2: truncated at step 0: reward 1, bootstraps with 0.5.
    np.testing.assert_allclose(g, [3.0, 2.0, 1.0])
    np.testing.assert_allclose(d, [0.125, 0.0, 0.5])
    np.testing.assert_array_equal(m, [3, 2, 1])
    g2, d2, m2 = n_step_window(r, term, trunc, 0.5, 2)
    np.testing.assert_allclose(g2, [2.0, 2.0, 1.0])
    np.testing.assert_allclose(d2, [0.25, 0.0, 0.5])
    np.testing.assert_array_equal(m2, [2, 2, 1])


def test_n_step_samples_match_the_stream():
    # One sub-env: an episode of 4 steps that terminates, the auto-reset row, then more steps.
    steps = [
        _step(0, 1.0),
        _step(1, 2.0),
        _step(2, 3.0),
        _step(3, 4.0, term=True),
        _step(4, 0.0, valid=False),  # obs 4 is the final observation
        _step(10, 1.0),
        _step(11, 1.0),
        _step(12, 1.0),
        _step(13, 1.0),
    ]
    buf = make_episode_buffer(ITEM, num_envs=1, capacity=16, max_n_step=3)
    state = _fill(buf, steps)
    # Rows 0..5 have 3 rows after them; row 4 is not a real step.
    leaves = np.asarray(kary_tree.get_leaves(state.sum_tree, jnp.arange(16)))
    np.testing.assert_array_equal(leaves, [1, 1, 1, 1, 0, 1] + [0] * 10)
    batch, idx, w = jax.jit(buf.sample, static_argnums=2)(state, jax.random.PRNGKey(0), 256, 3, 0.5)
    seen = set()
    for i, start in enumerate(np.asarray(idx)):
        seen.add(int(start))
        expected = {
            0: (1 + 1 + 0.75, 0.125, 3),
            1: (2 + 1.5 + 1.0, 0.0, 3),  # terminates at its third step
            2: (3 + 2.0, 0.0, 2),
            3: (4.0, 0.0, 1),
            5: (1 + 0.5 + 0.25, 0.125, 3),
        }[int(start)]
        np.testing.assert_allclose(batch["reward"][i], expected[0])
        np.testing.assert_allclose(batch["discount"][i], expected[1])
        assert int(batch["n_steps"][i]) == expected[2]
        next_row = int(start) + expected[2]
        assert batch["next_obs"][i][0] == [0, 1, 2, 3, 4, 10, 11, 12, 13][next_row]
        assert batch["obs"][i][0] == [0, 1, 2, 3, 4, 10, 11, 12, 13][int(start)]
    assert seen == {0, 1, 2, 3, 5}
    np.testing.assert_array_equal(w, 1.0)


def test_truncation_bootstraps_from_the_final_observation():
    steps = [_step(0, 1.0), _step(1, 1.0, trunc=True), _step(7, 0.0, valid=False), _step(20, 0.0)]
    buf = make_episode_buffer(ITEM, num_envs=1, capacity=8, max_n_step=2)
    state = _fill(buf, steps)
    batch, idx, _ = buf.sample(state, jax.random.PRNGKey(1), 64, 2, 0.9)
    for i, start in enumerate(np.asarray(idx)):
        assert int(start) in (0, 1)
        if start == 1:  # truncated at once: one reward, bootstrap from the final obs 7
            assert batch["next_obs"][i][0] == 7.0
            np.testing.assert_allclose(batch["discount"][i], 0.9)
        else:
            assert batch["next_obs"][i][0] == 7.0
            np.testing.assert_allclose(batch["reward"][i], 1.9)
            np.testing.assert_allclose(batch["discount"][i], 0.81)


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (7 s alone)
def test_wrap_around_keeps_the_newest_and_routes_env_ids():
    buf = make_episode_buffer(ITEM, num_envs=2, capacity=8, max_n_step=1)  # 4 rows per env
    state = buf.init()
    for t in range(7):  # env 1 gets steps 100.., env 0 gets steps 0..; given in reverse order
        rows = {
            "obs": np.array([[100 + t, 0], [t, 0]], np.float32),
            "action": np.zeros(2, np.int32),
            "reward": np.array([100 + t, t], np.float32),
            "terminated": np.zeros(2, bool),
            "truncated": np.zeros(2, bool),
            "valid": np.ones(2, bool),
            "env_id": np.array([1, 0], np.int32),
        }
        state = buf.add(state, rows)
    np.testing.assert_array_equal(state.insert_pos, [3, 3])
    np.testing.assert_array_equal(state.size, [4, 4])
    np.testing.assert_array_equal(state.storage["obs"][0, :, 0], [4, 5, 6, 3])
    np.testing.assert_array_equal(state.storage["obs"][1, :, 0], [104, 105, 106, 103])
    batch, idx, _ = buf.sample(state, jax.random.PRNGKey(2), 200, 1, 0.5)
    # Sampleable: steps 3, 4, 5 of each env (6 has no next obs yet; older ones are gone).
    starts = sorted({float(x) for x in np.asarray(batch["obs"][:, 0])})
    assert starts == [3.0, 4.0, 5.0, 103.0, 104.0, 105.0]
    np.testing.assert_allclose(batch["next_obs"][:, 0], batch["obs"][:, 0] + 1)
    np.testing.assert_allclose(batch["reward"], batch["obs"][:, 0])


@pytest.mark.slow
def test_prioritized_sampling_frequency_follows_priorities():
    steps = [_step(i, 0.0) for i in range(6)]
    buf = make_episode_buffer(
        ITEM, num_envs=1, capacity=8, max_n_step=1, prioritized=True, alpha=1.0, eps=0.0
    )
    state = _fill(buf, steps)  # rows 0..4 sampleable at priority 1
    state = buf.update_priorities(state, jnp.arange(5), jnp.array([1.0, 2.0, 3.0, 4.0, 10.0]))
    leaves = np.asarray(kary_tree.get_leaves(state.sum_tree, jnp.arange(8)))
    # Row 5 has no next observation yet: not sampleable.
    np.testing.assert_allclose(leaves, [1, 2, 3, 4, 10, 0, 0, 0])
    sample = jax.jit(buf.sample, static_argnums=2)
    counts = np.zeros(8)
    for k in range(20):
        _, idx, w = sample(state, jax.random.PRNGKey(k), 500, 1, 0.99, 1.0)
        counts += np.bincount(np.asarray(idx), minlength=8)
    freq = counts / counts.sum()
    np.testing.assert_allclose(freq[:5], np.array([1, 2, 3, 4, 10]) / 20, atol=0.01)
    # beta=1: weights (p_min / p_i) = 1 / p_i.
    np.testing.assert_allclose(
        np.sort(np.unique(np.asarray(w))), [0.1, 0.25, 1 / 3, 0.5, 1.0], rtol=1e-6
    )


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="multiple of num_envs"):
        make_episode_buffer(ITEM, num_envs=3, capacity=8)
    with pytest.raises(ValueError, match="more than max_n_step"):
        make_episode_buffer(ITEM, num_envs=2, capacity=8, max_n_step=3)
    with pytest.raises(ValueError, match="missing"):
        make_episode_buffer({"obs": ITEM["obs"]}, num_envs=1, capacity=8)


def test_a_cut_stream_never_yields_a_transition_into_the_cut():
    # A sub-env's stream: 5 real steps (obs 1..5, no episode end), then empty rows (zeros,
    # valid False), as a dropped runner leaves. Row 5's next observation was never stored, so no
    # window may reach past row 5: only rows 1 and 2 (windows 1-4, 2-5) can be sampled.
    buf = make_episode_buffer(ITEM, num_envs=1, capacity=64, max_n_step=3)
    steps = [_step(float(t), 1.0) for t in range(1, 6)] + [_step(0.0, 0.0, valid=False)] * 6
    batch, _, _ = buf.sample(_fill(buf, steps), jax.random.PRNGKey(0), 512, n_step=1)
    assert set(np.asarray(batch["obs"])[:, 0].tolist()) == {1.0, 2.0}
    # The auto-reset row after an episode end is not a cut: the steps before the end all count.
    flags = [(1, 0), (1, 0), (1, 1), (0, 0), (1, 0), (1, 0), (1, 0)]
    steps = [
        _step(float(t + 1), 1.0, term=bool(d), valid=bool(v)) for t, (v, d) in enumerate(flags)
    ]
    batch, _, _ = buf.sample(_fill(buf, steps), jax.random.PRNGKey(1), 512, n_step=1)
    assert set(np.asarray(batch["obs"])[:, 0].tolist()) == {1.0, 2.0, 3.0}


def test_absent_rows_leave_their_ring_alone_and_streams_skip_them():
    # Two agent slots taking turns: slot 0 acts at even steps, slot 1 at odd ones (a
    # turn-based game's rows: a slot's row is present only when its agent acted).
    buf = make_episode_buffer(ITEM, num_envs=2, capacity=16, max_n_step=2)  # 8 rows per slot
    state = buf.init()
    for t in range(8):
        present = np.array([t % 2 == 0, t % 2 == 1])
        rows = {
            "obs": np.array([[t, 0], [100 + t, 0]], np.float32),
            "action": np.zeros(2, np.int32),
            "reward": np.array([t, 100 + t], np.float32),
            "terminated": np.zeros(2, bool),
            "truncated": np.zeros(2, bool),
            "valid": np.ones(2, bool),
            "env_id": np.array([0, 1], np.int32),
            "present": present,
        }
        state = buf.add(state, rows)
    np.testing.assert_array_equal(state.insert_pos, [4, 4])
    np.testing.assert_array_equal(state.size, [4, 4])
    # Each ring holds its own agent's steps back to back; the absent rows wrote nothing.
    np.testing.assert_array_equal(state.storage["obs"][0, :4, 0], [0, 2, 4, 6])
    np.testing.assert_array_equal(state.storage["obs"][1, :4, 0], [101, 103, 105, 107])
    np.testing.assert_array_equal(state.storage["obs"][:, 4:, 0], 0)
    # 2-step windows run along the agent's own steps: 0 -> 2 -> 4 and 101 -> 103 -> 105 (the
    # last two rows of each ring have no whole window yet).
    batch, _, _ = buf.sample(state, jax.random.PRNGKey(0), 200, n_step=2, gamma=0.5)
    starts = sorted({float(x) for x in np.asarray(batch["obs"][:, 0])})
    assert starts == [0.0, 2.0, 101.0, 103.0]
    np.testing.assert_allclose(batch["next_obs"][:, 0], batch["obs"][:, 0] + 4)
    # n-step return r_t + 0.5 r_{t+2}: the agent's own rewards.
    np.testing.assert_allclose(batch["reward"], batch["obs"][:, 0] * 1.5 + 1.0)


def test_has_sampleable_rows_waits_for_a_whole_window():
    from rljax.replay.episode import has_sampleable_rows

    buf = make_episode_buffer(ITEM, num_envs=1, capacity=8, max_n_step=1)
    state = buf.init()
    assert not bool(has_sampleable_rows(state))
    state = buf.add(state, _step(0.0, 1.0))
    assert not bool(has_sampleable_rows(state))  # no next observation yet
    state = buf.add(state, _step(1.0, 1.0))
    assert bool(has_sampleable_rows(state))
