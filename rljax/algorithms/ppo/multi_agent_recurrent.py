"""Recurrent policies (``use_lstm``) on multi-agent PPO: a state per agent slot, and each
policy's sequences.

Acting: each agent slot keeps its own state (the act step's memory, ``rljax.runners.acting``),
zeroed where its agent's episode starts; the slot's policy (its group's module, with the slot
policy's parameters) steps it, and a slot whose agent did not act keeps it as it was. Every
group's module must keep a state of the same shapes (one memory for every slot).

Learning: the fragment's rows are ordered by stream (an agent slot: its agent's own steps in
time order, then the rows it did not act in, masked); GAE runs along each stream, advantages
are normalised per policy (``make_ppo_postprocess``'s lock-step rules), and each stream is cut
into sequences of ``max_seq_len``, each starting from the state recorded at its first row and
resetting where an episode starts inside it, as single-agent recurrent PPO's
(``rljax.algorithms.ppo.recurrent``). A policy trains on the sequences holding any of its rows,
its rows alone unmasked (an agent's policy changes only between episodes, where the state
starts afresh).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.actor_critic.policy import (
    POLICY_ID,
    one_step,
    recorded_input,
    recurrent_spec_of,
    sequences_of,
    to_sequences,
)
from rljax.algorithms.ppo.learner import PPOHyperparams, stream_advantages
from rljax.algorithms.ppo.losses import PPOBatch
from rljax.execution.parts import PolicyParts, space_env_actions
from rljax.runners.acting import RecurrentInput, RecurrentSpec, recurrent_input
from rljax.runners.ordering import order_by_stream
from rljax.types import Transition
from rljax.utils.errors import ConfigError


def init_example(module: Any, obs_example: Any, action_space: gym.Space) -> Any:
    """What a recurrent ``module`` is initialised on: one sequence of one step, as acting
    feeds it (a module without a state: ``obs_example`` itself)."""
    if not hasattr(module, "initial_state"):
        return obs_example
    spec = recurrent_spec_of(module, action_space)
    return one_step(
        recurrent_input(
            spec,
            obs_example,
            spec.initial_state(1),
            jnp.ones((1,), bool),
            spec.action_zeros(1),
            jnp.zeros((1,), jnp.float32),
        )
    )


def check_recurrent_groups(groups: list[Any], forward_only: list[str]) -> None:
    """Every group's module is recurrent with state leaves of one shape, and no policy acts
    by a forward pass of its own (it would have no state)."""
    if forward_only:
        raise ConfigError(
            f"use_lstm=True on a multi-agent run with modules that act by their own forward "
            f"pass ({forward_only}): recurrent slots need every policy's state; give those "
            "policies learned modules or use_lstm=False"
        )
    shapes = []
    for g in groups:
        if not hasattr(g.module, "initial_state"):
            raise ConfigError(
                "use_lstm=True on a multi-agent run whose policies' model_config overrides "
                "turn it off for some: every policy must be recurrent, or none"
            )
        state = g.module.initial_state(1)
        shapes.append([(x.shape, x.dtype) for x in jax.tree.leaves(state)])
    if any(s != shapes[0] for s in shapes):
        raise ConfigError(
            "use_lstm=True on a multi-agent run with different lstm_cell_size per policy "
            f"(state shapes {shapes}): the slots keep one state shape; override it alike"
        )


def make_multi_agent_recurrent_parts(
    groups: list[Any],
    policy_ids: list[str],
    group_of: np.ndarray,
    local_of: np.ndarray,
    action_space: gym.Space,
    clip_actions: bool,
    spec: RecurrentSpec,
    pad_inputs: Callable[[jax.Array], jax.Array],
) -> PolicyParts[Any]:
    """The policies of recurrent multi-agent PPO for the execution layer: ``act(params,
    RecurrentInput, key)`` with slot observations ``{"obs": [S, ...], "policy": [S]}`` and a
    state per slot; each slot steps its own policy's module (gathered parameters, vmapped
    over the slots, once per group).

    Args:
      groups: The policy groups (their recurrent modules and distributions).
      policy_ids: Every policy's id, in order.
      group_of, local_of: Each policy's group, and its index in the group's stack, [P].
      action_space: The agents' action space.
      clip_actions: Clip a Box's actions to its bounds.
      spec: How the act step feeds the modules (their shared state shapes).
      pad_inputs: Distribution inputs zero-padded to the widest group's.
    """
    group_of_j, local_of_j = jnp.asarray(group_of), jnp.asarray(local_of)

    def group_outputs(g: int, params: Any, rin: RecurrentInput, key: jax.Array) -> Any:
        group = groups[g]
        local = local_of_j[rin.obs["policy"]]
        per_slot = jax.tree.map(lambda p: p[local], params[g][POLICY_ID])
        slot_rin = rin._replace(obs=group.obs(rin.obs["obs"]))

        def one(p: Any, r: RecurrentInput) -> Any:
            r = jax.tree.map(lambda x: x[None], r)  # one slot: a batch of one, one step
            dist_inputs, value, state_out = group.module.apply(p, one_step(r))
            return dist_inputs[0, 0], value[0, 0], jax.tree.map(lambda s: s[0], state_out)

        dist_inputs, value, state_out = jax.vmap(one)(per_slot, slot_rin)
        action = group.dist.sample(key, dist_inputs)
        logp = group.dist.log_prob(dist_inputs, action)
        return pad_inputs(dist_inputs), value, action, logp, state_out

    def act(params: Any, rin: RecurrentInput, key: jax.Array) -> tuple[jax.Array, dict]:
        outs = [group_outputs(g, params, rin, key) for g in range(len(groups))]
        if len(outs) == 1:
            dist_inputs, value, action, logp, state_out = outs[0]
        else:
            group = group_of_j[rin.obs["policy"]]
            rows = jnp.arange(group.shape[0])
            ref = outs[0][2]
            outs = [(i, v, a.astype(ref.dtype), lp, s) for i, v, a, lp, s in outs]
            dist_inputs, value, action, logp = (
                jnp.stack(parts)[group, rows] for parts in list(zip(*outs, strict=True))[:4]
            )
            state_out = jax.tree.map(lambda *s: jnp.stack(s)[group, rows], *[o[4] for o in outs])
        extras = {
            "action_logp": logp,
            "vf_preds": value,
            "action_dist_inputs": dist_inputs,
            "state_out": state_out,
        }
        return action, extras

    act.recurrent = spec  # type: ignore[attr-defined]

    def inference(policy_id: str | None, explore: bool) -> Any:
        raise ValueError(
            "a multi-agent run's recurrent policies (use_lstm) act in its runners only; "
            "single-observation inference (compute_single_action, a module's "
            "forward_inference) would answer without its agent's state and is not built"
        )

    def inference_params(state: list[Any], policy_id: str | None) -> Any:
        """One policy's parameters (``get_weights``)."""
        i = 0 if policy_id is None else policy_ids.index(policy_id)
        params = state[group_of[i]].params[POLICY_ID]
        return {POLICY_ID: jax.tree.map(lambda p: p[local_of[i]], params)}

    to_env, to_env_host = space_env_actions(action_space, clip_actions)
    return PolicyParts(
        act=act,
        acting_params=lambda state: [s.params for s in state],
        bootstrap_keys=("vf_preds",),
        inference=inference,
        inference_params=inference_params,
        to_env_action=to_env,
        to_env_action_host=to_env_host,
    )


