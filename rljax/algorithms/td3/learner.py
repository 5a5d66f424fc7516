"""TD3's learner: its state, its frozen settings, and the learn and target steps built from them.

``learn = make_td3_learn(networks, optimizers, hp)`` is a pure function
``learn(state, batch, weights, key) -> (state, td_errors, metrics)``: a gradient step of the
critics on the clipped double-Q target with target policy smoothing, and on every
``policy_delay``-th call a gradient step of the actor on ``-Q1(s, pi(s))`` against the updated
critics (``lax.cond`` on the state's update counter, so a skipped actor step costs nothing).
Each step is ``rljax.learners.update.gradient_step`` on the losses of
``rljax.algorithms.td3.losses``. ``make_td3_target_update`` moves both target networks by
``tau`` on those same delayed steps, as the TD3 paper and Stable-Baselines3 do.

The two optimizers are built once (``make_td3_optimizers``: ``optax.inject_hyperparams``, each
rate in its optimizer's state); the rates are TD3's dynamic settings (``actor_lr``,
``critic_lr``: numbers or RLlib's schedules), evaluated once per step at the env steps sampled
and written into the optimizer states (``rljax.learners.hyperparams``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from rljax.algorithms.settings import frozen_from_config
from rljax.algorithms.td3.losses import (
    actor_loss,
    clipped_double_q_target,
    critic_loss,
    smoothed_target_action,
)
from rljax.learners.hyperparams import (
    dynamic_settings,
    make_injected_optimizer,
    settings_at,
    with_hyperparams,
)
from rljax.learners.update import gradient_step, make_optimizer, make_target_update
from rljax.utils.jit import run_once
from rljax.utils.schedules import Schedule

TD3_METRICS = (
    "qf_learning_rate",
    "policy_learning_rate",
    "qf_loss",
    "policy_loss",
    "qf_mean",
    "qf_max",
    "qf_min",
    "td_error_mean",
)


@flax.struct.dataclass
class TD3LearnerState:
    """Everything TD3's update changes; the field names are the checkpoint's keys.

    Attributes:
      actor, critic: The online networks' parameters (the critic's leaves stacked [C, ...]).
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
    """TD3's settings, frozen from the config when the algorithm is built."""

    tau: float
    policy_delay: int
    target_noise: float  # 0 without smooth_target_policy
    target_noise_clip: float
    exploration_noise: float
    learning_starts: int
    actor_lr: float | Schedule
    critic_lr: float | Schedule
    grad_clip: float | None
    grad_clip_by: str = "global_norm"

    @classmethod
    def from_config(cls, cfg: Any) -> TD3Hyperparams:
        """TD3's settings read from a ``TD3Config`` once, at build time."""
        return frozen_from_config(
            cls,
            cfg,
            target_noise=float(cfg.target_noise) if cfg.smooth_target_policy else 0.0,
            actor_lr=cfg.actor_lr,  # numbers or schedules
            critic_lr=cfg.critic_lr,
            learning_starts=int(cfg.num_steps_sampled_before_learning_starts),
        )


class TD3Networks(NamedTuple):
    """The actor and the critics.

    Attributes:
      actor: ``actor.apply(params, obs [B, O]) -> actions [B, A]`` in [-1, 1].
      critic: A ``TwinCritic``: ``critic.apply(params, obs [B, O], action [B, A]) -> Q [C, B]``
        for C critics (2 with ``twin_q``).
    """

    actor: nn.Module
    critic: nn.Module


class TD3Optimizers(NamedTuple):
    """One optimizer per network."""

    actor: optax.GradientTransformation
    critic: optax.GradientTransformation


# RLlib's names of TD3's optimizers' rates (its metrics) -> TD3's dynamic settings.
TD3_RATES = {"qf_learning_rate": "critic_lr", "policy_learning_rate": "actor_lr"}


def make_td3_optimizers(hp: TD3Hyperparams) -> TD3Optimizers:
    """Adam for the actor and the critics, clipped by ``grad_clip``, each built once with its
    rate (and clip) in its state (``optax.inject_hyperparams``), starting at the rate's first
    value; every step writes the rates of its env steps there. The states without the
    injected values are the ones checkpoints have always stored."""
    clipped = functools.partial(make_optimizer, clip_by=hp.grad_clip_by)
    return TD3Optimizers(
        actor=make_injected_optimizer(clipped, hp.actor_lr, hp.grad_clip),
        critic=make_injected_optimizer(clipped, hp.critic_lr, hp.grad_clip),
    )


def td3_dynamic_settings(hp: TD3Hyperparams) -> dict[str, Any]:
    """TD3's dynamic settings, ``{actor_lr, critic_lr}``, as the update reads them
    (``rljax.learners.hyperparams.dynamic_settings``: schedules as ``SchedulePoints``)."""
    return dynamic_settings({"actor_lr": hp.actor_lr, "critic_lr": hp.critic_lr})


def init_td3_state(
    networks: TD3Networks,
    optimizers: TD3Optimizers,
    key: jax.Array,
    obs: jax.Array,
    action: jax.Array,
) -> TD3LearnerState:
    """Fresh networks, targets equal to them, and fresh optimizer states.

    Args:
      obs, action: Example inputs, [1, *obs_shape] and [1, A].
    """
    k_actor, k_critic = jax.random.split(key)
    actor_params = run_once(networks.actor.init, k_actor, obs)
    critic_params = run_once(networks.critic.init, k_critic, obs, action)
    return TD3LearnerState(
        actor=actor_params,
        critic=critic_params,
        target_actor=jax.tree.map(jnp.copy, actor_params),
        target_critic=jax.tree.map(jnp.copy, critic_params),
        actor_opt=run_once(optimizers.actor.init, actor_params),
        critic_opt=run_once(optimizers.critic.init, critic_params),
        step=jnp.zeros((), jnp.int32),
        policy_loss=jnp.zeros((), jnp.float32),
    )


