"""SAC's critic, actor and temperature losses, as pure functions of network outputs."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def critic_loss(
    q1: chex.Array,
    q2: chex.Array,
    reward: chex.Array,
    discount: chex.Array,
    next_q_target_min: chex.Array,
    next_logp: chex.Array,
    alpha: chex.Array,
    weights: chex.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Twin-Q soft Bellman loss.

    ``y = r + discount * (min(Q1', Q2')(s', a') - alpha * log pi(a'|s'))``, with a' sampled from the
    current policy at s'; ``discount`` is ``gamma ** n`` times (1 - terminated). The loss is
    ``0.5 * mean(w (Q1 - y)^2) + 0.5 * mean(w (Q2 - y)^2)``; the target is not differentiated.

    Args:
      q1, q2: The twin critics' values of the stored actions, [B].
      reward: n-step discounted rewards, [B].
      discount: Bootstrap discounts, [B].
      next_q_target_min: min of the target critics at (s', a'), [B].
      next_logp: log pi(a'|s'), [B].
      alpha: The temperature, a scalar.
      weights: Optional importance weights, [B].

    Returns:
      ``(loss, td_errors)``; the TD errors (mean absolute of the twins, [B]) feed priorities.
    """
    chex.assert_rank([q1, q2, reward, discount, next_q_target_min, next_logp], 1)
    target = jax.lax.stop_gradient(reward + discount * (next_q_target_min - alpha * next_logp))
    w = jnp.ones_like(q1) if weights is None else weights
    loss = 0.5 * jnp.mean(w * (q1 - target) ** 2) + 0.5 * jnp.mean(w * (q2 - target) ** 2)
    td = 0.5 * (jnp.abs(q1 - target) + jnp.abs(q2 - target))
    return loss, td


def actor_loss(q_min: chex.Array, logp: chex.Array, alpha: chex.Array) -> jax.Array:
    """``mean(alpha * log pi(a|s) - min(Q1, Q2)(s, a))`` with a sampled (reparameterised) from pi."""
    chex.assert_rank([q_min, logp], 1)
    return jnp.mean(jax.lax.stop_gradient(alpha) * logp - q_min)


def discrete_actor_loss(
    q_min: chex.Array, logp: chex.Array, alpha: chex.Array
) -> tuple[jax.Array, jax.Array]:
    """SAC-Discrete's actor loss, the expectation over every action instead of a sample:
    ``mean_s(sum_a pi(a|s) * (alpha * log pi(a|s) - min(Q1, Q2)(s, a)))``.

    Args:
      q_min: The critics' minimum per action, [B, A] (not differentiated).
      logp: The policy's log-probabilities, [B, A].
      alpha: The temperature (not differentiated).

    Returns:
      ``(loss, expected_logp [B])``: ``sum_a pi(a|s) log pi(a|s)``, minus the entropy, for the
      temperature's loss.
    """
    chex.assert_rank([q_min, logp], 2)
    probs = jnp.exp(logp)
    alpha = jax.lax.stop_gradient(alpha)
    loss = jnp.mean(jnp.sum(probs * (alpha * logp - jax.lax.stop_gradient(q_min)), -1))
    return loss, jnp.sum(probs * logp, -1)


def temperature_loss(log_alpha: chex.Array, logp: chex.Array, target_entropy: float) -> jax.Array:
    """``-mean(log_alpha * (log pi(a|s) + target_entropy))``: alpha rises when entropy is too low."""
    chex.assert_rank(logp, 1)
    return -jnp.mean(log_alpha * jax.lax.stop_gradient(logp + target_entropy))


def auto_target_entropy(action_dim: int) -> float:
    """RLlib's ``target_entropy="auto"``: minus the action dimension."""
    return -float(action_dim)
