"""SAC's learner: its state, its frozen settings, and the learn step built from them.

``learn = make_sac_learn(networks, optimizers, hp)`` is a pure function
``learn(state, batch, weights, key) -> (state, td_errors, metrics)``: a gradient step of the
critics, then of the actor against the updated critics, then of the temperature, each with
``rljax.learners.update.gradient_step`` on the losses of ``rljax.algorithms.sac.losses``.
The target critics follow ``critic`` by ``rljax.learners.update.make_target_update``.

The three optimizers are built once (``make_sac_optimizers``: ``optax.inject_hyperparams``,
each rate in its optimizer's state); the rates are SAC's dynamic settings (``actor_lr``,
``critic_lr``, ``alpha_lr``: numbers or RLlib's schedules), evaluated once per step at the env
steps sampled and written into the optimizer states (``rljax.learners.hyperparams``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, cast

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from rljax.algorithms.sac.losses import (
    actor_loss,
    auto_target_entropy,
    critic_loss,
    discrete_actor_loss,
    temperature_loss,
)
from rljax.algorithms.settings import frozen_from_config
from rljax.learners.hyperparams import (
    dynamic_settings,
    make_injected_optimizer,
    settings_at,
    with_hyperparams,
)
from rljax.learners.update import gradient_step, make_optimizer
from rljax.networks.distributions import Categorical, SquashedDiagGaussian
from rljax.utils.schedules import Schedule

SAC_METRICS = (
    "qf_learning_rate",
    "policy_learning_rate",
    "alpha_learning_rate",
    "qf_loss",
    "policy_loss",
    "alpha_loss",
    "alpha_value",
    "log_alpha_value",
    "qf_mean",
    "qf_max",
    "qf_min",
    "td_error_mean",
    "entropy",
)


@flax.struct.dataclass
class SACLearnerState:
    """Everything SAC's update changes; the field names are the checkpoint's keys.

    Attributes:
      actor: The actor's parameters.
      critic: The critics' parameters (stacked twins).
      target_critic: The target critics' parameters.
      log_alpha: The log temperature, a float32 scalar.
      actor_opt: The actor optimizer's state.
      critic_opt: The critic optimizer's state.
      alpha_opt: The temperature optimizer's state.
    """

    actor: Any
    critic: Any
    target_critic: Any
    log_alpha: jax.Array
    actor_opt: Any
    critic_opt: Any
    alpha_opt: Any


@dataclasses.dataclass(frozen=True)
class SACHyperparams:
    """SAC's settings, frozen from the config when the algorithm is built."""

    target_entropy: float
    tau: float
    initial_alpha: float
    actor_lr: float | Schedule
    critic_lr: float | Schedule
    alpha_lr: float | Schedule
    grad_clip: float | None
    grad_clip_by: str = "global_norm"

    @classmethod
    def from_config(cls, cfg: Any, action_dim: int) -> SACHyperparams:
        """SAC's settings read from a ``SACConfig`` once, at build time."""
        target_entropy = (
            auto_target_entropy(action_dim)
            if cfg.target_entropy == "auto"
            else float(cfg.target_entropy)
        )
        return frozen_from_config(
            cls,
            cfg,
            target_entropy=target_entropy,
            # Numbers or schedules (their values are computed in the update).
            actor_lr=cfg.actor_lr,
            critic_lr=cfg.critic_lr,
            alpha_lr=cfg.alpha_lr,
        )


class SACNetworks(NamedTuple):
    """The actor, the critics and the actor's action distribution.

    Attributes:
      actor: ``actor.apply(params, obs [B, O]) -> distribution inputs [B, 2 * action_dim]``
        (discrete actions: logits [B, num_actions]).
      critic: ``critic.apply(params, obs [B, O], action [B, action_dim]) -> Q [C, B]`` for C
        critics (2 with ``twin_q``); discrete actions: ``critic.apply(params, obs) -> Q [C, B,
        num_actions]``.
      dist: The squashed Gaussian the actor's outputs parameterise, or a ``Categorical``
        (SAC-Discrete, Christodoulou 2019, as RLlib's: expectations over the actions replace
        the sampled ones in the critics' target, the actor's and the temperature's losses).
    """

    actor: nn.Module
    critic: nn.Module
    dist: SquashedDiagGaussian | Categorical


