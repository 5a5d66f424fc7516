"""V-trace off-policy value targets and policy-gradient advantages (Espeholt et al., 2018, IMPALA).

A runner acts with the weights it last received, so its samples come from a behaviour policy
``mu`` that lags the learner's target policy ``pi``. V-trace corrects for the lag with truncated
importance ratios ``rho_t = pi(a_t | s_t) / mu(a_t | s_t)``:

* ``delta_t = min(rho_bar, rho_t) * (r_t + gamma_t * V(s'_t) - V(s_t))``,
* ``v_t - V(s_t) = delta_t + gamma_t * c_t * (v_{t+1} - V(s_{t+1}))`` with
  ``c_t = lambda * min(c_bar, rho_t)``,
* ``A_t = min(rho_bar_pg, rho_t) * (r_t + gamma_t * v'_t - V(s_t))``, where ``v'_t`` is
  ``v_{t+1}`` inside a sequence and ``V(s'_t)`` where the sequence is cut.

Termination and truncation are kept apart as in ``rljax.ops.gae``: on termination
``gamma_t = 0`` (no value after a terminal state); on truncation (a time limit, a fragment's end,
the boundary between two sub-envs of a flattened batch) the recursion is cut and ``V(s'_t)``,
the value of the observation that followed, is bootstrapped. With ``rho_t = 1`` everywhere (on
policy) and ``rho_bar, c_bar >= 1`` the targets are GAE's value targets with the same lambda.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from rljax.ops.gae import reverse_linear_recurrence


class VTraceOutput(NamedTuple):
    """V-trace's outputs, each of the inputs' shape ([T] or [T, B]).

    Attributes:
      vs: The value targets ``v_t``.
      pg_advantages: The policy-gradient advantages ``A_t`` (importance-weighted).
      clipped_rhos: ``min(rho_bar, rho_t)``, reported as a measure of the lag.
    """

    vs: jax.Array
    pg_advantages: jax.Array
    clipped_rhos: jax.Array


def next_or_bootstrap(x: jax.Array, bootstrap: jax.Array, truncated: jax.Array) -> jax.Array:
    """``x`` shifted one step back along axis 0 (row t gets ``x[t + 1]``), except where the
    sequence is cut after t (``truncated``; the last row always is), where row t gets
    ``bootstrap[t]``: the next value within a trajectory, or the bootstrapped one."""
    later = jnp.concatenate([x[1:], jnp.zeros_like(x[:1])], axis=0)
    is_cut = truncated.astype(bool).at[-1].set(True)
    return jnp.where(is_cut, bootstrap.astype(x.dtype), later)


def vtrace(
    log_rhos: chex.Array,
    rewards: chex.Array,
    values: chex.Array,
    next_values: chex.Array,
    terminated: chex.Array,
    truncated: chex.Array,
    gamma: float,
    lambda_: float = 1.0,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
    clip_c_threshold: float = 1.0,
) -> VTraceOutput:
    """V-trace targets and advantages of one sequence, time-major.

    Args:
      log_rhos: A float tensor of shape [T] or [T, B]: ``log pi(a_t|s_t) - log mu(a_t|s_t)``
        (no gradient flows through it).
      rewards: A float tensor of the same shape, r_t.
      values: The same shape, V(s_t) under the current value function.
      next_values: The same shape, V(s'_t) of the observation that followed s_t (the final
        observation on truncation); used only where the sequence is cut.
      terminated: A bool or float tensor of the same shape: s'_t is terminal.
      truncated: A bool or float tensor of the same shape: the sequence is cut after t without
        a terminal state. The last step is treated as cut whatever it holds.
      gamma: The discount factor.
      lambda_: Mixes in the traces (``c_t = lambda * min(c_bar, rho_t)``); 1 is IMPALA's.
      clip_rho_threshold: ``rho_bar`` of the value targets (RLlib's
        ``vtrace_clip_rho_threshold``).
      clip_pg_rho_threshold: ``rho_bar`` of the advantages (``vtrace_clip_pg_rho_threshold``).
      clip_c_threshold: ``c_bar`` of the traces.

    Returns:
      ``VTraceOutput(vs, pg_advantages, clipped_rhos)``, each of the inputs' shape, without
      gradient. A reverse ``lax.scan`` over T (vectorised over B for [T, B]).
    """
    chex.assert_rank(log_rhos, {1, 2})
    chex.assert_equal_shape([log_rhos, rewards, values, next_values, terminated, truncated])
    dtype = jnp.result_type(values.dtype, jnp.float32)
    rhos = jnp.exp(jax.lax.stop_gradient(log_rhos).astype(dtype))
    clipped_rhos = jnp.minimum(clip_rho_threshold, rhos)
    cs = lambda_ * jnp.minimum(clip_c_threshold, rhos)
    discounts = gamma * (1.0 - terminated.astype(dtype))
    rewards = rewards.astype(dtype)
    values = jax.lax.stop_gradient(values.astype(dtype))
    next_values = jax.lax.stop_gradient(next_values.astype(dtype))
    deltas = clipped_rhos * (rewards + discounts * next_values - values)
    cont = discounts * cs * (1.0 - truncated.astype(dtype))

    corrections = reverse_linear_recurrence(deltas, cont)
    vs = values + corrections
    # v'_t: the next step's target inside a sequence, the bootstrapped value where it is cut.
    q = rewards + discounts * next_or_bootstrap(vs, next_values, truncated)
    pg_advantages = jnp.minimum(clip_pg_rho_threshold, rhos) * (q - values)
    return VTraceOutput(vs, pg_advantages, clipped_rhos)
