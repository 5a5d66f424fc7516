import math

import flax
import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rljax.learners.update import (
    flatten_params,
    gradient_step,
    make_optimizer,
    make_target_update,
)
from rljax.utils.nonfinite import count_non_finite

PARAMS = {"b": jnp.asarray(0.5), "w": jnp.array([1.0, -2.0])}


def _loss(params, scale):
    # sum(w^2) + b^2 times scale: at PARAMS with scale 1, 1 + 4 + .25 = 5.25; gradients
    # w: [2, -4], b: 1; global norm sqrt(4 + 16 + 1) = sqrt(21).
    loss = scale * (jnp.sum(params["w"] ** 2) + params["b"] ** 2)
    return loss, {"w_sum": jnp.sum(params["w"])}


@pytest.mark.parametrize("jit", [False, True])
def test_one_adam_step_hand_computed(jit):
    optimizer = make_optimizer(0.1)
    step_fn = lambda p, s, scale: gradient_step(_loss, optimizer, p, s, scale)  # noqa: E731
    step_fn = jax.jit(step_fn) if jit else step_fn
    step = step_fn(PARAMS, optimizer.init(PARAMS), jnp.float32(1.0))
    assert float(step.loss) == pytest.approx(5.25)
    assert float(step.aux["w_sum"]) == pytest.approx(-1.0)  # at the old parameters
    assert float(step.grad_norm) == pytest.approx(math.sqrt(21.0), rel=1e-6)
    # Adam's first step is lr * g / (|g| + eps): lr against the sign of each gradient.
    np.testing.assert_allclose(step.params["w"], [0.9, -1.9], rtol=1e-6)
    assert float(step.params["b"]) == pytest.approx(0.4, abs=1e-6)


def test_clipping_scales_the_gradients_adam_sees_but_not_the_reported_norm():
    optimizer = make_optimizer(0.1, grad_clip=1.0, always_chain=True)
    step = gradient_step(_loss, optimizer, PARAMS, optimizer.init(PARAMS), 1.0)
    assert float(step.grad_norm) == pytest.approx(math.sqrt(21.0), rel=1e-6)
    # Adam's first moment after one step is (1 - b1) g = .1 g, g clipped to norm 1.
    adam_state = step.opt_state.inner_state[1][0]
    np.testing.assert_allclose(adam_state.mu["w"], 0.1 * np.array([2.0, -4.0]) / math.sqrt(21))
    unclipped = make_optimizer(0.1, always_chain=True)
    step = gradient_step(_loss, unclipped, PARAMS, unclipped.init(PARAMS), 1.0)
    np.testing.assert_allclose(step.opt_state.inner_state[0][0].mu["w"], [0.2, -0.4])


@pytest.mark.parametrize(
    ("clip_by", "expected"),
    [
        # Gradients a = [3, 4] (norm 5), b = [0, 12] (norm 12); global norm 13; bound 6.
        ("global_norm", {"a": [3 * 6 / 13, 4 * 6 / 13], "b": [0.0, 12 * 6 / 13]}),
        # Each array on its own (RLlib's g * 6 / |g| where |g| > 6): a is within the bound, b
        # scaled to norm 6.
        ("norm", {"a": [3.0, 4.0], "b": [0.0, 6.0]}),
        # Each element to [-6, 6].
        ("value", {"a": [3.0, 4.0], "b": [0.0, 6.0]}),
    ],
)
def test_grad_clip_by_bounds_what_rllib_bounds(clip_by, expected):
    # Through plain SGD at rate 1 the update is minus the clipped gradients.
    grads = {"a": jnp.asarray([3.0, 4.0]), "b": jnp.asarray([0.0, 12.0])}
    optimizer = make_optimizer(1.0, 6.0, base=optax.sgd(1.0), clip_by=clip_by)
    updates, _ = optimizer.update(grads, optimizer.init(grads), grads)
    for name, want in expected.items():
        np.testing.assert_allclose(-updates[name], want, rtol=1e-6)
    with pytest.raises(ValueError, match="grad_clip_by='norms'"):
        make_optimizer(1.0, 6.0, clip_by="norms")


def test_eps_sets_the_step_of_tiny_gradients():
    # A gradient of 1e-5 against eps 1e-5: the step is lr * 1e-5 / (1e-5 + 1e-5) = lr / 2.
    loss = lambda w: 1e-5 * w  # noqa: E731
    for eps, expected in ((1e-5, 0.05), (1e-8, 0.1 / (1 + 1e-3))):
        optimizer = make_optimizer(0.1, eps=eps)
        w = jnp.asarray(1.0)
        step = gradient_step(loss, optimizer, w, optimizer.init(w), has_aux=False)
        assert 1.0 - float(step.params) == pytest.approx(expected, rel=1e-4)
        assert step.aux is None and float(step.loss) == pytest.approx(1e-5)


def test_flattened_adam_takes_the_same_step():
    flat = make_optimizer(0.1, grad_clip=1.0, flatten=True)
    tree = make_optimizer(0.1, grad_clip=1.0)
    a = gradient_step(_loss, flat, PARAMS, flat.init(PARAMS), 1.0)
    b = gradient_step(_loss, tree, PARAMS, tree.init(PARAMS), 1.0)
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-6)
    # One vector of the 3 parameters' moments instead of a tree of them.
    assert a.opt_state.inner_state[1][0].mu.shape == (3,)


