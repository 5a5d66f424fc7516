"""TD3's learner: its state, its frozen settings, and the jitted learn and target steps.

``make_td3_learn`` and ``make_td3_target_update`` close over the networks, the optimizers and a
``TD3Hyperparams`` record read from the config once, at build time; the functions they return
are pure: ``state, td_errors, metrics = learn(state, batch, weights, key)``.

Each learn step updates the critics; every ``policy_delay``-th one also updates the actor
(``lax.cond`` on the state's update counter, so the skipped actor step costs nothing). The
target networks move, by ``tau``, on those same steps, as in the TD3 paper and
Stable-Baselines3.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from rljax.algorithms.td3.losses import (
    actor_loss,
    clipped_double_q_target,
    critic_loss,
    smoothed_target_action,
)
from rljax.utils.jit import run_once
from rljax.utils.nonfinite import guard

TD3_METRICS = ("qf_loss", "policy_loss", "qf_mean", "qf_max", "qf_min", "td_error_mean")


class TD3LearnerState(NamedTuple):
    """Everything TD3's learn step changes.

    Attributes:
      actor, critic: The online networks' parameters (the critic's leaves are stacked [N, ...]).
      target_actor, target_critic: Their target copies.
      actor_opt, critic_opt: The optimizers' states.
      step: int32, critic updates so far; the actor and the targets move when it is a multiple
        of ``policy_delay``.
      policy_loss: float32, the actor loss of the latest actor update (reported every update).
    """

    actor: Any
    critic: Any
    target_actor: Any
    target_critic: Any
    actor_opt: Any
    critic_opt: Any
    step: jax.Array
    policy_loss: jax.Array


@dataclasses.dataclass(frozen=True)
class TD3Hyperparams:
    """TD3's settings, frozen from the config by ``build_algo()``."""

    tau: float
    policy_delay: int
    target_noise: float  # 0 without smooth_target_policy
    target_noise_clip: float
    exploration_noise: float
    learning_starts: int

    @classmethod
    def from_config(cls, cfg: Any) -> TD3Hyperparams:
        """TD3's settings read from a ``TD3Config`` once."""
        return cls(
            tau=float(cfg.tau),
            policy_delay=int(cfg.policy_delay),
            target_noise=float(cfg.target_noise) if cfg.smooth_target_policy else 0.0,
            target_noise_clip=float(cfg.target_noise_clip),
            exploration_noise=float(cfg.exploration_noise),
            learning_starts=int(cfg.num_steps_sampled_before_learning_starts),
        )


def make_optimizer(lr: float, grad_clip: float | None) -> optax.GradientTransformation:
    """Adam after optional global-norm clipping, skipping non-finite steps."""
    clip = [optax.clip_by_global_norm(grad_clip)] if grad_clip else []
    return guard(optax.chain(*clip, optax.adam(lr)))


