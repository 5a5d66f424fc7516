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

from rljax.algorithms.actor_critic.policy import recorded_input, sequences_of
from rljax.algorithms.impala.learner import VTraceTrainBatch
from rljax.algorithms.impala.losses import VTraceBatch
from rljax.runners.ordering import streams_in_time
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
        k = traj.reward.shape[1]
        if k != num_envs:
            raise ValueError(
                f"a recurrent IMPALA/APPO batch needs lock-step fragments of {num_envs} "
                f"sub-envs a step; got {k}"
            )
        ordered = streams_in_time(traj)
        # [K, T] -> time-major [T, K].
        rows, cut = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), ordered)
        return VTraceTrainBatch(
            obs=recorded_input(rows.obs, rows.extras),
            vtrace=VTraceBatch(
                action=rows.action,
                behaviour_logp=rows.extras["action_logp"],
                reward=rows.reward,
                terminated=rows.terminated,
                truncated=cut,
                mask=rows.valid.astype(jnp.float32),
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
        streams = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), rin)  # [K, T, ...]

        def rows(x: jax.Array) -> jax.Array:  # [K * n_seq, L, ...] -> [T * K, ...]
            x = x.reshape((k, -1, *x.shape[2:]))[:, :t_len]
            return jnp.swapaxes(x, 0, 1).reshape((t_len * k, *x.shape[2:]))

        dist_inputs, values, _ = apply(params, sequences_of(streams, seq_len))
        return rows(dist_inputs), rows(values)

    return forward


__all__ = ["make_recurrent_vtrace_postprocess", "time_major_sequence_apply"]
