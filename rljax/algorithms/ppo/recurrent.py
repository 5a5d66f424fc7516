"""Recurrent PPO (``model_config={"use_lstm": True}``): acting with a state per sub-env, and
the learner's sequences.

Acting: the act step (``rljax.runners.acting``) hands the policy a ``RecurrentInput`` per row
(the sub-env's state, zeroed where an episode starts, and the previous action and reward) and
keeps the state it returns. Each row also records the state it acted from.

Learning, as RLlib's: each sub-env's rows of the fragment, in time order, are cut into
sequences of ``max_seq_len`` (the last one zero-padded and masked); a sequence starts from the
state recorded at its first row and resets where an episode starts inside it. On the first
epoch the learner therefore computes exactly what the acting pass computed. Minibatches are
whole sequences (``minibatch_size // max_seq_len`` of them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from rljax.algorithms.actor_critic.policy import (
    make_recurrent_policy_parts,
    one_step,
    recorded_input,
    recurrent_spec_of,
    sequences_of,
    to_sequences,
)
from rljax.algorithms.ppo.learner import PPOHyperparams, normalize_advantages
from rljax.algorithms.ppo.losses import PPOBatch
from rljax.ops.gae import gae_advantages_time_major
from rljax.runners.ordering import streams_in_time
from rljax.types import RecurrentInput, Transition


def sequence_apply(apply: Callable[..., Any]) -> Callable[[Any, RecurrentInput], Any]:
    """The learner's forward pass: ``(params, RecurrentInput [B, L]) -> (dist_inputs [B * L,
    D], values [B * L])``, rows flattened as ``make_ppo_update(sequence_len=L)`` flattens the
    batch."""

    def forward(params: Any, rin: RecurrentInput) -> tuple[jax.Array, jax.Array]:
        dist_inputs, values, _ = apply(params, rin)
        return dist_inputs.reshape((-1, dist_inputs.shape[-1])), values.reshape(-1)

    return forward


def make_sequence_postprocess(
    hp: PPOHyperparams, num_envs: int, seq_len: int
) -> Callable[[Transition], PPOBatch]:
    """``postprocess(Transition [T, K]) -> PPOBatch`` of sequences, leaves [1, S, L, ...].

    Lock-step fragments only (every env step reports every sub-env): each sub-env's T rows in
    time order, GAE along them (cut at truncations and around the auto-reset rows), then
    ``ceil(T / L)`` sequences per sub-env, the last zero-padded (mask 0).
    """

    def postprocess(traj: Transition) -> PPOBatch:
        k = traj.reward.shape[1]
        assert k == num_envs, "recurrent PPO samples lock-step (SYNC) fragments"
        # [T, K] -> [K, T]: each sub-env's rows in time order (columns may come in any order).
        rows, cut = streams_in_time(traj)
        tm = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731  [K, T] -> [T, K]
        adv, targets = gae_advantages_time_major(
            tm(rows.reward),
            tm(rows.extras["vf_preds"]),
            tm(rows.next_extras["vf_preds"]),
            tm(rows.terminated),
            tm(cut),
            hp.gamma,
            hp.lambda_,
        )
        adv, targets = tm(adv), tm(targets)
        mask = rows.valid.astype(jnp.float32)
        adv = normalize_advantages(adv, mask)

        def seqs(x: jax.Array) -> jax.Array:  # [K, T, ...] -> [K * n_seq, L, ...]
            return to_sequences(x, seq_len)

        ex = rows.extras
        batch = PPOBatch(
            obs=sequences_of(recorded_input(rows.obs, ex), seq_len),
            action=seqs(rows.action),
            action_logp=seqs(ex["action_logp"]),
            action_dist_inputs=seqs(ex["action_dist_inputs"]),
            vf_preds=seqs(ex["vf_preds"]),
            advantages=seqs(adv),
            value_targets=seqs(targets),
            mask=seqs(mask),
        )
        return jax.tree.map(lambda x: x[None], batch)  # one learner shard

    return postprocess


__all__ = [
    "make_recurrent_policy_parts",
    "one_step",
    "make_sequence_postprocess",
    "recurrent_spec_of",
    "sequence_apply",
]
