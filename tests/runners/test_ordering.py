import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.runners.acting import Transition
from rljax.runners.ordering import from_time_major, order_by_stream, to_time_major

T_, F_ = True, False


def _fragment(env_id, valid, truncated=None, terminated=None):
    """A [T, K] fragment whose observation is each row's flat position t * K + k."""
    env_id = np.asarray(env_id)
    t, k = env_id.shape
    none = np.zeros((t, k), bool)
    return Transition(
        obs=jnp.arange(t * k, dtype=jnp.float32).reshape(t, k, 1),
        action=jnp.zeros((t, k), jnp.int32),
        reward=jnp.ones((t, k), jnp.float32),
        terminated=jnp.asarray(none if terminated is None else terminated),
        truncated=jnp.asarray(none if truncated is None else truncated),
        valid=jnp.asarray(valid),
        env_id=jnp.asarray(env_id, jnp.int32),
        extras={"vf_preds": jnp.zeros((t, k))},
        next_extras={},
        episode_return=jnp.zeros((t, k)),
        episode_len=jnp.zeros((t, k), jnp.int32),
        episode_done=jnp.asarray(none),
    )


def _check(ordered, index, valid, stream_end, last_real, cut):
    np.testing.assert_array_equal(ordered.source, index)
    np.testing.assert_array_equal(ordered.rows.obs[:, 0], index)  # rows really moved
    np.testing.assert_array_equal(ordered.valid, valid)
    np.testing.assert_array_equal(ordered.stream_end, stream_end)
    np.testing.assert_array_equal(ordered.last_real, last_real)
    np.testing.assert_array_equal(ordered.cut, cut)


ORDER = {"plain": order_by_stream, "jitted": jax.jit(order_by_stream)}


@pytest.mark.parametrize("order", ORDER.values(), ids=ORDER.keys())
def test_sync_rows_with_an_auto_reset_row(order):
    # 2 sub-envs reporting in either order; sub-env 0's episode terminates at t=0, so its t=1
    # row is the auto-reset step (no transition); sub-env 1 is truncated at t=0.
    traj = _fragment(
        env_id=[[0, 1], [1, 0], [0, 1]],
        valid=[[T_, T_], [T_, F_], [T_, T_]],
        truncated=[[F_, T_], [F_, F_], [F_, F_]],
        terminated=[[T_, F_], [F_, F_], [F_, F_]],
    )
    # Flat positions: 0 (t0, env 0), 1 (t0, env 1), 2 (t1, env 1), 3 (t1, env 0: auto-reset),
    # 4 (t2, env 0), 5 (t2, env 1). Env 0's real rows (0, 4), its auto-reset row (3), env 1.
    ordered = order(traj)
    _check(
        ordered,
        index=[0, 4, 3, 1, 2, 5],
        valid=[T_, T_, F_, T_, T_, T_],
        stream_end=[F_, F_, T_, F_, F_, T_],
        last_real=[F_, T_, F_, F_, F_, T_],
        cut=[F_, T_, T_, T_, F_, T_],  # the termination at 0 is not a cut: terminated says it
    )
    np.testing.assert_array_equal(ordered.rows.terminated, [T_, F_, F_, F_, F_, F_])
    np.testing.assert_array_equal(ordered.rows.env_id, [0, 0, 0, 1, 1, 1])


@pytest.mark.parametrize("order", ORDER.values(), ids=ORDER.keys())
def test_async_first_ready_rows(order):
    # 3 sub-envs, batches of 2 of whichever finished first: env 0 reports three times, env 1
    # once, env 2 twice (its second row an auto-reset step); env 0 is truncated at t=1.
    traj = _fragment(
        env_id=[[2, 0], [0, 1], [0, 2]],
        valid=[[T_, T_], [T_, T_], [T_, F_]],
        truncated=[[F_, F_], [T_, F_], [F_, F_]],
    )
    _check(
        order(traj),
        index=[1, 2, 4, 3, 0, 5],
        valid=[T_, T_, T_, T_, T_, F_],
        stream_end=[F_, F_, T_, T_, F_, T_],
        last_real=[F_, F_, T_, T_, T_, F_],
        cut=[F_, T_, T_, T_, T_, T_],
    )


@pytest.mark.parametrize("order", ORDER.values(), ids=ORDER.keys())
def test_multi_agent_slots_skip_steps_where_their_agent_did_not_act(order):
    # 2 agent slots over 4 steps: slot 0's agent did not act at t=1, slot 1's not at t=3.
    # Slot 0's real transitions (t0, t2, t3) become adjacent; the idle row goes after them.
    traj = _fragment(
        env_id=[[0, 1]] * 4,
        valid=[[T_, T_], [F_, T_], [T_, T_], [T_, F_]],
    )
    ordered = order(traj)
    _check(
        ordered,
        index=[0, 4, 6, 2, 1, 3, 5, 7],
        valid=[T_, T_, T_, F_, T_, T_, T_, F_],
        stream_end=[F_, F_, F_, T_, F_, F_, F_, T_],
        last_real=[F_, F_, T_, F_, F_, F_, T_, F_],
        cut=[F_, F_, T_, T_, F_, F_, T_, T_],
    )
    # Lock-step: each slot has exactly T rows, so the flags go time-major as [T, slots].
    np.testing.assert_array_equal(
        to_time_major(ordered.cut, 2), [[F_, F_], [F_, F_], [T_, T_], [T_, T_]]
    )
    obs_tm = to_time_major(ordered.rows.obs, 2)
    assert obs_tm.shape == (4, 2, 1)
    np.testing.assert_array_equal(obs_tm[:, 0, 0], [0, 4, 6, 2])
    np.testing.assert_array_equal(from_time_major(obs_tm), ordered.rows.obs)
