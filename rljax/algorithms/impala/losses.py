"""IMPALA's and APPO's losses (Espeholt et al., 2018; RLlib's APPO), on V-trace targets.

Both take a time-major batch ``[T, B]`` of rows ordered by stream (``runners/ordering.py``:
each column a sub-env's consecutive steps, every episode end and stream end marked as
terminated or truncated) sampled by a behaviour policy that may lag the learner's.

* IMPALA: ``pi_loss = -mean(log pi(a_t|s_t) * A_t)`` with V-trace's advantages ``A_t`` and the
  ratios ``pi / mu`` of the current policy to the behaviour policy.
* APPO: V-trace's ratios use a target ("old") policy ``pi_old`` (a copy of the weights updated
  every few steps) instead of the current one, and the policy term is PPO's clipped surrogate on
  ``r_t = min(mu / pi_old, target_worker_clipping) * pi / mu``, which is ``pi / pi_old`` unless
  the behaviour policy strays far from the target; an optional KL(pi_old || pi) term as PPO's.

Both add ``vf_loss_coeff * 0.5 * mean((V(s_t) - v_t)^2)`` and ``-entropy_coeff * mean(entropy)``;
every mean is over the rows whose ``mask`` is 1. V-trace's traces use ``c_t = lambda *
min(1, rho_t)`` as in the paper (RLlib's APPO instead folds lambda into the discount).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from rljax.algorithms.actor_critic.policy import masked_mean
from rljax.networks.distributions import ActionDistribution
from rljax.ops.vtrace import VTraceOutput, vtrace


class VTraceBatch(NamedTuple):
    """A time-major batch for the V-trace losses; every leaf has leading shape [T, B].

    Attributes:
      action: Actions taken, [T, B, *action_shape].
      behaviour_logp: Their log-probabilities under the policy that acted, [T, B].
      reward: Rewards, [T, B].
      terminated: The next state is terminal, [T, B].
      truncated: The row's stream is cut after it (time limit, fragment or stream end), [T, B].
      mask: 1.0 for real transitions, 0.0 for rows that are not, [T, B].
    """

    action: Any
    behaviour_logp: Any
    reward: Any
    terminated: Any
    truncated: Any
    mask: Any


class VTraceLossConfig(NamedTuple):
    """IMPALA's loss settings (RLlib's names)."""

    gamma: float
    lambda_: float
    vtrace_clip_rho_threshold: float
    vtrace_clip_pg_rho_threshold: float
    vf_loss_coeff: float
    entropy_coeff: float


class APPOLossConfig(NamedTuple):
    """APPO's loss settings: IMPALA's and the surrogate's."""

    vtrace: VTraceLossConfig
    clip_param: float
    target_worker_clipping: float
    use_kl_loss: bool


def _targets(
    log_rhos: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    batch: VTraceBatch,
    cfg: VTraceLossConfig,
) -> VTraceOutput:
    return vtrace(
        log_rhos,
        batch.reward,
        values,
        next_values,
        batch.terminated,
        batch.truncated,
        cfg.gamma,
        cfg.lambda_,
        cfg.vtrace_clip_rho_threshold,
        cfg.vtrace_clip_pg_rho_threshold,
    )