def test_flatten_params_lays_the_leaves_out_as_optax_flatten_does():
    params = {"b": jnp.asarray(0.5), "w": jnp.array([[1.0, -2.0], [3.0, 4.0]])}
    vector, unflatten = flatten_params(params)
    # Tree order: "b" before "w", each leaf row-major.
    np.testing.assert_array_equal(vector, [0.5, 1.0, -2.0, 3.0, 4.0])
    back = unflatten(vector * 2)
    np.testing.assert_array_equal(back["w"], [[2.0, -4.0], [6.0, 8.0]])
    assert float(back["b"]) == 1.0 and back["b"].shape == ()
    # Mixed dtypes stay a tree.
    mixed = {"a": jnp.zeros((2,)), "n": jnp.zeros((2,), jnp.int32)}
    same, identity = flatten_params(mixed)
    assert same is mixed and identity(same) is mixed


def test_a_step_on_the_flattened_vector_is_the_step_on_the_tree():
    # The flattened optimizer's state is the same for the vector as for the tree, and the
    # loss differentiated in the vector gives the tree's gradients: the same step (with the
    # clip on: norm sqrt(21) > 1, so the clip and the reported norm are both exercised).
    optimizer = make_optimizer(0.1, grad_clip=1.0, flatten=True)
    state = optimizer.init(PARAMS)
    vector, unflatten = flatten_params(PARAMS)
    on_vector = gradient_step(
        lambda v, scale: _loss(unflatten(v), scale), optimizer, vector, state, 1.0
    )
    on_tree = gradient_step(_loss, optimizer, PARAMS, state, 1.0)
    assert jax.tree.structure(on_vector.opt_state) == jax.tree.structure(on_tree.opt_state)
    leaves = zip(
        jax.tree.leaves(on_vector.opt_state), jax.tree.leaves(on_tree.opt_state), strict=True
    )
    for x, y in leaves:
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(unflatten(on_vector.params)["w"], on_tree.params["w"])
    np.testing.assert_array_equal(unflatten(on_vector.params)["b"], on_tree.params["b"])
    assert float(on_vector.grad_norm) == pytest.approx(math.sqrt(21.0), rel=1e-6)
    # Adam's first step moves each parameter lr against its gradient's sign: b 0.5 -> 0.4.
    assert float(unflatten(on_vector.params)["b"]) == pytest.approx(0.4, abs=1e-6)


def test_a_non_finite_gradient_is_skipped_and_counted():
    optimizer = make_optimizer(0.1, grad_clip=1.0, always_chain=True)
    state = optimizer.init(PARAMS)
    step = gradient_step(_loss, optimizer, PARAMS, state, jnp.float32(jnp.nan))
    for x, y in zip(jax.tree.leaves(step.params), jax.tree.leaves(PARAMS), strict=True):
        np.testing.assert_array_equal(x, y)
    assert count_non_finite(step.opt_state) == 1
    # The moments stay as they were: the next finite step is Adam's first.
    step = gradient_step(_loss, optimizer, step.params, step.opt_state, 1.0)
    np.testing.assert_allclose(step.params["w"], [0.9, -1.9], rtol=1e-6)
    assert count_non_finite(step.opt_state) == 1


@flax.struct.dataclass
class _TwoTargets:
    actor: jax.Array
    critic: jax.Array
    target_actor: jax.Array
    target_critic: jax.Array


def test_target_update_moves_each_target_tau_of_the_way():
    state = _TwoTargets(jnp.asarray(4.0), jnp.array([2.0, -2.0]), jnp.asarray(0.0), jnp.zeros(2))
    update = jax.jit(make_target_update(0.25, {"target_actor": "actor", "target_critic": "critic"}))
    moved = update(state)
    # .25 * online + .75 * target, the online fields untouched.
    assert float(moved.target_actor) == 1.0
    np.testing.assert_allclose(moved.target_critic, [0.5, -0.5])
    assert float(moved.actor) == 4.0
    np.testing.assert_array_equal(moved.critic, [2.0, -2.0])
    copied = make_target_update(1.0, {"target_critic": "critic"})(state)
    np.testing.assert_array_equal(copied.target_critic, [2.0, -2.0])
    assert float(copied.target_actor) == 0.0  # not named: left alone


def _paths(optimizer, params):
    state_dict = flax.serialization.to_state_dict(optimizer.init(params))
    return sorted(
        jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(state_dict)[0]
    )


GUARD = ["['last_finite']", "['notfinite_count']", "['total_notfinite']"]


@pytest.mark.parametrize(
    "kwargs, adam_at",
    [
        # PPO: flattened Adam, chained only behind a clip.
        ({"grad_clip": None, "eps": 1e-5, "flatten": True}, "['inner_state']['0']"),
        ({"grad_clip": 0.5, "eps": 1e-5, "flatten": True}, "['inner_state']['1']['0']"),
        # DQN's and SAC's networks: always chained.
        ({"grad_clip": None, "always_chain": True}, "['inner_state']['0']['0']"),
        ({"grad_clip": 40.0, "always_chain": True}, "['inner_state']['1']['0']"),
        # SAC's temperature: plain Adam.
        ({}, "['inner_state']['0']"),
    ],
)
def test_optimizer_state_trees_are_the_checkpoints(kwargs, adam_at):
    """Checkpoints store these trees; their keys must not change."""
    flatten = kwargs.get("flatten", False)
    moments = (
        ["['mu']", "['nu']"]
        if flatten
        else ["['mu']['b']", "['mu']['w']", "['nu']['b']", "['nu']['w']"]
    )
    expected = sorted([adam_at + "['count']", *(adam_at + m for m in moments), *GUARD])
    assert _paths(make_optimizer(1e-3, **kwargs), PARAMS) == expected
