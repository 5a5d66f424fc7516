"""TD3's losses (Fujimoto et al., 2018), as pure functions of network outputs.

Critics: a clipped double-Q target, ``y = r + discount * min_i Q'_i(s', a~)``, where ``a~`` is the
target actor's action at s' with clipped Gaussian noise (target policy smoothing). Actor:
``-Q_1(s, pi(s))``. Actions are in the actor's [-1, 1] scale.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def smoothed_target_action(
    key: chex.Array, next_action: chex.Array, noise: float, noise_clip: float
) -> jax.Array:
    """Target policy smoothing: ``clip(a' + clip(noise * N(0, 1), -c, c), -1, 1)``.

    Args:
      key: A PRNG key.
      next_action: The target actor's actions at s', [B, A], in [-1, 1].
      noise: The noise's standard deviation (``target_noise``); 0 turns smoothing off.
      noise_clip: The bound on the noise's magnitude (``target_noise_clip``).

    Returns:
      The smoothed actions, [B, A].
    """
    chex.assert_rank(next_action, 2)
    eps = jnp.clip(noise * jax.random.normal(key, next_action.shape), -noise_clip, noise_clip)
    return jnp.clip(next_action + eps, -1.0, 1.0)


def clipped_double_q_target(
    reward: chex.Array, discount: chex.Array, next_q: chex.Array
) -> jax.Array:
    """``y = r + discount * min_i Q'_i(s', a~)``, not differentiated.

    Args:
      reward: n-step discounted rewards, [B].
      discount: Bootstrap discounts: ``gamma ** n``, 0 where the episode terminated, [B].
      next_q: The target critics' values at the smoothed next actions, [N, B] (N = 1 without
        ``twin_q``: the target is then that critic's value).

    Returns:
      The targets, [B].
    """
    chex.assert_rank([reward, discount, next_q], [1, 1, 2])
    return jax.lax.stop_gradient(reward + discount * jnp.min(next_q, axis=0))


def critic_loss(
    q: chex.Array, target: chex.Array, weights: chex.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """Every critic regressed to the one target: ``sum_i 0.5 * mean(w (Q_i - y)^2)``.

    Args:
      q: The critics' values of the stored actions, [N, B].
      target: The targets from ``clipped_double_q_target``, [B].
      weights: Optional importance weights (prioritized replay), [B].

    Returns:
      ``(loss, td_errors)``; the TD errors (the mean over critics of ``|Q_i - y|``, [B]) feed
      the priorities.
    """
    chex.assert_rank([q, target], [2, 1])
    w = jnp.ones_like(target) if weights is None else weights
    err = q - target
    loss = 0.5 * jnp.sum(jnp.mean(w * err**2, axis=1))
    return loss, jnp.mean(jnp.abs(err), axis=0)


def actor_loss(q1: chex.Array) -> jax.Array:
    """``-mean(Q_1(s, pi(s)))``: the deterministic policy gradient through the first critic.

    Args:
      q1: The first critic's values of the actor's actions, [B].
    """
    chex.assert_rank(q1, 1)
    return -jnp.mean(q1)
