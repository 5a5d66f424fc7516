"""The shared actor-critic parts: the injected optimizer (built once, its rate in its state),
the checkpoint layout of its state and the upgrade of the stored one, dynamic settings as
arrays, and the batch protocol."""

from __future__ import annotations

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.actor_critic import (
    POLICY_ID,
    adapt_kl_coeff,
    live_layout,
    masked_mean,
    saved_layout,
    settings_at,
    upgrade_opt_state,
    with_hyperparams,
)
from rljax.algorithms.ppo.learner import make_injected_ppo_optimizer, make_optimizer
from rljax.learners.update import gradient_step
from rljax.utils.schedules import SchedulePoints, schedule_points, schedule_value, stack_settings

PARAMS = {POLICY_ID: {"w": jnp.asarray([1.0, -2.0, 0.5]), "b": jnp.asarray(0.25)}}


def _loss(params, x):
    p = params[POLICY_ID]
    return jnp.sum((p["w"] * x + p["b"]) ** 2)


@flax.struct.dataclass
class _State:
    params: object
    opt_state: object


@pytest.mark.parametrize("grad_clip", [None, 0.5])
def test_the_injected_optimizer_steps_as_the_one_built_per_rate(grad_clip):
    x = jnp.asarray([0.5, 1.0, -1.5])
    plain_params, injected_params = PARAMS, PARAMS
    injected = make_injected_ppo_optimizer([[0, 1e-2], [10, 1e-3]], grad_clip)
    plain_state = make_optimizer(1e-2, grad_clip).init(PARAMS)
    injected_state = injected.init(PARAMS)
    for rate in (1e-2, 3e-3, 1e-3):
        plain = gradient_step(
            _loss, make_optimizer(rate, grad_clip), plain_params, plain_state, x, has_aux=False
        )
        injected_state = with_hyperparams(injected_state, learning_rate=rate)
        step = gradient_step(_loss, injected, injected_params, injected_state, x, has_aux=False)
        plain_params, plain_state = plain.params, plain.opt_state
        injected_params, injected_state = step.params, step.opt_state
        for a, b in zip(
            jax.tree.leaves(plain_params), jax.tree.leaves(injected_params), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    assert float(injected_state.hyperparams["learning_rate"]) == pytest.approx(1e-3)
    assert int(injected_state.count) == 0  # no state that checkpoints leave out drifts


def test_checkpoints_keep_the_stored_layout_and_old_states_upgrade():
    # What a checkpoint written before the rate moved into the state holds ...
    old = make_optimizer(3e-4, 0.5).init(PARAMS)
    live = _State(PARAMS, make_injected_ppo_optimizer(3e-4, 0.5).init(PARAMS))
    # ... is exactly what one written now holds: the format is unchanged.
    saved = saved_layout(live)
    assert jax.tree.structure(saved.opt_state) == jax.tree.structure(old)
    # An old state, restored, takes the live layout and trains on as it would have.
    restored = live_layout(_State(PARAMS, old), live)
    assert jax.tree.structure(restored) == jax.tree.structure(live)
    x = jnp.asarray([0.5, 1.0, -1.5])
    a = gradient_step(_loss, make_optimizer(3e-4, 0.5), PARAMS, old, x, has_aux=False)
    injected = make_injected_ppo_optimizer(3e-4, 0.5)
    b = gradient_step(_loss, injected, PARAMS, restored.opt_state, x, has_aux=False)
    for u, v in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-6)
    # Shapes only (a module loaded for inference): zeros of the injected values.
    shapes = jax.tree.map(lambda y: jax.ShapeDtypeStruct(np.shape(y), y.dtype), live.opt_state)
    upgraded = upgrade_opt_state(old, shapes)
    assert float(upgraded.hyperparams["max_norm"]) == 0.0
    # A state that is not injected (DQN's, multi-agent PPO's) passes unchanged.
    assert upgrade_opt_state(old, old) is old
    assert saved_layout(_State(PARAMS, old)).opt_state is old


def test_schedules_as_arrays_give_the_schedules_values():
    schedule = ((0, 1.0), (100, 0.0), (300, 0.5))
    padded = schedule_points(schedule, 5)
    np.testing.assert_array_equal(padded.steps, [0, 100, 300, 301, 302])
    for steps in (0, 50, 100, 200, 300, 1000):
        expected = float(schedule_value(schedule, jnp.asarray(steps)))
        assert float(schedule_value(padded, jnp.asarray(steps))) == pytest.approx(expected)
    assert [float(schedule_value(schedule, jnp.asarray(s))) for s in (50, 200, 400)] == [
        0.5,
        0.25,
        0.5,
    ]
    # One setting of three trials: numbers become one-point schedules beside the others.
    stacked = stack_settings([schedule, 0.3, ((0, 2.0), (10, 1.0))], points=3)
    assert isinstance(stacked, SchedulePoints) and stacked.values.shape == (3, 3)
    at = jax.vmap(lambda s: schedule_value(s, jnp.asarray(5)))(stacked)
    np.testing.assert_allclose(at, [0.95, 0.3, 1.5], rtol=1e-6)
    np.testing.assert_array_equal(stack_settings([0.1, 0.2]), np.float32([0.1, 0.2]))
    with pytest.raises(ValueError, match="3 points does not fit in 2"):
        schedule_points(schedule, 2)
    now = settings_at({"lr": schedule_points(schedule), "grad_clip": None}, jnp.asarray(200))
    assert float(now["lr"]) == pytest.approx(0.25) and now["grad_clip"] is None


def test_shared_pieces_of_the_losses():
    mask = jnp.asarray([1.0, 0.0, 1.0])
    assert float(masked_mean(jnp.asarray([2.0, 100.0, 4.0]), mask)) == 3.0
    assert float(masked_mean(jnp.ones(3), jnp.zeros(3))) == 0.0
    coeffs = [
        float(adapt_kl_coeff(jnp.asarray(0.2), jnp.asarray(kl), 0.01)) for kl in (0.03, 0.004, 0.01)
    ]
    assert coeffs == pytest.approx([0.3, 0.1, 0.2])


def test_vtrace_batches_answer_the_batch_protocol():
    from rljax.algorithms.impala.learner import VTraceTrainBatch
    from rljax.algorithms.impala.losses import VTraceBatch

    mask = jnp.asarray([[1.0, 0.0]])
    vtrace = VTraceBatch(*(jnp.zeros((1, 2)) for _ in range(5)), mask=mask)
    batch = VTraceTrainBatch(
        obs=jnp.zeros((1, 2, 3)), vtrace=vtrace, bootstrap_value=jnp.zeros((1, 2))
    )
    assert batch.mask is mask
    assert batch._replace(obs=None).mask is mask
