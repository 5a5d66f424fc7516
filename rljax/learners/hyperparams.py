"""Static and dynamic hyper-parameters of every learner's update, and their optimizers.

Static settings (clip ranges, epoch counts, RMSProp's decay, target-network steps, ...) are
frozen into a record when the algorithm is built and closed over once. Dynamic ones, whose
value may change while a run trains, are one mapping ``{setting: value}`` the update reads in
one place, ``settings_at(dynamic, env_steps)``: PPO's and IMPALA's ``lr`` and
``entropy_coeff``, DQN's ``lr``, SAC's and TD3's ``actor_lr``, ``critic_lr`` (and SAC's
``alpha_lr``): RLlib's schedules, a population's values per trial. A value is a number, a schedule (a tuple of points), a
``SchedulePoints`` (a schedule as arrays: trials with different schedules then share one
program), or a traced scalar.

The optimizer is built once, with ``optax.inject_hyperparams``: its learning rate (and its
global-norm clip) live in the optimizer state, and the update writes the rate of the step
there (``with_hyperparams``) before the gradient step; nothing is rebuilt in the trace.

Checkpoints keep the optimizer state they always held (the wrapped optimizer's own, the
format written before the rate moved into the state): the injected values are recomputed by
every update, so ``saved_layout`` leaves them out when a state is saved and
``live_layout`` puts them back when one is restored. Both act on every field of a learner
state that holds an injected optimizer state (PPO's ``opt_state``; SAC's ``actor_opt``,
``critic_opt`` and ``alpha_opt``; ...). A checkpoint written before
``inject_hyperparams`` and one written since are the same tree and load the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

import jax
import jax.numpy as jnp
import numpy as np
import optax

from rljax.utils.schedules import Schedule, SchedulePoints, schedule_points, schedule_value

# The names ``inject_hyperparams`` gives the optimizer's changing settings in its state.
LEARNING_RATE = "learning_rate"
MAX_NORM = "max_norm"


def dynamic_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as an update reads them: a schedule (tuple) becomes ``SchedulePoints``
    (arrays the program reads); numbers, traced scalars and None stay as they are."""
    return {k: schedule_points(v) if _is_tuple_schedule(v) else v for k, v in values.items()}


def _is_tuple_schedule(value: Any) -> bool:
    return isinstance(value, tuple) and not isinstance(value, SchedulePoints)


def settings_at(dynamic: Mapping[str, Any], env_steps: Any) -> dict[str, Any]:
    """Each dynamic setting's value (float32) at ``env_steps`` (the env steps the learner
    state has trained on; None: 0), computed in the program; None stays None (a setting
    that is off)."""
    counted = env_steps if env_steps is not None else jnp.zeros((), jnp.int32)
    return {k: None if v is None else schedule_value(v, counted) for k, v in dynamic.items()}


def make_injected_optimizer(
    factory: Callable[..., optax.GradientTransformation],
    learning_rate: float | Schedule,
    grad_clip: float | None,
) -> optax.GradientTransformation:
    """``factory(learning_rate, max_norm)`` (or ``factory(learning_rate)`` when
    ``grad_clip`` is off: None or 0) built once, the rate and the clip in its state
    (``optax.inject_hyperparams``; its step count stays 0). The state starts at a
    schedule's first value; ``with_hyperparams`` sets each update's."""
    rate = learning_rate[0][1] if isinstance(learning_rate, list | tuple) else learning_rate
    if grad_clip is None or not grad_clip:
        injected = optax.inject_hyperparams(lambda learning_rate: factory(learning_rate, None))(
            learning_rate=float(rate)
        )
    else:
        injected = optax.inject_hyperparams(
            lambda learning_rate, max_norm: factory(learning_rate, max_norm)
        )(learning_rate=float(rate), max_norm=float(grad_clip))

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
        # The step count optax keeps for hyper-parameters given as functions of it stays 0:
        # the updates compute the values themselves, and a count would be state that
        # checkpoints (which leave the injected values out) cannot give back.
        updates, new_state = injected.update(updates, state, params, **extra)
        return updates, new_state._replace(count=state.count)  # type: ignore[union-attr]

    return optax.GradientTransformationExtraArgs(injected.init, update)