class SACOptimizers(NamedTuple):
    """One optimizer per trained part."""

    actor: optax.GradientTransformation
    critic: optax.GradientTransformation
    alpha: optax.GradientTransformation


# RLlib's names of SAC's optimizers' rates (its metrics) -> SAC's dynamic settings.
SAC_RATES = {
    "qf_learning_rate": "critic_lr",
    "policy_learning_rate": "actor_lr",
    "alpha_learning_rate": "alpha_lr",
}


def _chained_adam(rate: Any, max_norm: Any, clip_by: str) -> optax.GradientTransformation:
    return make_optimizer(rate, max_norm, always_chain=True, clip_by=clip_by)


def _plain_adam(rate: Any, max_norm: Any) -> optax.GradientTransformation:
    return make_optimizer(rate)


def make_sac_optimizers(hp: SACHyperparams) -> SACOptimizers:
    """Adam for the actor and the critics (clipped by ``grad_clip``), plain Adam for the
    temperature, each built once with its rate (and clip) in its state
    (``optax.inject_hyperparams``), starting at the rate's first value; every step writes
    the rates of its env steps there. The states without the injected values are the ones
    checkpoints have always stored."""
    chained = functools.partial(_chained_adam, clip_by=hp.grad_clip_by)
    return SACOptimizers(
        actor=make_injected_optimizer(chained, hp.actor_lr, hp.grad_clip),
        critic=make_injected_optimizer(chained, hp.critic_lr, hp.grad_clip),
        alpha=make_injected_optimizer(_plain_adam, hp.alpha_lr, None),
    )


def sac_dynamic_settings(hp: SACHyperparams) -> dict[str, Any]:
    """SAC's dynamic settings, ``{actor_lr, critic_lr, alpha_lr}``, as the update reads them
    (``rljax.learners.hyperparams.dynamic_settings``: schedules as ``SchedulePoints``)."""
    return dynamic_settings(
        {"actor_lr": hp.actor_lr, "critic_lr": hp.critic_lr, "alpha_lr": hp.alpha_lr}
    )


CriticPenalty = Callable[..., tuple[jax.Array, dict[str, jax.Array]]]
"""``penalty(q_fn, sample_fn, batch, q_taken [C, B], key) -> (term, metrics)``: a term added to
the critics' loss, with ``q_fn(obs, action) -> [C, B]`` (the critics being trained) and
``sample_fn(obs, key) -> (action, log_prob)`` (the current policy, not trained by the term)."""


