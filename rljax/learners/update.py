"""The gradient step every learner takes, and the one place optimizers are built.

Every update in rljax (PPO's minibatch step, multi-agent PPO's stacked one, DQN's, and SAC's
critic, actor and temperature steps) is the same sequence: gradients of a loss, global-norm
clipping, Adam, the non-finite guard (``rljax.utils.nonfinite``), then the new parameters. The
clipping, Adam and the guard form the optimizer built by ``make_optimizer``; ``gradient_step``
runs the rest. ``make_target_update`` moves the target networks of the off-policy algorithms.

Example:
    ```python
    optimizer = make_optimizer(lr=3e-4, grad_clip=40.0)
    opt_state = optimizer.init(params)
    step = gradient_step(loss_fn, optimizer, params, opt_state, batch)
    params, opt_state = step.params, step.opt_state
    ```
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import optax

from rljax.utils.nonfinite import guard

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


#: RLlib's ``grad_clip_by``: what ``grad_clip`` bounds.
GRAD_CLIP_BY = ("global_norm", "norm", "value")


def clip_each_by_norm(max_norm: float | jax.Array) -> optax.GradientTransformation:
    """Each gradient array scaled down to a norm of at most ``max_norm`` on its own, as
    RLlib's ``grad_clip_by="norm"`` scales each parameter tensor's gradient: ``g * max_norm /
    ||g||`` where ``||g|| > max_norm``."""

    def update(updates: Any, state: Any, params: Any = None) -> Any:
        def one(g: jax.Array) -> jax.Array:
            norm = jnp.sqrt(jnp.sum(jnp.square(g)))
            scale = jnp.where(norm > max_norm, max_norm / jnp.maximum(norm, 1e-30), 1.0)
            return g * scale.astype(g.dtype)

        return jax.tree.map(one, updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


def clip_transform(grad_clip: float | jax.Array, clip_by: str) -> optax.GradientTransformation:
    """The clip of ``grad_clip_by``: ``"global_norm"`` (all gradients scaled together to a
    global norm of at most ``grad_clip``), ``"norm"`` (each array on its own:
    ``clip_each_by_norm``) or ``"value"`` (each element clipped to ``[-grad_clip,
    grad_clip]``)."""
    if clip_by == "global_norm":
        return optax.clip_by_global_norm(grad_clip)
    if clip_by == "norm":
        return clip_each_by_norm(grad_clip)
    if clip_by == "value":
        return optax.clip(grad_clip)
    raise ValueError(f"grad_clip_by={clip_by!r}; use one of {GRAD_CLIP_BY}")


def make_optimizer(
    lr: float | jax.Array,
    grad_clip: float | jax.Array | None = None,
    *,
    eps: float = 1e-8,
    flatten: bool = False,
    always_chain: bool = False,
    base: optax.GradientTransformation | None = None,
    clip_by: str = "global_norm",
) -> optax.GradientTransformation:
    """Adam after optional clipping, skipping steps with non-finite gradients.

    ``eps``, ``flatten`` and ``always_chain`` keep each algorithm's numerics and the tree of its
    optimizer state, which checkpoints store: PPO's Adam is flattened with ``eps=1e-5`` and is
    chained only behind a clip; the Adams of DQN's and SAC's networks are always chained (a
    one-element chain without a clip); SAC's temperature has a plain Adam.

    Args:
      lr: Adam's learning rate (a number, or a traced scalar: ``optax.inject_hyperparams``
        passes the one its state holds).
      grad_clip: The bound the gradients are clipped to before Adam (a number, or a traced
        scalar); None or 0: no clip.
      eps: Adam's epsilon.
      flatten: Run Adam on all parameters concatenated into one vector (``optax.flatten``): the
        same numbers, in fewer and larger ops.
      always_chain: Put Adam in an ``optax.chain`` even when there is no clip.
      base: The optimizer to use instead of Adam (``lr`` and ``eps`` then unused): IMPALA's
        RMSProp.
      clip_by: What ``grad_clip`` bounds (RLlib's ``grad_clip_by``, ``clip_transform``):
        ``"global_norm"``, ``"norm"`` (each array's; with ``flatten`` the gradients must not
        arrive as one flat vector, or it is the global norm) or ``"value"``.

    Returns:
      The optimizer, wrapped by ``rljax.utils.nonfinite.guard``.
    """
    adam = optax.adam(lr, eps=eps) if base is None else base
    if flatten:
        adam = optax.flatten(adam)
    # ``grad_clip`` may be a traced scalar (a population's value per trial): only a Python
    # None or 0 turns the clip off.
    clip = []
    if grad_clip is not None and not (isinstance(grad_clip, (int, float)) and grad_clip == 0):
        clip = [clip_transform(grad_clip, clip_by)]
    if clip or always_chain:
        return guard(optax.chain(*clip, adam))
    return guard(adam)


class GradientStep(NamedTuple):
    """What one gradient step gives.

    Attributes:
      params: The updated parameters (the old ones where the guard skipped the step).
      opt_state: The updated optimizer state.
      loss: The loss at the old parameters, a scalar.
      aux: The loss function's auxiliary output (None for a loss without one).
      grad_norm: The global norm of the gradients before clipping, a scalar.
    """

    params: Any
    opt_state: Any
    loss: jax.Array
    aux: Any
    grad_norm: jax.Array


def gradient_step(
    loss_fn: Callable[..., Any],
    optimizer: optax.GradientTransformation,
    params: Any,
    opt_state: Any,
    *args: Any,
    has_aux: bool = True,
    update_scale: Any = None,
) -> GradientStep:
    """One optimizer step on ``loss_fn(params, *args)``, differentiated in ``params`` only.

    Args:
      loss_fn: ``loss_fn(params, *args) -> (loss, aux)``, or ``-> loss`` with
        ``has_aux=False``; the loss is a scalar.
      optimizer: The optimizer (built by ``make_optimizer``).
      params: The parameters (any pytree).
      opt_state: ``optimizer``'s state for ``params``.
      *args: The loss's other inputs (batch, coefficients, keys); not differentiated.
      has_aux: Whether ``loss_fn`` returns ``(loss, aux)``.
      update_scale: A tree like ``params`` (or one number per leaf) multiplying the optimizer's
        updates: per-parameter learning rates relative to the optimizer's own (a learner's
        optimizers, ``rljax.algorithms.ppo.ppo_learner``); 0 leaves a parameter untrained.
        None: the updates as they are.

    Returns:
      A ``GradientStep`` of the new parameters and optimizer state, the loss, its aux output and
      the gradients' global norm.
    """
    if has_aux:
        (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, *args)
    else:
        loss, grads = jax.value_and_grad(loss_fn)(params, *args)
        aux = None
    updates, opt_state = optimizer.update(grads, opt_state, params)
    if update_scale is not None:  # per-parameter learning rates, relative to the optimizer's
        updates = jax.tree.map(lambda u, k: u * k, updates, update_scale)
    params = optax.apply_updates(params, updates)
    return GradientStep(params, opt_state, loss, aux, optax.global_norm(grads))


def flatten_params(params: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``params`` as one vector and the function that gives the tree back.

    The leaves are concatenated in tree order, as ``optax.flatten`` lays them out, so an
    optimizer built with ``make_optimizer(flatten=True)`` keeps the same state and gives the
    same numbers on the vector as on the tree: a gradient step then differentiates the loss
    in the vector (``loss_fn(unflatten(vector), ...)``) and its gradients, their global norm,
    the non-finite check and Adam are one array each, not one per leaf (on a CPU every op of a
    small network's step costs a dispatch). Leaves of mixed dtypes are not flattened:
    ``(params, identity)``.
    """
    leaves, treedef = jax.tree.flatten(params)
    if not leaves or len({leaf.dtype for leaf in leaves}) != 1:
        return params, lambda x: x
    shapes = [leaf.shape for leaf in leaves]
    sizes = [leaf.size for leaf in leaves]
    offsets = list(itertools.accumulate(sizes))[:-1]
    flat = jnp.concatenate([jnp.reshape(leaf, (-1,)) for leaf in leaves])

    def unflatten(vector: Any) -> Any:
        parts = jnp.split(vector, offsets)
        return jax.tree.unflatten(
            treedef, [jnp.reshape(x, shape) for x, shape in zip(parts, shapes, strict=True)]
        )

    return flat, unflatten


State = TypeVar("State", bound="DataclassInstance")


def make_target_update(tau: float, targets: Mapping[str, str]) -> Callable[[State], State]:
    """``update_target(state) -> state``: target networks moved ``tau`` of the way to the online.

    Args:
      tau: The step in (0, 1]: ``target = tau * online + (1 - tau) * target``; 1 copies.
      targets: ``{target field: online field}`` of the learner state (a
        ``flax.struct.dataclass``), e.g. ``{"target_params": "params"}``.
    """
    pairs = tuple(targets.items())

    def update_target(state: State) -> State:
        moved = {
            target: optax.incremental_update(getattr(state, online), getattr(state, target), tau)
            for target, online in pairs
        }
        return dataclasses.replace(state, **moved)

    return update_target


__all__ = [
    "GRAD_CLIP_BY",
    "GradientStep",
    "clip_each_by_norm",
    "clip_transform",
    "flatten_params",
    "gradient_step",
    "make_optimizer",
    "make_target_update",
]
