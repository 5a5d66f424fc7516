"""Recurrent IMPALA and APPO (``model_config={"use_lstm": True}``): the learner's batch keeps
each sub-env's rows in time order, and its forward pass runs the LSTM over them in sequences.

Acting is PPO's (``make_recurrent_policy_parts``): every row records the state it acted from
(``state_in``), whether an episode starts there (``is_first``) and, where the module reads
them, the previous action and reward.

Learning: the batch is laid out ``[T, K]`` as the non-recurrent one on lock-step fragments
(each column one sub-env's T consecutive rows), except that rows which are no transition (the
auto-reset step after an episode end) stay in their place in time, as the LSTM saw them while
acting; they are masked and cut around, as PPO's recurrent batches are. The forward pass cuts
every column into sequences of ``max_seq_len`` rows (RLlib's), each started from the state
recorded at its first row and reset where an episode starts inside it, so the first gradient
step computes exactly what acting computed (V-trace's ratios are 1 on the fused path); V-trace
then runs along the whole columns, as without the LSTM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from rljax.algorithms.impala.learner import VTraceTrainBatch
from rljax.algorithms.impala.losses import VTraceBatch
from rljax.types import RecurrentInput, Transition


def make_recurrent_vtrace_postprocess(num_envs: int) -> Callable[[Transition], VTraceTrainBatch]:
    """``postprocess(Transition [T, K]) -> VTraceTrainBatch [T, K]`` for a recurrent module.

    Lock-step fragments only (every env step reports all ``num_envs`` sub-envs; with runner
    threads, those of the batch's fragments, each a stream of its own): column k holds sub-env
    k's rows in time order, its obs a ``RecurrentInput`` whose every leaf (``state_in`` too) is
    ``[T, K, ...]``. A row is cut where its episode was truncated, where it is no transition, and
    before a row that is none (the episode ended there); the last row always is.
    """

    def postprocess(traj: Transition) -> VTraceTrainBatch:
        t_len, k = traj.reward.shape
        if k != num_envs:
            raise ValueError(
                f"a recurrent IMPALA/APPO batch needs lock-step fragments of {num_envs} "
                f"sub-envs a step; got {k}"
            )
        flat = jax.tree.map(lambda x: x.reshape((t_len * k, *x.shape[2:])), traj)
        time = jnp.repeat(jnp.arange(t_len, dtype=jnp.int32), k)
        order = jnp.argsort(flat.env_id * t_len + time)
        # [K, T] in time order, then time-major [T, K].
        rows = jax.tree.map(
            lambda x: jnp.swapaxes(x[order].reshape((k, t_len, *x.shape[1:])), 0, 1), flat
        )
        valid = rows.valid
        later_invalid = jnp.concatenate([~valid[1:], jnp.ones((1, k), bool)], axis=0)
        ex = rows.extras
        obs = RecurrentInput(
            obs=rows.obs,
            state_in=ex["state_in"],
            first=ex["is_first"],
            prev_action=ex.get("prev_action"),
            prev_reward=ex.get("prev_reward"),
        )
        return VTraceTrainBatch(
            obs=obs,
            vtrace=VTraceBatch(
                action=rows.action,
                behaviour_logp=ex["action_logp"],
                reward=rows.reward,
                terminated=rows.terminated,
                truncated=rows.truncated | ~valid | later_invalid,
                mask=valid.astype(jnp.float32),
            ),
            bootstrap_value=rows.next_extras["vf_preds"],
        )

    return postprocess


def time_major_sequence_apply(
    apply: Callable[..., Any], seq_len: int
) -> Callable[[Any, RecurrentInput], tuple[jax.Array, jax.Array]]:
    """The learner's forward pass on a recurrent batch: ``(params, RecurrentInput [T, K]) ->
    (dist_inputs [T * K, D], values [T * K])``, rows flattened time-major as the non-recurrent
    forward flattens them.

    Each column is cut into ``ceil(T / seq_len)`` sequences (the last zero-padded; its padding's
    outputs dropped), each started from ``state_in`` at its first row; ``apply(params,
    RecurrentInput [B, L]) -> (dist_inputs, values, state_out)`` runs them all at once.
    """

    def forward(params: Any, rin: RecurrentInput) -> tuple[jax.Array, jax.Array]:
        t_len, k = rin.first.shape
        pad = -t_len % seq_len
        n_seq = (t_len + pad) // seq_len

        def seqs(x: jax.Array) -> jax.Array:  # [T, K, ...] -> [K * n_seq, L, ...]
            x = jnp.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1))
            x = jnp.moveaxis(x.reshape((n_seq, seq_len, k, *x.shape[2:])), 2, 0)
            return x.reshape((k * n_seq, seq_len, *x.shape[3:]))

        def rows(x: jax.Array) -> jax.Array:  # [K * n_seq, L, ...] -> [T * K, ...]
            x = x.reshape((k, n_seq * seq_len, *x.shape[2:]))[:, :t_len]
            return jnp.swapaxes(x, 0, 1).reshape((t_len * k, *x.shape[2:]))

        sequences = RecurrentInput(
            obs=jax.tree.map(seqs, rin.obs),
            state_in=jax.tree.map(lambda s: seqs(s)[:, 0], rin.state_in),
            first=seqs(rin.first),
            prev_action=None if rin.prev_action is None else seqs(rin.prev_action),
            prev_reward=None if rin.prev_reward is None else seqs(rin.prev_reward),
        )
        dist_inputs, values, _ = apply(params, sequences)
        return rows(dist_inputs), rows(values)

    return forward


__all__ = ["make_recurrent_vtrace_postprocess", "time_major_sequence_apply"]
