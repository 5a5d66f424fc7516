"""APPO's circular buffer as it runs here: K updates in a row on each batch."""

import jax
import jax.numpy as jnp
import pytest

from rljax.learners.circular import make_repeated_update


def _double_plus(state, batch):
    return state * 2 + batch, {"loss": state, "num_steps": jnp.ones((), jnp.int32)}


def test_k_updates_in_a_row_means_and_counts():
    # 1 -> 3 -> 7 -> 15 on batch 1; the loss metric (the state before each step) averages
    # (1 + 3 + 7) / 3, the count adds up.
    update = jax.jit(make_repeated_update(_double_plus, 3))
    state, metrics = update(jnp.float32(1.0), jnp.float32(1.0))
    assert float(state) == 15.0
    assert float(metrics["loss"]) == pytest.approx(11 / 3)
    assert int(metrics["num_steps"]) == 3


def test_one_iteration_is_the_update_itself_and_zero_is_refused():
    assert make_repeated_update(_double_plus, 1) is _double_plus
    with pytest.raises(ValueError, match="iterations must be >= 1; got 0"):
        make_repeated_update(_double_plus, 0)