def _value_and_entropy(
    dist_inputs: jax.Array,
    values: jax.Array,
    vs: jax.Array,
    dist: ActionDistribution,
    mask: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    vf_loss = 0.5 * masked_mean(jnp.square(values - vs), mask)
    entropy = masked_mean(dist.entropy(dist_inputs), mask)
    return vf_loss, entropy


def impala_loss(
    dist_inputs: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    batch: VTraceBatch,
    dist: ActionDistribution,
    cfg: VTraceLossConfig,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """IMPALA's total loss from the current networks' outputs on a batch.

    Args:
      dist_inputs: The current policy's distribution inputs, [T, B, num_outputs].
      values: The current value predictions V(s_t), [T, B].
      next_values: V(s'_t) of the observation after each row, [T, B] (used where rows are cut).
      batch: The batch.
      dist: The action distribution.
      cfg: Loss settings.

    Returns:
      ``(total_loss, metrics)``: ``total = pi_loss + vf_loss_coeff * vf_loss - entropy_coeff *
      entropy``; metrics also hold ``mean_rho`` (the clipped ratios' mean) and ``mean_vs``.
    """
    chex.assert_rank([values, next_values, batch.behaviour_logp], 2)
    mask = batch.mask.astype(jnp.float32)
    logp = dist.log_prob(dist_inputs, batch.action)
    targets = _targets(logp - batch.behaviour_logp, values, next_values, batch, cfg)
    pi_loss = -masked_mean(logp * targets.pg_advantages, mask)
    vf_loss, entropy = _value_and_entropy(dist_inputs, values, targets.vs, dist, mask)
    total = pi_loss + cfg.vf_loss_coeff * vf_loss - cfg.entropy_coeff * entropy
    return total, {
        "total_loss": total,
        "pi_loss": pi_loss,
        "vf_loss": vf_loss,
        "entropy": entropy,
        "mean_rho": masked_mean(targets.clipped_rhos, mask),
        "mean_vs": masked_mean(targets.vs, mask),
    }


def appo_loss(
    dist_inputs: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    old_dist_inputs: jax.Array,
    batch: VTraceBatch,
    dist: ActionDistribution,
    kl_coeff: jax.Array,
    cfg: APPOLossConfig,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """APPO's total loss from the current networks' and the target policy's outputs.

    Args:
      dist_inputs: The current policy's distribution inputs, [T, B, num_outputs].
      values: The current value predictions V(s_t), [T, B].
      next_values: V(s'_t) of the observation after each row, [T, B].
      old_dist_inputs: The target policy's distribution inputs, [T, B, num_outputs] (no
        gradient flows into them).
      batch: The batch.
      dist: The action distribution.
      kl_coeff: The current KL coefficient, a scalar (used with ``use_kl_loss``).
      cfg: Loss settings.

    Returns:
      ``(total_loss, metrics)``: ``total = -surrogate + vf_loss_coeff * vf_loss -
      entropy_coeff * entropy (+ kl_coeff * KL(pi_old || pi))``.
    """
    chex.assert_rank([values, next_values, batch.behaviour_logp], 2)
    mask = batch.mask.astype(jnp.float32)
    old_dist_inputs = jax.lax.stop_gradient(old_dist_inputs)
    logp = dist.log_prob(dist_inputs, batch.action)
    old_logp = dist.log_prob(old_dist_inputs, batch.action)
    targets = _targets(old_logp - batch.behaviour_logp, values, next_values, batch, cfg.vtrace)
    is_ratio = jnp.clip(jnp.exp(batch.behaviour_logp - old_logp), 0.0, cfg.target_worker_clipping)
    ratio = is_ratio * jnp.exp(logp - batch.behaviour_logp)
    adv = targets.pg_advantages
    clipped = jnp.clip(ratio, 1 - cfg.clip_param, 1 + cfg.clip_param)
    pi_loss = -masked_mean(jnp.minimum(ratio * adv, clipped * adv), mask)
    vf_loss, entropy = _value_and_entropy(dist_inputs, values, targets.vs, dist, mask)
    mean_kl = masked_mean(dist.kl(old_dist_inputs, dist_inputs), mask)
    v = cfg.vtrace
    total = pi_loss + v.vf_loss_coeff * vf_loss - v.entropy_coeff * entropy
    if cfg.use_kl_loss:
        total = total + kl_coeff * mean_kl
    return total, {
        "total_loss": total,
        "pi_loss": pi_loss,
        "vf_loss": vf_loss,
        "entropy": entropy,
        "mean_kl_loss": mean_kl,
        "mean_rho": masked_mean(targets.clipped_rhos, mask),
        "clip_fraction": masked_mean(
            (jnp.abs(ratio - 1) > cfg.clip_param).astype(jnp.float32), mask
        ),
    }


__all__ = [
    "APPOLossConfig",
    "VTraceBatch",
    "VTraceLossConfig",
    "appo_loss",
    "impala_loss",
]
