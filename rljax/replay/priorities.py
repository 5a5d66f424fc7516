"""Proportional prioritization (Schaul et al., 2016, "Prioritized Experience Replay").

Slot ``i`` holds priority ``p_i = (|delta_i| + eps) ** alpha`` and is sampled with probability
``P(i) = p_i / sum_j p_j``. Sampling is stratified: the total is cut into ``batch_size`` equal
segments and one target is drawn uniformly in each. The importance weights
``w_i = (N * P(i)) ** -beta / max_j w_j`` are exact given the smallest priority in the buffer,
since ``w_i / max_j w_j = (min_j p_j / p_i) ** beta`` (N and the total cancel). The buffers that
use these (``episode.py``, ``frame_stack.py``) keep the priorities in a ``kary_tree``.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def priorities_from_td(td_errors: chex.Array, alpha: float, eps: float) -> jax.Array:
    """``(|td_errors| + eps) ** alpha`` in float32, without gradient. Any shape."""
    td = jax.lax.stop_gradient(jnp.asarray(td_errors, jnp.float32))
    return (jnp.abs(td) + eps) ** alpha


def stratified_targets(key: jax.Array, total: jax.Array, batch_size: int) -> jax.Array:
    """One uniform draw in each of ``batch_size`` equal segments of ``[0, total)``.

    Returns:
      A float32 tensor of shape [batch_size], increasing.
    """
    u = jax.random.uniform(key, (batch_size,), jnp.float32)
    return (jnp.arange(batch_size, dtype=jnp.float32) + u) * (total / batch_size)


def importance_weights(
    priorities: chex.Array, min_priority: chex.Array, beta: float | jax.Array
) -> jax.Array:
    """``(N * P(i)) ** -beta / max_j (N * P(j)) ** -beta``, computed as ``(p_min / p_i) ** beta``.

    Args:
      priorities: A float tensor of shape [B], the sampled ``p_i``.
      min_priority: A float scalar, the smallest priority in the buffer.
      beta: The importance-sampling exponent (a float or a traced scalar).

    Returns:
      A float32 tensor of shape [B] in (0, 1]; 0 where ``p_i`` is 0 (an empty buffer).
    """
    chex.assert_rank(priorities, 1)
    safe = jnp.where(priorities > 0, priorities, 1.0)
    return jnp.where(priorities > 0, (min_priority / safe) ** beta, 0.0).astype(jnp.float32)