def make_sac_learn(
    networks: SACNetworks,
    optimizers: SACOptimizers,
    hp: SACHyperparams,
    dynamic: Mapping[str, Any] | None = None,
    *,
    critic_penalty: CriticPenalty | None = None,
    bc_steps: int = 0,
    backup_entropy: bool = True,
) -> Callable[
    ...,
    tuple[SACLearnerState, jax.Array, dict[str, jax.Array]],
]:
    """``learn(state, batch, weights [B], key) -> (state, td_errors [B], metrics)``.

    CQL's changes (``rljax.algorithms.cql``): ``critic_penalty`` adds a term to the critics'
    loss (and its metrics); with ``timestep < bc_steps`` the actor learns the batch's actions
    (``alpha * log pi(a~|s) - log pi(a|s)``) instead of the critics' values; without
    ``backup_entropy`` the soft target leaves out ``- alpha * log pi(a'|s')``.

    ``batch`` holds ``obs`` [B, O], ``action`` [B, action_dim], ``reward`` [B] (n-step returns),
    ``discount`` [B] and ``next_obs`` [B, O]; ``weights`` are importance weights. The metrics
    are ``SAC_METRICS``, scalars.

    ``optimizers`` are built once (``make_sac_optimizers``). ``dynamic`` holds the rates
    (``actor_lr``, ``critic_lr``, ``alpha_lr``; default ``sac_dynamic_settings(hp)``), each a
    number, ``SchedulePoints`` or traced scalar, evaluated once per step at ``timestep`` (the
    env steps sampled; None: 0), written into the injected optimizer states and reported
    under RLlib's names (``SAC_RATES``).
    """
    actor, critic, dist = networks
    dynamic = sac_dynamic_settings(hp) if dynamic is None else dynamic_settings(dynamic)

    # Module.apply's declared return includes the (output, variables) pair that it returns only
    # when given ``mutable``; without it, the output alone.
    def policy_inputs(actor_params: Any, obs: jax.Array) -> jax.Array:
        return cast(jax.Array, actor.apply(actor_params, obs))

    def q_values(critic_params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        return cast(jax.Array, critic.apply(critic_params, obs, action))

    discrete = isinstance(dist, Categorical)

    def q_per_action(critic_params: Any, obs: jax.Array) -> jax.Array:
        """Discrete actions: the critics' value of every action, [C, B, A]."""
        return cast(jax.Array, critic.apply(critic_params, obs))

    def q_taken(critic_params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        """The critics' values of the stored actions, [C, B]."""
        if not discrete:
            return q_values(critic_params, obs, action)
        q = q_per_action(critic_params, obs)
        index = jnp.broadcast_to(action.astype(jnp.int32)[None, :, None], (*q.shape[:2], 1))
        return jnp.take_along_axis(q, index, axis=-1)[..., 0]

    def next_terms(
        actor_params: Any, target_critic: Any, next_obs: jax.Array, key: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """The soft target's terms at s': ``min Q'(s', a')`` and ``log pi(a'|s')``, for a'
        sampled from the policy, or (discrete) their expectations under it, [B] each."""
        inputs = policy_inputs(actor_params, next_obs)
        if not discrete:
            next_action, next_logp = cast(SquashedDiagGaussian, dist).sample_and_log_prob(
                key, inputs
            )
            return jnp.min(q_values(target_critic, next_obs, next_action), 0), next_logp
        logp = jax.nn.log_softmax(inputs, axis=-1)
        probs = jnp.exp(logp)
        q_min = jnp.min(q_per_action(target_critic, next_obs), 0)
        return jnp.sum(probs * q_min, -1), jnp.sum(probs * logp, -1)

    def q_loss_fn(critic_params, batch, next_q, next_logp, alpha, weights, actor, key):
        q = q_taken(critic_params, batch["obs"], batch["action"])
        q2 = q[1] if q.shape[0] > 1 else q[0]
        loss, td = critic_loss(
            q[0], q2, batch["reward"], batch["discount"], next_q, next_logp, alpha, weights
        )
        extra: dict[str, jax.Array] = {}
        if critic_penalty is not None:
            penalty, extra = critic_penalty(
                lambda o, a: q_values(critic_params, o, a),
                lambda o, k: cast(SquashedDiagGaussian, dist).sample_and_log_prob(
                    k, policy_inputs(actor, o)
                ),
                batch,
                q,
                key,
            )
            loss = loss + penalty
        return loss, (td, q[0], extra)

    def pi_loss_fn(actor_params, critic_params, batch, alpha, key, cloning):
        obs = batch["obs"]
        inputs = policy_inputs(actor_params, obs)
        if discrete:  # the expectation over the actions, exactly (SAC-Discrete)
            q_min = jnp.min(q_per_action(critic_params, obs), 0)
            return discrete_actor_loss(q_min, jax.nn.log_softmax(inputs, axis=-1), alpha)
        gaussian = cast(SquashedDiagGaussian, dist)
        a, logp = gaussian.sample_and_log_prob(key, inputs)
        q_pi = jnp.min(q_values(critic_params, obs, a), 0)
        if bc_steps:  # CQL's first steps: the data's actions instead of the critics' values
            bc_logp = gaussian.log_prob(inputs, batch["action"])
            q_pi = jnp.where(cloning, bc_logp, q_pi)
        return actor_loss(q_pi, logp, alpha), logp

    def learn(
        state: SACLearnerState,
        batch: dict[str, jax.Array],
        weights: jax.Array,
        key: jax.Array,
        timestep: jax.Array | None = None,
    ):
        # The dynamic settings at the env steps sampled so far, evaluated once per step.
        now = settings_at(dynamic, timestep)
        rates = {metric: now[name] for metric, name in SAC_RATES.items()}
        critic_opt = with_hyperparams(state.critic_opt, learning_rate=now["critic_lr"])
        actor_opt = with_hyperparams(state.actor_opt, learning_rate=now["actor_lr"])
        alpha_opt = with_hyperparams(state.alpha_opt, learning_rate=now["alpha_lr"])
        if critic_penalty is None:  # SAC's stream of keys, as it has always been
            k_next, k_pi = jax.random.split(key)
            k_penalty = k_next  # unused
        else:
            k_next, k_pi, k_penalty = jax.random.split(key, 3)
        alpha = jnp.exp(state.log_alpha)
        next_obs = batch["next_obs"]

        # Critics: soft Bellman targets from the current policy at the next observations.
        next_q, next_logp = next_terms(state.actor, state.target_critic, next_obs, k_next)
        if not backup_entropy:  # CQL's deterministic backup
            next_logp = jnp.zeros_like(next_logp)
        q_step = gradient_step(
            q_loss_fn,
            optimizers.critic,
            state.critic,
            critic_opt,
            batch,
            next_q,
            next_logp,
            alpha,
            weights,
            state.actor,
            k_penalty,
        )
        td, q1, penalty_metrics = q_step.aux
        cloning = jnp.asarray(0 if timestep is None else timestep) < bc_steps

        # Actor: reparameterised actions (or every action, discrete) scored by the updated
        # critics.
        pi_step = gradient_step(
            pi_loss_fn,
            optimizers.actor,
            state.actor,
            actor_opt,
            q_step.params,
            batch,
            alpha,
            k_pi,
            cloning,
        )
        logp = pi_step.aux

        # Temperature: towards the target entropy.
        alpha_step = gradient_step(
            temperature_loss,
            optimizers.alpha,
            state.log_alpha,
            alpha_opt,
            logp,
            hp.target_entropy,
            has_aux=False,
        )
        log_alpha = alpha_step.params

        metrics = {
            **rates,
            "qf_loss": q_step.loss,
            "policy_loss": pi_step.loss,
            "alpha_loss": alpha_step.loss,
            "alpha_value": jnp.exp(log_alpha),
            "log_alpha_value": log_alpha,
            "qf_mean": jnp.mean(q1),
            "qf_max": jnp.max(q1),
            "qf_min": jnp.min(q1),
            "td_error_mean": jnp.mean(td),
            "entropy": -jnp.mean(logp),
            **penalty_metrics,
        }
        state = dataclasses.replace(
            state,
            actor=pi_step.params,
            critic=q_step.params,
            log_alpha=log_alpha,
            actor_opt=pi_step.opt_state,
            critic_opt=q_step.opt_state,
            alpha_opt=alpha_step.opt_state,
        )
        return state, td, metrics

    return learn


__all__ = [
    "SAC_METRICS",
    "SAC_RATES",
    "SACHyperparams",
    "SACLearnerState",
    "SACNetworks",
    "SACOptimizers",
    "make_sac_learn",
    "make_sac_optimizers",
    "sac_dynamic_settings",
]