def _is_injected(opt_state: Any) -> TypeGuard[optax.InjectStatefulHyperparamsState]:
    return isinstance(opt_state, optax.InjectStatefulHyperparamsState)


def with_hyperparams(opt_state: Any, **values: Any) -> Any:
    """``opt_state`` of an injected optimizer with ``values`` (``learning_rate``,
    ``max_norm``; None: left as they are) for its next step. A state without injected
    settings is returned as it is."""
    if not _is_injected(opt_state):
        return opt_state
    hyperparams: dict[str, Any] = dict(opt_state.hyperparams)
    for name, value in values.items():
        if value is not None and name in hyperparams:
            hyperparams[name] = jnp.asarray(value, jnp.result_type(hyperparams[name]))
    return opt_state._replace(hyperparams=hyperparams)


def learning_rate_of(opt_state: Any) -> Any:
    """The learning rate an injected optimizer state holds (None: not injected)."""
    if not _is_injected(opt_state):
        return None
    return opt_state.hyperparams[LEARNING_RATE]


def _injected_fields(state: Any) -> list[str]:
    """The fields of ``state`` (a dataclass learner state) that hold an injected optimizer
    state; none for anything else."""
    if not dataclasses.is_dataclass(state) or isinstance(state, type):
        return []
    return [f.name for f in dataclasses.fields(state) if _is_injected(getattr(state, f.name))]


def saved_layout(state: Any) -> Any:
    """``state`` (a learner state: a dataclass with optimizer-state fields, ``opt_state`` or
    ``actor_opt``, ``critic_opt``, ...) as checkpoints store it: each injected optimizer's
    state without its injected settings, which the updates recompute."""
    fields = _injected_fields(state)
    if not fields:
        return state
    stripped = {name: getattr(state, name).inner_state for name in fields}
    return dataclasses.replace(state, **stripped)


def upgrade_opt_state(saved: Any, live: Any) -> Any:
    """A stored optimizer state ``saved`` (the layout every checkpoint holds: the wrapped
    optimizer's state) in the layout of the live one: wrapped in ``live``'s injected
    settings and step count (always 0; the next update overwrites the settings). ``saved`` unchanged
    when ``live`` is not injected. ``live`` may hold arrays or ``ShapeDtypeStruct``s."""
    if not _is_injected(live) or _is_injected(saved):
        return saved

    def concrete(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct):
            return np.zeros(x.shape, x.dtype)
        return np.asarray(x)

    return live._replace(
        count=concrete(live.count),
        hyperparams={k: concrete(v) for k, v in live.hyperparams.items()},
        hyperparams_states=jax.tree.map(concrete, live.hyperparams_states),
        inner_state=saved,
    )


def live_layout(saved_state: Any, live_state: Any) -> Any:
    """A restored learner state (``saved_layout``'s tree, as read from a checkpoint old or
    new) in the tree of ``live_state``, the algorithm's own: each field that holds an
    injected optimizer state in ``live_state`` wrapped back in its injected settings."""
    fields = _injected_fields(live_state)
    if not fields:
        return saved_state
    upgraded = {
        name: upgrade_opt_state(getattr(saved_state, name), getattr(live_state, name))
        for name in fields
    }
    return dataclasses.replace(saved_state, **upgraded)


__all__ = [
    "LEARNING_RATE",
    "MAX_NORM",
    "dynamic_settings",
    "learning_rate_of",
    "live_layout",
    "make_injected_optimizer",
    "saved_layout",
    "settings_at",
    "upgrade_opt_state",
    "with_hyperparams",
]
