"""PPO's loss (Schulman et al., 2017) with RLlib's options, used by every runner mode."""

from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from rljax.algorithms.actor_critic.policy import masked_mean
from rljax.networks.distributions import ActionDistribution


class PPOBatch(NamedTuple):
    """A post-processed PPO batch; every leaf has leading shape [B] (or [D, n] before minibatching).

    Attributes:
      obs: Observations, [B, *obs_shape].
      action: Actions taken, [B, *action_shape].
      action_logp: Log-probabilities of the actions under the sampling policy, [B].
      action_dist_inputs: The sampling policy's distribution inputs, [B, num_outputs].
      vf_preds: Value predictions of the sampling policy, [B].
      advantages: (Normalised) GAE advantages, [B].
      value_targets: GAE value targets, [B].
      mask: 1.0 for real transitions, 0.0 for auto-reset steps, [B].
    """

    obs: Any
    action: Any
    action_logp: Any
    action_dist_inputs: Any
    vf_preds: Any
    advantages: Any
    value_targets: Any
    mask: Any


PPO_LOSS_METRICS = (
    "total_loss",
    "policy_loss",
    "vf_loss",
    "vf_loss_unclipped",
    "entropy",
    "mean_kl_loss",
    "vf_explained_var",
    "clip_fraction",
)


class PPOLossConfig(NamedTuple):
    """The settings ``ppo_loss`` reads: the ``PPOConfig`` settings of these names
    (``PPOHyperparams.loss``, built from the config by ``frozen_from_config``)."""

    clip_param: float
    vf_clip_param: float | None
    vf_loss_coeff: float
    entropy_coeff: float
    use_kl_loss: bool
    vf_clip_mode: str = "squared_error"


#: ``vf_clip_mode``'s values: what ``vf_clip_param`` clips.
VF_CLIP_MODES: tuple[str, ...] = ("squared_error", "prediction")


def ppo_loss(
    dist_inputs: jax.Array,
    values: jax.Array,
    batch: PPOBatch,
    dist: ActionDistribution,
    kl_coeff: jax.Array,
    cfg: PPOLossConfig,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """PPO's total loss from the current policy's outputs on a batch.

    ``total = -surrogate + vf_loss_coeff * vf_loss - entropy_coeff * entropy + kl_coeff * KL``,
    each a masked mean, and the KL is KL(sampling policy || current policy). The value loss
    depends on ``cfg.vf_clip_mode``: ``"squared_error"`` (RLlib's) clips the squared error
    ``(v - target)**2`` at ``vf_clip_param``, so rows whose error is larger give the critic no
    gradient; ``"prediction"`` (PPO2's, as PureJaxRL, CleanRL and Stable-Baselines3 have it)
    clips the prediction to within ``vf_clip_param`` of the sampling policy's,
    ``v_clipped = vf_preds + clip(v - vf_preds, -c, c)``, and takes the larger squared error,
    ``max((v - target)**2, (v_clipped - target)**2)``. ``vf_clip_param=None``: the plain
    squared error either way.

    Args:
      dist_inputs: The current policy's distribution inputs, [B, num_outputs].
      values: The current value predictions, [B].
      batch: The batch, leaves of leading shape [B].
      dist: The action distribution.
      kl_coeff: The current KL coefficient, a scalar.
      cfg: Loss settings.

    Returns:
      ``(total_loss, metrics)``.
    """
    chex.assert_rank([values, batch.advantages, batch.action_logp], 1)
    mask = batch.mask.astype(jnp.float32)
    logp = dist.log_prob(dist_inputs, batch.action)
    ratio = jnp.exp(logp - batch.action_logp)
    adv = batch.advantages
    surrogate = jnp.minimum(
        ratio * adv, jnp.clip(ratio, 1 - cfg.clip_param, 1 + cfg.clip_param) * adv
    )
    policy_loss = -masked_mean(surrogate, mask)

    vf_err = jnp.square(values - batch.value_targets)
    vf_loss_unclipped = masked_mean(vf_err, mask)
    if cfg.vf_clip_param is not None and cfg.vf_clip_mode == "prediction":
        clipped = batch.vf_preds + jnp.clip(
            values - batch.vf_preds, -cfg.vf_clip_param, cfg.vf_clip_param
        )
        vf_err = jnp.maximum(vf_err, jnp.square(clipped - batch.value_targets))
    elif cfg.vf_clip_param is not None:
        vf_err = jnp.clip(vf_err, 0.0, cfg.vf_clip_param)
    vf_loss = masked_mean(vf_err, mask)

    entropy = masked_mean(dist.entropy(dist_inputs), mask)
    mean_kl = masked_mean(dist.kl(batch.action_dist_inputs, dist_inputs), mask)

    total = policy_loss + cfg.vf_loss_coeff * vf_loss - cfg.entropy_coeff * entropy
    if cfg.use_kl_loss:
        total = total + kl_coeff * mean_kl

    targets = batch.value_targets
    t_mean = masked_mean(targets, mask)
    var_t = masked_mean(jnp.square(targets - t_mean), mask)
    resid = targets - values
    var_r = masked_mean(jnp.square(resid - masked_mean(resid, mask)), mask)
    explained_var = jnp.where(var_t > 0, 1.0 - var_r / jnp.maximum(var_t, 1e-8), 0.0)

    metrics = {
        "total_loss": total,
        "policy_loss": policy_loss,
        "vf_loss": vf_loss,
        "vf_loss_unclipped": vf_loss_unclipped,
        "entropy": entropy,
        "mean_kl_loss": mean_kl,
        "vf_explained_var": explained_var,
        "clip_fraction": masked_mean(
            (jnp.abs(ratio - 1) > cfg.clip_param).astype(jnp.float32), mask
        ),
    }
    return total, metrics
