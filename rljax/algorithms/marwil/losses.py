"""MARWIL's loss (RLlib's new API stack, ``MARWILTorchLearner.compute_loss_for_module``).

With ``beta = 0`` it is behaviour cloning: ``-mean(log pi(a|s))``. Otherwise the advantage
``A = value_target - V(s)`` weighs each log-likelihood by ``exp(beta * A / sqrt(c2))``, where
``c2`` is a moving average of ``mean(A^2)`` (``c2 += rate * (mean(A^2) - c2)``, updated before
the weights are taken, as RLlib's), the weights carry no gradient, and the value function learns
``0.5 * mean(A^2)`` weighted by ``vf_coeff``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class MARWILBatch(NamedTuple):
    """A batch of offline rows.

    Attributes:
      obs: Observations, [B, ...].
      actions: The actions taken, [B] or [B, ...].
      returns: The discounted rewards from the row to its episode's last row in the data, [B].
      discount: ``gamma ** (rows to that end)`` where the episode did not terminate there,
        else 0, [B]: the weight of the value bootstrapped at ``bootstrap_obs``.
      bootstrap_obs: The ``new_obs`` of the episode's last row, [B, ...].
    """

    obs: Any
    actions: Any
    returns: jax.Array
    discount: jax.Array
    bootstrap_obs: Any


def marwil_loss(
    logp: jax.Array,
    values: jax.Array,
    value_targets: jax.Array,
    sqd_adv_norm: jax.Array,
    *,
    beta: float,
    vf_coeff: float,
    update_rate: float,
) -> tuple[jax.Array, tuple[jax.Array, dict[str, jax.Array]]]:
    """MARWIL's loss of one batch.

    Args:
      logp: ``log pi(a|s)`` of the batch's actions, [B].
      values: ``V(s)``, [B] (unused with ``beta = 0``).
      value_targets: The value targets, [B] (no gradient flows into them).
      sqd_adv_norm: The moving average ``c2`` before this batch.
      beta: The advantage temperature; 0: behaviour cloning.
      vf_coeff: The value loss's weight.
      update_rate: The moving average's rate.

    Returns:
      ``(loss, (new c2, metrics))``.
    """
    if beta == 0.0:
        policy_loss = -jnp.mean(logp)
        return policy_loss, (sqd_adv_norm, {"policy_loss": policy_loss})
    advantages = jax.lax.stop_gradient(value_targets) - values
    adv_sq_mean = jnp.mean(jnp.square(advantages))
    vf_loss = 0.5 * adv_sq_mean
    c2 = sqd_adv_norm + update_rate * (jax.lax.stop_gradient(adv_sq_mean) - sqd_adv_norm)
    weights = jax.lax.stop_gradient(jnp.exp(beta * advantages / (1e-8 + jnp.sqrt(c2))))
    policy_loss = -jnp.mean(weights * logp)
    total = policy_loss + vf_coeff * vf_loss
    metrics = {
        "policy_loss": policy_loss,
        "vf_loss": vf_loss,
        "moving_avg_sqd_adv_norm": c2,
        # RLlib's explained_variance: at least -1.
        "vf_explained_variance": jnp.maximum(
            -1.0,
            1.0 - jnp.var(value_targets - values) / jnp.maximum(jnp.var(value_targets), 1e-8),
        ),
    }
    return total, (c2, metrics)


__all__ = ["MARWILBatch", "marwil_loss"]
