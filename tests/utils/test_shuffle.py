"""shuffled_positions: flagged rows last, the others uniformly shuffled, by integer sorts."""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.utils import shuffle
from rljax.utils.shuffle import shuffled_positions


@pytest.mark.parametrize("min_random_bits", [8, 31])  # 31: the argsort path
def test_permutations_with_flagged_rows_last(monkeypatch, min_random_bits):
    monkeypatch.setattr(shuffle, "_MIN_RANDOM_BITS", min_random_bits)
    last = jnp.asarray([[False, True, False, False, True, False, False], [True] + [False] * 6])
    out = np.asarray(jax.jit(shuffled_positions)(jax.random.PRNGKey(3), last))
    assert out.dtype == np.int32
    for row, flags in zip(out, np.asarray(last), strict=True):
        assert sorted(row) == list(range(7))
        k = int(np.sum(~flags))
        assert not flags[row[:k]].any() and flags[row[k:]].all()
    in_order = np.asarray(shuffled_positions(jax.random.PRNGKey(3), last, shuffle=False))
    assert in_order.tolist() == [[0, 2, 3, 5, 6, 1, 4], [1, 2, 3, 4, 5, 6, 0]]
    identity = shuffled_positions(jax.random.PRNGKey(0), jnp.zeros((1, 5), bool), False)
    assert identity.tolist() == [[0, 1, 2, 3, 4]]


def test_every_order_of_four_rows_about_equally_often():
    keys = jax.random.split(jax.random.PRNGKey(0), 24_000)
    last = jnp.zeros((1, 4), bool)
    perms = np.asarray(jax.jit(jax.vmap(lambda k: shuffled_positions(k, last)[0]))(keys))
    counts = collections.Counter(map(tuple, perms))
    assert len(counts) == 24
    # 1,000 expected each; a binomial's standard deviation is about 31.
    assert min(counts.values()) > 850 and max(counts.values()) < 1150