def make_multi_agent_sequence_postprocess(
    hp: PPOHyperparams,
    num_slots: int,
    seq_len: int,
    num_policies: int,
    policy_discounts: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
) -> Callable[[Transition], PPOBatch]:
    """``postprocess(Transition [T, slots]) -> PPOBatch`` of sequences, leaves [1, S, L, ...]
    (the module docstring). Lock-step fragments only (every env step reports every slot)."""

    def postprocess(traj: Transition) -> PPOBatch:
        k = traj.reward.shape[1]
        assert k == num_slots, "recurrent multi-agent PPO samples lock-step (SYNC) fragments"
        ordered = order_by_stream(traj)  # [K * T]: each slot's T rows, its real ones first
        s = ordered.rows
        adv, targets, mask = stream_advantages(ordered, k, hp, num_policies, policy_discounts)

        def streams(x: Any) -> Any:  # [K * T, ...] -> [K, T, ...]
            return jax.tree.map(lambda a: a.reshape((k, -1, *a.shape[1:])), x)

        def seqs(x: jax.Array) -> jax.Array:  # [K * T, ...] -> [K * n_seq, L, ...]
            return to_sequences(streams(x), seq_len)

        ex = s.extras
        batch = PPOBatch(
            obs=sequences_of(streams(recorded_input(s.obs, ex)), seq_len),
            action=jax.tree.map(seqs, s.action),
            action_logp=seqs(ex["action_logp"]),
            action_dist_inputs=seqs(ex["action_dist_inputs"]),
            vf_preds=seqs(ex["vf_preds"]),
            advantages=seqs(adv),
            value_targets=seqs(targets),
            mask=seqs(mask),
        )
        return jax.tree.map(lambda x: x[None], batch)

    return postprocess


def sequence_policies(flat: PPOBatch) -> np.ndarray:
    """Each row's policy of a sequence batch's leaves [S, L]."""
    return np.asarray(flat.obs.obs["policy"])


def gathered_sequences(
    flat: PPOBatch,
    index: Any,
    real: Any,
    members: Any,
    group_obs: Callable[..., Any],
    width: int,
) -> PPOBatch:
    """A group's per-policy sequences: the sequences ``index`` [P_g, size] of ``flat``
    (leaves [S, L, ...]), each policy's own rows unmasked (``members``: the group's policy
    indices), padded sequences (``real`` 0) masked; every leaf [P_g, 1, size, L, ...], the
    observations the group's (``group_obs(obs, lead)``), the distribution inputs its first
    ``width`` columns."""
    index, real = jnp.asarray(index), jnp.asarray(real)
    rin = flat.obs
    own = rin.obs["policy"][index] == jnp.asarray(members)[:, None, None]
    obs_in = rin._replace(
        obs=group_obs(jax.tree.map(lambda x: x[index], rin.obs["obs"]), lead=3),
        state_in=jax.tree.map(lambda x: x[index], rin.state_in),
        first=rin.first[index],
        prev_action=None if rin.prev_action is None else rin.prev_action[index],
        prev_reward=None if rin.prev_reward is None else rin.prev_reward[index],
    )
    gathered = jax.tree.map(lambda x: x[index], flat._replace(obs=None))._replace(obs=obs_in)
    gathered = gathered._replace(
        mask=gathered.mask * real[..., None] * own,
        action_dist_inputs=gathered.action_dist_inputs[..., :width],  # the group's columns
    )
    return jax.tree.map(lambda x: x[:, None], gathered)


__all__ = [
    "check_recurrent_groups",
    "init_example",
    "gathered_sequences",
    "make_multi_agent_recurrent_parts",
    "make_multi_agent_sequence_postprocess",
    "sequence_policies",
]
