"""CQL's conservative term (RLlib's new API stack: ``CQLTorchLearner`` with
``DefaultCQLTorchRLModule``'s repeated actions).

For each row, ``num_actions`` actions drawn uniformly in SAC's squashed action range (-1, 1)^d,
and as many from the current policy at ``s`` and at ``s'``, are scored by each critic (the
policy's from ``s'`` at ``Q(s', .)``, as RLlib's module does); the term is

``min_q_weight * (temperature * mean_rows(logsumexp([Q_rand - log(0.5^d), Q_next - log pi_next,
Q_curr - log pi_curr] / temperature)) - mean_rows(Q(s, a_data)))``

per critic, averaged over the critics. The policy's samples and log-probabilities carry no
gradient into the term. One difference from RLlib 2.60: its random actions are drawn in the
env's bounds ``[low, high]`` and scored by critics that learn on actions in (-1, 1), with the
density of (-1, 1) (a mismatch its own code marks as to do); here they are drawn in (-1, 1),
where the critics' actions and that density are. (With one optimizer over both critics the
average weighs each critic's term by one half, where RLlib's separate optimizers take each
critic's whole term; Adam's scale invariance makes that a difference only under ``grad_clip``.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def cql_penalty(
    q_fn: Callable[[jax.Array, jax.Array], jax.Array],
    sample_fn: Callable[[jax.Array, jax.Array], tuple[jax.Array, jax.Array]],
    batch: dict[str, Any],
    q_taken: jax.Array,
    key: jax.Array,
    *,
    num_actions: int,
    temperature: float,
    min_q_weight: float,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """CQL's term of the critics' loss and its metric ``cql_loss``.

    Args:
      q_fn: ``q_fn(obs [M, O], action [M, D]) -> [C, M]``, the critics being trained.
      sample_fn: ``sample_fn(obs [M, O], key) -> (action [M, D], log_prob [M])``, the policy.
      batch: ``obs`` and ``next_obs`` [B, O] (and ``action`` [B, D], for its width).
      q_taken: The critics' values of the batch's actions, [C, B].
      key: For the random and the policy's actions.
      num_actions: Actions of each kind per row.
      temperature: The logsumexp's temperature.
      min_q_weight: The term's weight.
    """
    obs, next_obs = batch["obs"], batch["next_obs"]
    rows, dim = obs.shape[0], batch["action"].shape[-1]
    k_rand, k_curr, k_next = jax.random.split(key, 3)
    obs_rep = jnp.repeat(obs, num_actions, axis=0)  # each row num_actions times, in place
    next_rep = jnp.repeat(next_obs, num_actions, axis=0)
    rand = jax.random.uniform(k_rand, (rows * num_actions, dim), minval=-1.0, maxval=1.0)
    curr, logp_curr = jax.lax.stop_gradient(sample_fn(obs_rep, k_curr))
    nxt, logp_next = jax.lax.stop_gradient(sample_fn(next_rep, k_next))

    def scored(o: jax.Array, a: jax.Array) -> jax.Array:
        q = q_fn(o, a)
        return q.reshape(q.shape[0], rows, num_actions)

    random_density = dim * math.log(0.5)  # uniform on [-1, 1]^dim
    stacked = jnp.concatenate(
        [
            scored(obs_rep, rand) - random_density,
            scored(next_rep, nxt) - logp_next.reshape(rows, num_actions),
            scored(obs_rep, curr) - logp_curr.reshape(rows, num_actions),
        ],
        axis=-1,
    )
    soft_max = jax.scipy.special.logsumexp(stacked / temperature, axis=-1).mean(-1)
    per_critic = min_q_weight * (temperature * soft_max - q_taken.mean(-1))
    term = jnp.mean(per_critic)
    return term, {"cql_loss": term}


__all__ = ["cql_penalty"]