def make_td3_learn(
    networks: TD3Networks,
    optimizers: TD3Optimizers,
    hp: TD3Hyperparams,
    dynamic: Mapping[str, Any] | None = None,
) -> Callable[
    ...,
    tuple[TD3LearnerState, jax.Array, dict[str, jax.Array]],
]:
    """``learn(state, batch, weights [B], key) -> (state, td_errors [B], metrics)``.

    ``batch`` holds ``obs`` [B, O], ``action`` [B, A] (in [-1, 1]), ``reward`` [B] (n-step
    returns), ``discount`` [B] and ``next_obs`` [B, O]; ``weights`` are importance weights. The
    metrics are ``TD3_METRICS``, scalars.

    ``optimizers`` are built once (``make_td3_optimizers``). ``dynamic`` holds the rates
    (``actor_lr``, ``critic_lr``; default ``td3_dynamic_settings(hp)``), each a number,
    ``SchedulePoints`` or traced scalar, evaluated once per step at ``timestep`` (the env
    steps sampled; None: 0), written into the injected optimizer states and reported under
    RLlib's names (``TD3_RATES``).
    """
    actor, critic = networks
    dynamic = td3_dynamic_settings(hp) if dynamic is None else dynamic_settings(dynamic)
    # The actor loss needs only the first critic: its slice of the stacked parameters.
    first_critic = critic.clone(num_critics=1)

    def q_loss_fn(critic_params, obs, action, target, weights):
        q = critic.apply(critic_params, obs, action)
        loss, td = critic_loss(q, target, weights)
        return loss, (td, q[0])

    def pi_loss_fn(actor_params, q1_params, obs):
        return actor_loss(first_critic.apply(q1_params, obs, actor.apply(actor_params, obs))[0])

    def learn(
        state: TD3LearnerState,
        batch: dict[str, jax.Array],
        weights: jax.Array,
        key: jax.Array,
        timestep: jax.Array | None = None,
    ):
        # The dynamic settings at the env steps sampled so far, evaluated once per step.
        now = settings_at(dynamic, timestep)
        rates = {metric: now[name] for metric, name in TD3_RATES.items()}
        critic_opt = with_hyperparams(state.critic_opt, learning_rate=now["critic_lr"])
        actor_opt = with_hyperparams(state.actor_opt, learning_rate=now["actor_lr"])
        obs, next_obs = batch["obs"], batch["next_obs"]
        next_action = smoothed_target_action(
            key, actor.apply(state.target_actor, next_obs), hp.target_noise, hp.target_noise_clip
        )
        next_q = critic.apply(state.target_critic, next_obs, next_action)
        target = clipped_double_q_target(batch["reward"], batch["discount"], next_q)
        q_step = gradient_step(
            q_loss_fn,
            optimizers.critic,
            state.critic,
            critic_opt,
            obs,
            batch["action"],
            target,
            weights,
        )
        td, q1 = q_step.aux
        step = state.step + 1

        # Actor, every policy_delay critic steps: scored by the updated first critic.
        def update_actor(_):
            q1_params = jax.tree.map(lambda p: p[:1], q_step.params)
            pi_step = gradient_step(
                pi_loss_fn,
                optimizers.actor,
                state.actor,
                actor_opt,
                q1_params,
                obs,
                has_aux=False,
            )
            return pi_step.params, pi_step.opt_state, pi_step.loss

        def keep_actor(_):
            return state.actor, actor_opt, state.policy_loss

        actor_params, actor_opt, pi_loss = jax.lax.cond(
            step % hp.policy_delay == 0, update_actor, keep_actor, None
        )
        metrics = {
            **rates,
            "qf_loss": q_step.loss,
            "policy_loss": pi_loss,
            "qf_mean": jnp.mean(q1),
            "qf_max": jnp.max(q1),
            "qf_min": jnp.min(q1),
            "td_error_mean": jnp.mean(td),
        }
        state = dataclasses.replace(
            state,
            actor=actor_params,
            critic=q_step.params,
            actor_opt=actor_opt,
            critic_opt=q_step.opt_state,
            step=step,
            policy_loss=pi_loss,
        )
        return state, td, metrics

    return learn


def make_td3_target_update(hp: TD3Hyperparams) -> Callable[[TD3LearnerState], TD3LearnerState]:
    """``update(state) -> state``: both targets move by ``tau`` if the last step moved the actor.

    The off-policy loop calls it after every learn step (``target_network_update_freq=0``), so
    the targets follow the actor's ``policy_delay``.
    """
    polyak = make_target_update(hp.tau, {"target_actor": "actor", "target_critic": "critic"})

    def update(state: TD3LearnerState) -> TD3LearnerState:
        return jax.lax.cond(state.step % hp.policy_delay == 0, polyak, lambda s: s, state)

    return update


__all__ = [
    "TD3_METRICS",
    "TD3_RATES",
    "TD3Hyperparams",
    "TD3LearnerState",
    "TD3Networks",
    "TD3Optimizers",
    "init_td3_state",
    "make_td3_learn",
    "make_td3_optimizers",
    "make_td3_target_update",
    "td3_dynamic_settings",
]
