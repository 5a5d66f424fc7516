"""TQC's learner (Kuznetsov et al. 2020, as RLlib 2.60's ``TQCTorchLearner``): SAC with
``n_critics`` critics of ``n_quantiles`` quantiles each, trained by the quantile Huber loss
towards the pooled target quantiles with the ``top_quantiles_to_drop_per_net * n_critics``
largest dropped; the actor maximises the mean of all the critics' quantiles.

The step's order is rljax's SAC's (``rljax.algorithms.sac.learner``): the critics' step, then the
actor's against the updated critics, then the temperature's. The state is SAC's
(``SACLearnerState``): the critics' parameters are stacked ``n_critics`` networks of
``n_quantiles`` outputs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import jax
import jax.numpy as jnp

from rljax.algorithms.sac.learner import (
    SAC_RATES,
    SACHyperparams,
    SACLearnerState,
    SACNetworks,
    SACOptimizers,
    sac_dynamic_settings,
)
from rljax.algorithms.sac.losses import actor_loss, temperature_loss
from rljax.learners.hyperparams import settings_at, with_hyperparams
from rljax.learners.update import gradient_step
from rljax.networks.distributions import SquashedDiagGaussian

TQC_METRICS = (
    *SAC_RATES,
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


def quantile_huber_loss(quantiles: jax.Array, targets: jax.Array, kappa: float = 1.0) -> jax.Array:
    """Per row, summed over the quantiles and the targets (RLlib's): ``|tau_i - 1(t_j <
    q_i)| * huber_kappa(t_j - q_i)`` with ``tau_i = (i + 0.5) / n``.

    Args:
      quantiles: [B, n] a critic's quantiles.
      targets: [B, m] the target quantiles.

    Returns:
      [B].
    """
    n = quantiles.shape[-1]
    tau = (jnp.arange(n, dtype=quantiles.dtype) + 0.5) / n
    diff = targets[:, None, :] - quantiles[:, :, None]  # [B, n, m]
    abs_diff = jnp.abs(diff)
    huber = jnp.where(abs_diff <= kappa, 0.5 * diff**2, kappa * (abs_diff - 0.5 * kappa))
    weight = jnp.abs(tau[None, :, None] - (diff < 0).astype(quantiles.dtype))
    return jnp.sum(weight * huber, axis=(1, 2))


def truncated_targets(next_quantiles: jax.Array, keep: int) -> jax.Array:
    """The ``keep`` smallest of every critic's quantiles pooled: ``[C, B, n] -> [B, keep]``,
    sorted."""
    pooled = jnp.moveaxis(next_quantiles, 0, 1).reshape(next_quantiles.shape[1], -1)
    return jnp.sort(pooled, axis=-1)[:, :keep]


def make_tqc_learn(
    networks: SACNetworks, optimizers: SACOptimizers, hp: SACHyperparams, *, keep: int
) -> Any:
    """``learn(state, batch, weights, key, timestep) -> (state, td_errors, metrics)`` (SAC's
    contract, ``make_sac_learn``): ``networks.critic.apply(params, obs, action) -> [C, B,
    n_quantiles]``; ``keep`` target quantiles of the pooled ``C * n_quantiles``. ``td_errors``
    are ``|mean quantile - mean target|`` per row (prioritized replay's)."""
    actor, critic, dist = networks
    gaussian = cast(SquashedDiagGaussian, dist)
    dynamic = sac_dynamic_settings(hp)

    def quantiles_of(params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        return cast(jax.Array, critic.apply(params, obs, action))

    def critic_loss(params: Any, batch: dict[str, jax.Array], targets: jax.Array, weights):
        q = quantiles_of(params, batch["obs"], batch["action"])  # [C, B, n]
        per_row = jax.vmap(lambda c: quantile_huber_loss(c, targets))(q)  # [C, B]
        return jnp.sum(jnp.mean(weights[None] * per_row, axis=1)), q

    def policy_loss(params: Any, critic_params: Any, obs: jax.Array, alpha, key):
        a, logp = gaussian.sample_and_log_prob(key, cast(jax.Array, actor.apply(params, obs)))
        q = jnp.mean(quantiles_of(critic_params, obs, a), axis=(0, 2))
        return actor_loss(q, logp, alpha), logp

    def learn(
        state: SACLearnerState,
        batch: dict[str, jax.Array],
        weights: jax.Array,
        key: jax.Array,
        timestep: jax.Array | None = None,
    ):
        now = settings_at(dynamic, timestep)
        k_next, k_pi = jax.random.split(key)
        alpha = jnp.exp(state.log_alpha)
        next_obs = batch["next_obs"]
        next_a, next_logp = gaussian.sample_and_log_prob(
            k_next, cast(jax.Array, actor.apply(state.actor, next_obs))
        )
        kept = truncated_targets(quantiles_of(state.target_critic, next_obs, next_a), keep)
        targets = batch["reward"][:, None] + batch["discount"][:, None] * (
            kept - alpha * next_logp[:, None]
        )
        targets = jax.lax.stop_gradient(targets)
        q_step = gradient_step(
            critic_loss,
            optimizers.critic,
            state.critic,
            with_hyperparams(state.critic_opt, learning_rate=now["critic_lr"]),
            batch,
            targets,
            weights,
        )
        q = q_step.aux
        pi_step = gradient_step(
            policy_loss,
            optimizers.actor,
            state.actor,
            with_hyperparams(state.actor_opt, learning_rate=now["actor_lr"]),
            q_step.params,
            batch["obs"],
            alpha,
            k_pi,
        )
        logp = pi_step.aux
        alpha_step = gradient_step(
            temperature_loss,
            optimizers.alpha,
            state.log_alpha,
            with_hyperparams(state.alpha_opt, learning_rate=now["alpha_lr"]),
            logp,
            hp.target_entropy,
            has_aux=False,
        )
        log_alpha = alpha_step.params
        td = jnp.abs(jnp.mean(q, axis=(0, 2)) - jnp.mean(targets, axis=1))
        metrics = {
            **{metric: now[name] for metric, name in SAC_RATES.items()},
            "qf_loss": q_step.loss,
            "policy_loss": pi_step.loss,
            "alpha_loss": alpha_step.loss,
            "alpha_value": jnp.exp(log_alpha),
            "log_alpha_value": log_alpha,
            "qf_mean": jnp.mean(q),
            "qf_max": jnp.max(q),
            "qf_min": jnp.min(q),
            "td_error_mean": jnp.mean(td),
            "entropy": -jnp.mean(logp),
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


__all__ = ["TQC_METRICS", "make_tqc_learn", "quantile_huber_loss", "truncated_targets"]
