"""One-shot programs shared within ``sharing_programs()`` (a population's alike trials), and
compiled per call outside it."""

import jax.numpy as jnp
import numpy as np

from rljax.utils import jit


def test_a_scope_shares_one_shot_programs_and_drops_them_when_it_ends():
    traced = []

    def build(offset: float):
        def fn(x):
            traced.append(offset)
            return x + offset

        return fn

    x = jnp.ones((3,), jnp.float32)
    assert jit.shared_key("start") is None  # outside a scope: compiled per call
    np.testing.assert_array_equal(jit.run_once(build(1.0), x, cache_key=None), [2, 2, 2])
    np.testing.assert_array_equal(jit.run_once(build(1.0), x, cache_key=None), [2, 2, 2])
    assert traced == [1.0, 1.0]
    with jit.sharing_programs():
        key = jit.shared_key("start")
        assert key is not None
        first = jit.run_once(build(5.0), x, cache_key=key)
        # A second build's closure under the same key runs the first one's program: the
        # caller vouches that the builds are alike (here they are not, to show it).
        second = jit.run_once(build(7.0), x, cache_key=jit.shared_key("start"))
        np.testing.assert_array_equal(first, second)
        assert traced == [1.0, 1.0, 5.0]
        assert any(k[0] == key for k in jit._ONCE_CACHE)
        with jit.sharing_programs():  # a new scope shares nothing with the outer one
            jit.run_once(build(9.0), x, cache_key=jit.shared_key("start"))
            assert traced[-1] == 9.0
    assert jit.shared_key("start") is None
    assert not any(isinstance(k[0], tuple) and k[0][:1] == key[:1] for k in jit._ONCE_CACHE)
