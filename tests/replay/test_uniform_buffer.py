import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.replay import UniformBufferState, make_uniform_buffer

EXAMPLE = {"obs": np.zeros((2, 3), np.uint8), "action": np.int32(0), "reward": np.float32(0)}


def _batch(start, size):
    """Items numbered start, start + 1, ...: obs filled with the number, action = number."""
    n = np.arange(start, start + size)
    return {
        "obs": np.broadcast_to(n[:, None, None], (size, 2, 3)).astype(np.uint8),
        "action": n.astype(np.int32),
        "reward": n.astype(np.float32) / 2,
    }


def _fns(buffer, jit):
    if not jit:
        return buffer.add, buffer.sample
    return jax.jit(buffer.add, donate_argnums=0), jax.jit(buffer.sample, static_argnums=2)


@pytest.mark.parametrize("jit", [False, True])
def test_ring_wraps_around_hand_checked(jit):
    buffer = make_uniform_buffer(EXAMPLE, capacity=5)
    add, _ = _fns(buffer, jit)
    state = buffer.init()
    assert isinstance(state, UniformBufferState)
    assert state.storage["obs"].shape == (5, 2, 3) and state.storage["obs"].dtype == np.uint8
    # Items 0..7 in batches of 2, 2, 2, 2 into 5 slots:
    #   after 0,1:  [0 1 . . .] pos 2 size 2     after 2,3: [0 1 2 3 .] pos 4 size 4
    #   after 4,5:  [5 1 2 3 4] pos 1 size 5     after 6,7: [5 6 7 3 4] pos 3 size 5
    expected = [
        ([0, 1, 0, 0, 0], 2, 2),
        ([0, 1, 2, 3, 0], 4, 4),
        ([5, 1, 2, 3, 4], 1, 5),
        ([5, 6, 7, 3, 4], 3, 5),
    ]
    for i, (actions, pos, size) in enumerate(expected):
        state = add(state, _batch(2 * i, 2))
        np.testing.assert_array_equal(state.storage["action"], actions)
        np.testing.assert_array_equal(state.storage["obs"][:, 1, 2], actions)
        np.testing.assert_array_equal(state.storage["reward"], np.array(actions) / 2)
        assert (int(state.insert_pos), int(state.size)) == (pos, size)
    # A batch as large as the buffer replaces everything: items 8..12 go to slots 3, 4, 0, 1, 2.
    state = add(state, _batch(8, 5))
    np.testing.assert_array_equal(state.storage["action"], [10, 11, 12, 8, 9])
    assert (int(state.insert_pos), int(state.size)) == (3, 5)


@pytest.mark.parametrize("jit", [False, True])
def test_sampling_returns_only_filled_slots(jit):
    buffer = make_uniform_buffer(EXAMPLE, capacity=10)
    add, sample = _fns(buffer, jit)
    state = add(buffer.init(), _batch(0, 3))
    batch, indices = sample(state, jax.random.key(0), 600)
    assert indices.shape == (600,) and indices.dtype == jnp.int32
    assert set(np.asarray(indices).tolist()) == {0, 1, 2}
    # Each of the three slots gets about a third of the draws.
    assert np.bincount(indices, minlength=3).min() > 150
    np.testing.assert_array_equal(batch["action"], indices)
    np.testing.assert_array_equal(batch["obs"][:, 0, 0], indices)
    assert batch["obs"].shape == (600, 2, 3) and batch["obs"].dtype == np.uint8


def test_jit_compiles_add_and_sample_once():
    buffer = make_uniform_buffer(EXAMPLE, capacity=7)
    add = jax.jit(buffer.add, donate_argnums=0)
    sample = jax.jit(buffer.sample, static_argnums=2)
    state = buffer.init()
    key = jax.random.key(1)
    for i in range(6):
        state = add(state, _batch(3 * i, 3))
        key, sub = jax.random.split(key)
        batch, indices = sample(state, sub, 4)
        np.testing.assert_array_equal(batch["action"], state.storage["action"][indices])
    assert add._cache_size() == 1
    assert sample._cache_size() == 1


def test_bad_batches_are_rejected():
    buffer = make_uniform_buffer(EXAMPLE, capacity=3)
    state = buffer.init()
    with pytest.raises(ValueError, match="capacity 3"):
        buffer.add(state, _batch(0, 4))
    bad = _batch(0, 2)
    bad["obs"] = np.zeros((2, 3, 2), np.uint8)
    with pytest.raises(ValueError, match=r"\['obs'\]"):
        buffer.add(state, bad)
    with pytest.raises(ValueError, match="structure"):
        buffer.add(state, {"obs": bad["obs"]})
