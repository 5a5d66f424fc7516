"""DQN's loss (Mnih et al., 2015) with RLlib's options, as a pure function of network outputs.

Double Q (van Hasselt et al., 2016), distributional C51 (Bellemare et al., 2017) and n-step
targets, each weighted by prioritized replay's importance weights. The n-step part is in the
batch: the replay buffer gives each row its n-step discounted return as ``reward`` and
``gamma ** m`` (0 after termination) as ``discount`` (``rljax.ops.value_learning.n_step_window``),
so the loss bootstraps once, from the observation after the window.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from rljax.ops.value_learning import categorical_projection, double_q_bootstrap, td_loss


class DQNLossConfig(NamedTuple):
    """The loss's static settings.

    Attributes:
      double_q: Bootstrap from the target network's value of the online network's greedy next
        action (else the target network's own greedy value).
      td_error_loss_fn: "huber" or "mse", for expected-value Q (C51 uses cross-entropy).
    """

    double_q: bool
    td_error_loss_fn: str


class DQNLossAux(NamedTuple):
    """The loss's by-products.

    Attributes:
      td_error: Per-sample priority signal, [B]: the TD error ``Q(s, a) - target``, or with C51
        the cross-entropy to the projected target distribution (as in RLlib and Rainbow).
      q_taken: Q-values of the actions taken, [B] (means of the distributions with C51).
    """

    td_error: jax.Array
    q_taken: jax.Array


def q_values(out: chex.Array, support: chex.Array | None = None) -> jax.Array:
    """Q-values from a Q-network's output.

    Args:
      out: Q-values, [B, A]; or with ``support``, logits of the return distributions, [B, A, N].
      support: None, or the N atoms of the return distributions, [N].

    Returns:
      A float tensor of shape [B, A]: ``out`` itself, or the means of the distributions.
    """
    if support is None:
        chex.assert_rank(out, 2)
        return out
    chex.assert_rank([out, support], [3, 1])
    return jnp.sum(jax.nn.softmax(out, axis=-1) * support, axis=-1)


def dqn_loss(
    out: chex.Array,
    next_out_online: chex.Array | None,
    next_out_target: chex.Array,
    action: chex.Array,
    reward: chex.Array,
    discount: chex.Array,
    weights: chex.Array | None,
    config: DQNLossConfig,
    support: chex.Array | None = None,
) -> tuple[jax.Array, DQNLossAux]:
    """DQN's loss on a batch of (n-step) transitions; only ``out`` is differentiated.

    Expected-value Q (``support=None``): the target is
    ``y = reward + discount * Q_target(s', a')`` with ``a' = argmax_a Q_online(s', a)`` (double
    Q) or ``argmax_a Q_target(s', a)``; the loss is the weighted mean of the Huber or half
    squared error of ``Q(s, a) - y``. C51 (``support`` of N atoms): the target network's
    distribution at ``(s', a')`` is moved to ``reward + discount * z``, projected onto the
    support, and the loss is the weighted mean cross-entropy from it to ``out``'s distribution
    at ``(s, a)``; ``a'`` is chosen from the Q-values (means) as above.

    Args:
      out: The online network at s: Q-values [B, A], or logits [B, A, N] with ``support``.
      next_out_online: The online network at s', shaped as ``out``; used with ``double_q``
        only (None otherwise).
      next_out_target: The target network at s', shaped as ``out``.
      action: The actions taken, an int tensor of shape [B].
      reward: n-step discounted returns, [B].
      discount: Bootstrap discounts ``gamma ** m``, 0 after termination, [B].
      weights: Importance weights [B], or None (all 1).
      config: ``DQNLossConfig``.
      support: None, or the atoms of the return distributions, [N] (C51).

    Returns:
      ``(loss, DQNLossAux(td_error [B], q_taken [B]))``; the loss is a scalar.
    """
    chex.assert_rank([action, reward, discount], 1)
    if config.double_q and next_out_online is None:
        raise ValueError("double_q needs next_out_online, the online network's output at s'")
    action = action.astype(jnp.int32)
    # The next-state outputs only pick and value the bootstrap: no gradient flows through them.
    next_out_target = jax.lax.stop_gradient(next_out_target)
    q_next_target = q_values(next_out_target, support)
    q_taken = jnp.take_along_axis(q_values(out, support), action[:, None], -1)[:, 0]
    if config.double_q:
        next_out_online = jax.lax.stop_gradient(next_out_online)
    if support is None:
        if config.double_q:
            bootstrap = double_q_bootstrap(next_out_online, q_next_target)
        else:
            bootstrap = jnp.max(q_next_target, axis=-1)
        targets = reward + discount * bootstrap
        loss, td = td_loss(q_taken, targets, config.td_error_loss_fn, weights)
        return loss, DQNLossAux(td, q_taken)
    q_next_select = q_values(next_out_online, support) if config.double_q else q_next_target
    next_action = jnp.argmax(q_next_select, axis=-1)
    next_logits = jnp.take_along_axis(next_out_target, next_action[:, None, None], 1)[:, 0]
    target_probs = categorical_projection(
        jax.nn.softmax(next_logits, -1), reward, discount, support
    )
    logits = jnp.take_along_axis(out, action[:, None, None], axis=1)[:, 0]
    ce = -jnp.sum(target_probs * jax.nn.log_softmax(logits, -1), axis=-1)
    loss = jnp.mean(ce) if weights is None else jnp.mean(weights * ce)
    return loss, DQNLossAux(ce, q_taken)


__all__ = ["DQNLossAux", "DQNLossConfig", "dqn_loss", "q_values"]