def gradient_step(
    loss_fn: Callable[..., tuple[jax.Array, Any]],
    params: Any,
    opt_state: Any,
    optimizer: optax.GradientTransformation,
) -> tuple[Any, Any, jax.Array, Any]:
    """One step down ``loss_fn(params) -> (loss, aux)``: ``(params, opt_state, loss, aux)``.

    TD3's only gradient step, kept in one place so that it can become the shared one
    (gradient -> clip -> optimizer -> non-finite guard -> apply); clipping and the guard are in
    ``optimizer`` (``make_optimizer``).
    """
    (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss, aux


def init_td3_state(
    actor: nn.Module,
    critic: nn.Module,
    actor_opt: optax.GradientTransformation,
    critic_opt: optax.GradientTransformation,
    key: jax.Array,
    obs: jax.Array,
    action: jax.Array,
) -> TD3LearnerState:
    """Fresh networks, targets equal to them, and fresh optimizer states.

    Args:
      obs, action: Example inputs, [1, *obs_shape] and [1, A].
    """
    k_actor, k_critic = jax.random.split(key)
    actor_params = run_once(actor.init, k_actor, obs)
    critic_params = run_once(critic.init, k_critic, obs, action)
    return TD3LearnerState(
        actor=actor_params,
        critic=critic_params,
        target_actor=jax.tree.map(jnp.copy, actor_params),
        target_critic=jax.tree.map(jnp.copy, critic_params),
        actor_opt=run_once(actor_opt.init, actor_params),
        critic_opt=run_once(critic_opt.init, critic_params),
        step=jnp.zeros((), jnp.int32),
        policy_loss=jnp.zeros((), jnp.float32),
    )


def make_td3_learn(
    actor: nn.Module,
    critic: nn.Module,
    actor_opt: optax.GradientTransformation,
    critic_opt: optax.GradientTransformation,
    hp: TD3Hyperparams,
) -> Callable[..., tuple[TD3LearnerState, jax.Array, dict[str, jax.Array]]]:
    """``learn(state, batch, weights, key) -> (state, td_errors [B], metrics)``.

    ``batch`` holds ``obs`` [B, *obs_shape], ``action`` [B, A] (in [-1, 1]), ``reward``,
    ``discount`` [B] and ``next_obs``; ``weights`` [B] are importance weights (ones for uniform
    replay). ``critic`` is a ``TwinCritic``: ``apply(params, obs, action) -> [N, B]``.
    """
    # The actor loss needs only the first critic: its slice of the stacked parameters.
    first_critic = critic.clone(num_critics=1)

    def learn(state: TD3LearnerState, batch: dict, weights: jax.Array, key: jax.Array):
        obs, action = batch["obs"], batch["action"]
        next_action = smoothed_target_action(
            key,
            actor.apply(state.target_actor, batch["next_obs"]),
            hp.target_noise,
            hp.target_noise_clip,
        )
        next_q = critic.apply(state.target_critic, batch["next_obs"], next_action)
        target = clipped_double_q_target(batch["reward"], batch["discount"], next_q)

        def q_loss_fn(params):
            q = critic.apply(params, obs, action)
            loss, td = critic_loss(q, target, weights)
            return loss, (td, q[0])

        critic_params, critic_opt_state, q_loss, (td, q1) = gradient_step(
            q_loss_fn, state.critic, state.critic_opt, critic_opt
        )
        step = state.step + 1

        def update_actor(_):
            q1_params = jax.tree.map(lambda p: p[:1], critic_params)

            def pi_loss_fn(params):
                return actor_loss(
                    first_critic.apply(q1_params, obs, actor.apply(params, obs))[0]
                ), None

            params, opt_state, loss, _ = gradient_step(
                pi_loss_fn, state.actor, state.actor_opt, actor_opt
            )
            return params, opt_state, loss

        def keep_actor(_):
            return state.actor, state.actor_opt, state.policy_loss

        actor_params, actor_opt_state, pi_loss = jax.lax.cond(
            step % hp.policy_delay == 0, update_actor, keep_actor, None
        )
        new_state = state._replace(
            actor=actor_params,
            critic=critic_params,
            actor_opt=actor_opt_state,
            critic_opt=critic_opt_state,
            step=step,
            policy_loss=pi_loss,
        )
        metrics = {
            "qf_loss": q_loss,
            "policy_loss": pi_loss,
            "qf_mean": jnp.mean(q1),
            "qf_max": jnp.max(q1),
            "qf_min": jnp.min(q1),
            "td_error_mean": jnp.mean(td),
        }
        return new_state, td, metrics

    return learn


def make_td3_target_update(hp: TD3Hyperparams) -> Callable[[TD3LearnerState], TD3LearnerState]:
    """``update(state) -> state``: both targets move by ``tau`` if the last step moved the actor.

    Called after every learn step (``target_network_update_freq=0``), so the targets follow the
    actor's ``policy_delay``.
    """

    def polyak(state: TD3LearnerState) -> TD3LearnerState:
        return state._replace(
            target_actor=optax.incremental_update(state.actor, state.target_actor, hp.tau),
            target_critic=optax.incremental_update(state.critic, state.target_critic, hp.tau),
        )

    def update(state: TD3LearnerState) -> TD3LearnerState:
        return jax.lax.cond(state.step % hp.policy_delay == 0, polyak, lambda s: s, state)

    return update


__all__ = [
    "TD3_METRICS",
    "TD3Hyperparams",
    "TD3LearnerState",
    "gradient_step",
    "init_td3_state",
    "make_optimizer",
    "make_td3_learn",
    "make_td3_target_update",
]
