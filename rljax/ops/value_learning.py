"""Value-learning ops for the off-policy algorithms: n-step targets, double Q, dueling, TD losses."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def n_step_targets(
    rewards: chex.Array,
    next_values: chex.Array,
    terminated: chex.Array,
    truncated: chex.Array,
    gamma: float,
    n: int,
) -> tuple[jax.Array, jax.Array]:
    """n-step bootstrapped targets of one sequence.

    For each t the window runs over steps t..j, where j is the first of t+n-1, an episode end
    (terminated or truncated) or the last step of the sequence:
    ``G_t = sum_{k=t..j} gamma^(k-t) r_k + gamma^(j-t+1) (1 - terminated_j) V(s'_j)``.
    Truncation bootstraps from the final observation's value; termination does not.

    Args:
      rewards: A float tensor of shape [T].
      next_values: A float tensor of shape [T]: the value of the observation after step t
        (the final observation when the episode ended there).
      terminated: A bool tensor of shape [T].
      truncated: A bool tensor of shape [T].
      gamma: The discount.
      n: The number of steps (static, >= 1).

    Returns:
      ``(targets, steps)``: float targets of shape [T] and the int32 window lengths of shape [T]
      (``gamma ** steps`` is the discount applied to the bootstrap).
    """
    chex.assert_rank([rewards, next_values, terminated, truncated], 1)
    chex.assert_equal_shape([rewards, next_values, terminated, truncated])
    if n < 1:
        raise ValueError(f"n must be >= 1; got {n}")
    t_len = rewards.shape[0]
    done = terminated | truncated
    targets = jnp.zeros_like(rewards, dtype=jnp.float32)
    open_ = jnp.ones((t_len,), bool)  # the window of t still extends to t+k
    steps = jnp.zeros((t_len,), jnp.int32)
    bootstrap = jnp.zeros((t_len,), jnp.float32)
    idx = jnp.arange(t_len)
    for k in range(n):  # n is small and static: unrolled
        j = jnp.minimum(idx + k, t_len - 1)
        in_seq = idx + k <= t_len - 1
        take = open_ & in_seq
        targets = targets + jnp.where(take, gamma**k * rewards[j], 0.0)
        steps = steps + take.astype(jnp.int32)
        # The window closes at j if the episode ends there, the sequence ends, or k = n-1.
        closes = take & (done[j] | (idx + k == t_len - 1) | (k == n - 1))
        value = jnp.where(terminated[j], 0.0, next_values[j])
        bootstrap = jnp.where(closes, gamma ** (k + 1) * value, bootstrap)
        open_ = take & ~closes
    return targets + bootstrap, steps


def double_q_bootstrap(q_next_online: chex.Array, q_next_target: chex.Array) -> jax.Array:
    """Double DQN: the target network's value of the online network's greedy action.

    Args:
      q_next_online: Online Q-values at the next observations, [B, A].
      q_next_target: Target-network Q-values at the next observations, [B, A].

    Returns:
      A float tensor of shape [B].
    """
    chex.assert_rank([q_next_online, q_next_target], 2)
    chex.assert_equal_shape([q_next_online, q_next_target])
    greedy = jnp.argmax(q_next_online, axis=-1)
    return jnp.take_along_axis(q_next_target, greedy[:, None], axis=-1)[:, 0]


def dueling_q(value: chex.Array, advantages: chex.Array) -> jax.Array:
    """Dueling aggregation ``Q = V + A - mean_a A`` (Wang et al., 2016); [B], [B, A] -> [B, A]."""
    chex.assert_rank([value, advantages], [1, 2])
    return value[:, None] + advantages - jnp.mean(advantages, axis=-1, keepdims=True)


def td_loss(
    q_taken: chex.Array,
    targets: chex.Array,
    kind: str = "huber",
    weights: chex.Array | None = None,
    delta: float = 1.0,
) -> tuple[jax.Array, jax.Array]:
    """Weighted mean TD loss and the TD errors (for priorities); targets are not differentiated.

    Args:
      q_taken: Q-values of the actions taken, [B].
      targets: Targets, [B].
      kind: "huber" (delta 1 by default) or "mse" (half squared error, as RLlib).
      weights: Optional importance weights, [B].
      delta: The Huber threshold.

    Returns:
      ``(loss, td_errors)``: a scalar and a [B] tensor.
    """
    chex.assert_rank([q_taken, targets], 1)
    td = q_taken - jax.lax.stop_gradient(targets)
    if kind == "huber":
        abs_td = jnp.abs(td)
        per = jnp.where(abs_td <= delta, 0.5 * td**2, delta * (abs_td - 0.5 * delta))
    elif kind == "mse":
        per = 0.5 * td**2
    else:
        raise ValueError(f"td_error_loss_fn={kind!r}; use 'huber' or 'mse'")
    if weights is not None:
        per = per * weights
    return jnp.mean(per), td


def n_step_window(
    rewards: chex.Array,
    terminated: chex.Array,
    truncated: chex.Array,
    gamma: float,
    n: int | jax.Array,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """n-step returns of windows that start at a stored step (replay sampling).

    Row b holds the steps ``t, t+1, ..., t+W-1`` of one sub-env, in order. The window of row b
    runs over steps ``t..t+m-1``, where ``m`` is ``n`` or less if the episode ends (terminated or
    truncated) at step ``t+m-1`` first. The target is then
    ``G + discount * V(s_{t+m})`` with ``G = sum_{i<m} gamma^i r_{t+i}`` and
    ``discount = gamma^m (1 - terminated_{t+m-1})``: truncation bootstraps from the final
    observation, termination does not.

    Args:
      rewards: A float tensor of shape [B, W].
      terminated: A bool tensor of shape [B, W].
      truncated: A bool tensor of shape [B, W].
      gamma: The discount.
      n: The number of steps, 1 <= n <= W; may be a traced int (sampled per batch).

    Returns:
      ``(returns, discounts, steps)``: float32 [B], float32 [B] and the int32 window lengths
      ``m`` [B]; the bootstrap observation of row b is the one after step ``t + m - 1``.
    """
    chex.assert_rank([rewards, terminated, truncated], 2)
    chex.assert_equal_shape([rewards, terminated, truncated])
    width = rewards.shape[1]
    i = jnp.arange(width)
    done = terminated | truncated
    # Step i is inside the window if i < n and no step before it ended the episode.
    ended_before = jnp.cumsum(done, axis=1) - done.astype(jnp.int32) > 0
    inside = (i[None, :] < n) & ~ended_before
    steps = jnp.sum(inside, axis=1).astype(jnp.int32)
    returns = jnp.sum(jnp.where(inside, gamma ** i[None, :] * rewards, 0.0), axis=1)
    last_terminated = jnp.take_along_axis(terminated, (steps - 1)[:, None], axis=1)[:, 0]
    discounts = jnp.where(last_terminated, 0.0, jnp.asarray(gamma, jnp.float32) ** steps)
    return returns.astype(jnp.float32), discounts.astype(jnp.float32), steps


def categorical_projection(
    next_probs: chex.Array,
    rewards: chex.Array,
    discounts: chex.Array,
    support: chex.Array,
) -> jax.Array:
    """Projects the distributional Bellman target onto a fixed support (C51, Bellemare et al. 2017).

    Each atom ``z_j`` of the next-state distribution moves to ``r + discount * z_j``, is clipped to
    ``[v_min, v_max]`` and its probability is split between the two nearest atoms of ``support``
    in proportion to closeness. A discount of 0 (termination) puts all mass at ``r``.

    Args:
      next_probs: A float tensor of shape [B, N]: the next-state distribution of each sample.
      rewards: A float tensor of shape [B] (n-step returns).
      discounts: A float tensor of shape [B] (``gamma ** n``, or 0 after termination).
      support: A float tensor of shape [N]: equally spaced atoms from ``v_min`` to ``v_max``.

    Returns:
      A float32 tensor of shape [B, N] of target probabilities (rows sum to 1), not
      differentiated.
    """
    chex.assert_rank([next_probs, rewards, discounts, support], [2, 1, 1, 1])
    v_min, v_max = support[0], support[-1]
    num = support.shape[0]
    delta = (v_max - v_min) / (num - 1)
    tz = jnp.clip(rewards[:, None] + discounts[:, None] * support[None, :], v_min, v_max)
    b = (tz - v_min) / delta  # fractional atom index in [0, N-1]
    # Weight of target atom i from source atom j: max(0, 1 - |b_j - i|) (the two nearest atoms;
    # an exact hit puts everything on one).
    weights = jnp.maximum(0.0, 1.0 - jnp.abs(b[:, :, None] - jnp.arange(num)[None, None, :]))
    return jax.lax.stop_gradient(jnp.einsum("bj,bji->bi", next_probs, weights)).astype(jnp.float32)
