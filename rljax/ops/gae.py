"""Generalized Advantage Estimation (Schulman et al., 2016).

Termination and truncation are kept apart: on termination the next state's value is zero; on
truncation (a time limit, the end of a rollout fragment, the boundary between two sub-envs in a
flattened batch) the next state's value is bootstrapped and the advantage recursion is cut.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def _compose(earlier: tuple[jax.Array, jax.Array], later: tuple[jax.Array, jax.Array]):
    # Each element (c, d) stands for the affine map x -> d + c * x applied to A_{t+1}.
    # Scanning from the end of the sequence, `later` in scan order is an earlier time step, so the
    # result is later ∘ earlier.
    c_e, d_e = earlier
    c_l, d_l = later
    return c_l * c_e, d_l + c_l * d_e


def _deltas(rewards, values, next_values, terminated, truncated, gamma, lambda_):
    """TD errors ``delta_t`` and the coefficients ``c_t`` of ``A_t = delta_t + c_t * A_{t+1}``."""
    chex.assert_equal_shape([rewards, values, next_values, terminated, truncated])
    dtype = jnp.result_type(values.dtype, jnp.float32)
    not_term = 1.0 - terminated.astype(dtype)
    cont = gamma * lambda_ * not_term * (1.0 - truncated.astype(dtype))
    deltas = rewards.astype(dtype) + gamma * not_term * next_values.astype(dtype) - values
    return deltas, cont


def gae_advantages(
    rewards: chex.Array,
    values: chex.Array,
    next_values: chex.Array,
    terminated: chex.Array,
    truncated: chex.Array,
    gamma: float,
    lambda_: float,
) -> tuple[jax.Array, jax.Array]:
    """GAE advantages and value targets of one sequence.

    ``A_t = delta_t + gamma * lambda * (1 - terminated_t) * (1 - truncated_t) * A_{t+1}`` with
    ``delta_t = r_t + gamma * (1 - terminated_t) * V(s'_t) - V(s_t)``, solved with a parallel
    (associative) scan, so the depth is O(log T) instead of T sequential steps.

    Args:
      rewards: A float tensor of shape [T], r_t.
      values: A float tensor of shape [T], V(s_t).
      next_values: A float tensor of shape [T], V(s'_t) of the observation that followed s_t
        (the final observation on truncation).
      terminated: A bool or float tensor of shape [T]; the episode ended in a terminal state.
      truncated: A bool or float tensor of shape [T]; the sequence is cut after t without a
        terminal state (time limit, fragment end, boundary between sub-envs).
      gamma: The discount factor.
      lambda_: The GAE lambda.

    Returns:
      A pair (advantages, value_targets) of float tensors of shape [T].
    """
    chex.assert_rank([rewards, values, next_values, terminated, truncated], 1)
    deltas, cont = _deltas(rewards, values, next_values, terminated, truncated, gamma, lambda_)
    _, advantages = jax.lax.associative_scan(_compose, (cont, deltas), reverse=True)
    return advantages, advantages + values


def gae_advantages_time_major(
    rewards: chex.Array,
    values: chex.Array,
    next_values: chex.Array,
    terminated: chex.Array,
    truncated: chex.Array,
    gamma: float,
    lambda_: float,
) -> tuple[jax.Array, jax.Array]:
    """`gae_advantages` over a time-major batch: every argument of shape [T, B].

    A reverse ``lax.scan`` over T, vectorised over B: for many short columns this compiles to a
    small loop, where the parallel scan of `gae_advantages` would unroll log2(T) levels per call.
    """
    chex.assert_rank([rewards, values, next_values, terminated, truncated], 2)
    deltas, cont = _deltas(rewards, values, next_values, terminated, truncated, gamma, lambda_)

    advantages = reverse_linear_recurrence(deltas, cont)
    return advantages, advantages + values


def reverse_linear_recurrence(x: chex.Array, c: chex.Array) -> jax.Array:
    """``y_t = x_t + c_t * y_{t+1}`` from the end (``y_T = 0`` past it), along the leading axis.

    The recursion of GAE's advantages and of V-trace's corrections: a reverse ``lax.scan`` over
    T, vectorised over any trailing axes.

    Args:
      x: A float tensor of shape [T, ...].
      c: A float tensor of the same shape, the continuation coefficients (0 cuts the sequence).

    Returns:
      A float tensor of shape [T, ...].
    """
    chex.assert_equal_shape([x, c])

    def step(later, xs):
        x_t, c_t = xs
        y_t = x_t + c_t * later
        return y_t, y_t

    _, y = jax.lax.scan(step, jnp.zeros_like(x[0]), (x, c), reverse=True)
    return y
