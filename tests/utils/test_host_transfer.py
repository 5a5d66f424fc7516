"""A program's outputs packed into one flat array per dtype and rebuilt on the host."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.utils.host_transfer import PackedOutputs
from rljax.utils.nonfinite import count_non_finite, guard, total_non_finite


def test_pack_and_unpack_round_trip_by_hand():
    outputs = PackedOutputs()
    tree = {
        "metrics": {"loss": jnp.float32(1.5), "num_steps": jnp.int32(7)},
        "episodes": {
            "returns": jnp.asarray([[1.0, 2.0], [3.0, 4.0]], jnp.float32),
            "done": jnp.asarray([True, False, True]),
            "lens": jnp.asarray([5, 6], jnp.int32),
        },
    }
    flat = jax.device_get(jax.jit(outputs.pack)(tree))
    # One array per dtype, in the order the dtypes first appear among the leaves (sorted keys:
    # episodes.done, episodes.lens, episodes.returns, metrics.loss, metrics.num_steps).
    assert [(f.dtype, f.tolist()) for f in flat] == [
        (np.dtype(bool), [True, False, True]),
        (np.dtype(np.int32), [5, 6, 7]),
        (np.dtype(np.float32), [1.0, 2.0, 3.0, 4.0, 1.5]),
    ]
    back = outputs.unpack(flat)
    assert jax.tree.structure(back) == jax.tree.structure(tree)
    for got, want in zip(jax.tree.leaves(back), jax.tree.leaves(tree), strict=True):
        assert isinstance(got, np.ndarray)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, np.asarray(want))


def test_two_trees_of_the_same_flat_shapes_are_refused():
    outputs = PackedOutputs()
    jax.jit(outputs.pack)({"a": jnp.zeros(2), "b": jnp.zeros(1)})
    with pytest.raises(ValueError, match="two output trees of the same flat shapes"):
        jax.jit(outputs.pack)({"a": jnp.zeros(1), "b": jnp.zeros(2)})


def test_total_non_finite_counts_as_the_host_count_does():
    import optax

    opt = guard(optax.sgd(0.1))
    params = {"w": jnp.ones(3)}
    state = opt.init(params)
    for g in (jnp.ones(3), jnp.full(3, jnp.nan), jnp.asarray([1.0, jnp.inf, 0.0])):
        _, state = opt.update({"w": g}, state, params)
    both = {"first": state, "second": state, "other": jnp.ones(2)}
    assert count_non_finite(both) == 4
    assert int(jax.jit(total_non_finite)(both)) == 4
    assert int(jax.jit(total_non_finite)({"no_guard": jnp.ones(2)})) == 0
