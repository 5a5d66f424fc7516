"""Multi-agent PPO on a multi-agent JAX env: rollout, GAE and every policy group's update in
one jitted program per iteration.

The env's ``num_envs_per_env_runner`` copies are vmapped and their agents laid out as slot rows
(``rljax.env.jax_multi_agent.AgentSlots``), the rows multi-agent PPO's runner threads give, so
acting (each slot with its policy's parameters) and post-processing (GAE per slot, advantages
normalised per policy) are the host path's own functions. What differs:

- ``policy_mapping_fn`` is asked once per agent when the algorithm is built: the agents are the
  same in every episode, each slot with one policy (``agent_policies``); a mapping that draws at
  random is drawn once, not per episode.
- The per-policy batches are gathered inside the program: each policy's rows are at most its
  agents' slots times the fragment, so its padded batch size is static
  (``fused_grouped_update``); with simultaneous moves every row is valid and the size is the
  one the host path picks for the same rows.
- The iteration's result comes from the rollout's episode arrays (``fused_report``): an env's
  episode ends when all of its agents' do, its return is the sum of theirs.

The fused path runs with ``num_env_runners=0`` and neither an env-to-module connector nor
episode callbacks (their per-episode logs are the host's); otherwise the JAX env is stepped
from runner threads like any ``MultiAgentEnv`` (``JaxMultiAgentGymEnv``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.ppo.learner import PPOHyperparams, make_optimizer, make_ppo_postprocess
from rljax.env.multi_agent_vector import mapping_caller
from rljax.execution.loop import AgentMetrics, IterationResult, PopulationParts, Timers
from rljax.execution.on_policy import OnPolicyLoop, steps_per_iteration
from rljax.runners.acting import FusedRunnerState, init_actor_state
from rljax.runners.jax_env import JaxEnvStates, start_jax_env, strong_types
from rljax.utils.errors import ConfigError


def agent_policies(policy_ids: list[str], agents: list[Any], mapping_fn: Any) -> np.ndarray:
    """Each agent's policy index ``[A]``: ``policy_mapping_fn(agent, None)`` asked once per
    agent (a JAX env's agents act in every step with the policy they were mapped to)."""
    mapping = mapping_caller(mapping_fn)
    out = []
    for agent in agents:
        try:
            pid = mapping(agent, None, worker_index=0)
        except Exception as e:
            raise ConfigError(
                f"policy_mapping_fn({agent!r}, None) raised {type(e).__name__}: {e}. On a "
                "multi-agent JAX env each agent is mapped to a policy once, when the algorithm "
                "is built (with no episode); map by agent id"
            ) from e
        if pid not in policy_ids:
            raise ConfigError(
                f"policy_mapping_fn({agent!r}, None) returned {pid!r}, not one of the "
                f"policies {policy_ids}"
            )
        out.append(policy_ids.index(pid))
    return np.asarray(out, np.int32)


def policy_row_counts(
    agent_policy: np.ndarray, num_policies: int, rows_per_slot: int
) -> np.ndarray:
    """Each policy's rows in a batch ``[P]``: its agents' slots times ``rows_per_slot``
    (fragment length x envs)."""
    return np.bincount(agent_policy, minlength=num_policies) * rows_per_slot


def traced_policy_rows(
    policy: jax.Array, valid: jax.Array, members: list[int], size: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(index [P_g, size], real [P_g, size], counts [P_g])``: each member policy's valid
    rows of ``policy`` (the flat batch's policy column) padded to ``size``, traceable
    (``size`` is static: at least any policy's count)."""
    mine = [(policy == p) & valid for p in members]
    index = jnp.stack([jnp.nonzero(m, size=size, fill_value=0)[0] for m in mine])
    counts = jnp.stack([jnp.sum(m.astype(jnp.int32)) for m in mine])
    real = jnp.arange(size)[None, :] < counts[:, None]
    return index.astype(jnp.int32), real.astype(jnp.float32), counts


def valued_group(group: Any, values: Mapping[str, Any]) -> tuple[PPOHyperparams, Any]:
    """``(hp, optimizer)`` of a policy group with ``values`` of the population settings
    (numbers, or a population's traced scalars); a setting the group's policies override
    (``group.fixed``) keeps the override's value, as ``module_config`` gives it."""
    v = {**values, **group.fixed}
    hp = dataclasses.replace(
        group.hp,
        kl_target=v["kl_target"],
        loss=group.hp.loss._replace(
            clip_param=v["clip_param"],
            vf_clip_param=v["vf_clip_param"],
            vf_loss_coeff=v["vf_loss_coeff"],
            entropy_coeff=v["entropy_coeff"],
        ),
    )
    return hp, make_optimizer(v["lr"], v["grad_clip"], hp.grad_clip_by)


def fused_grouped_update(
    algo: Any, most: np.ndarray, values: Mapping[str, Any] | None = None
) -> Any:
    """``update(state, batch) -> (state, metrics)``, traceable: every group's per-policy rows
    gathered (``traced_policy_rows``, padded for ``most[p]`` rows of policy p) and its vmapped
    update (``algo._stacked_update``). ``values``: the population settings of a population's
    trial (traced scalars; ``valued_group``); None: the groups' own settings."""

    def update(state: list[Any], batch: Any) -> tuple[list[Any], dict[str, Any]]:
        flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), batch)
        policy, valid = flat.obs["policy"], flat.mask > 0
        new = list(state)
        group_metrics = []
        counts = jnp.zeros((algo.num_policies,), jnp.int32)
        for g, group in enumerate(algo.groups):
            size = algo._bucket_size(g, int(most[group.members].max()))
            index, real, group_counts = traced_policy_rows(policy, valid, group.members, size)
            counts = counts.at[jnp.asarray(group.members)].set(group_counts)
            stacked = algo._gathered(flat, index, real, g)
            valued = valued_group(group, values) if values is not None else (None, None)
            new[g], metrics = algo._stacked_update(g, size, *valued)(new[g], stacked)
            group_metrics.append(metrics)
        return new, {"groups": group_metrics, "counts": counts}

    return update


def fused_report(
    algo: Any,
    num_envs: int,
    num_agents: int,
    turn_based: bool = False,
    simultaneous: bool = False,
) -> Any:
    """``report(records, timers) -> IterationResult`` of the fused loop's records: each
    record's episode arrays are ``[T * N * A]`` slot rows (time-major, then env, then agent).

    An episode's length is its env steps: the most any agent took where agents act together
    (every agent, or with ``turn_based`` and ``simultaneous``, the agents ``acting(state)``
    names, where some agent acts in every step until the end, as SMAX's last survivor does),
    the sum of the agents' turns in a turn-based one (one mover a step), whose env steps
    sampled are the agents' transitions (one per turn, each counted when it completes at the
    agent's next turn). With ``turn_based`` and ``simultaneous`` an env step is sampled where
    any of its agents' transitions completes."""

    def report(records: list[dict[str, Any]], timers: Timers) -> IterationResult:
        env_returns: list[float] = []
        env_lens: list[int] = []
        per_agent: dict[Any, list[float]] = {a: [] for a in algo.possible_agents}
        acted_steps = 0  # env steps with a completed transition (acting, simultaneous envs)
        counts = np.zeros(algo.num_policies, np.int64)
        metric_sums: list[Any] = []  # each record's per-group metrics
        every: list[Any] = []  # each record's episode arrays
        for record in records:
            episodes = jax.device_get(record["episodes"])
            every.append(episodes)
            shape = (-1, num_envs, num_agents)
            done = np.asarray(episodes["done"]).reshape(shape)
            returns = np.asarray(episodes["returns"]).reshape(shape)
            lens = np.asarray(episodes["lens"]).reshape(shape)
            ended = done.all(axis=2)  # [T, N]: every agent of the env ended its episode
            env_returns += returns.sum(axis=2)[ended].tolist()
            one_mover = turn_based and not simultaneous
            per_env_len = lens.sum(axis=2) if one_mover else lens.max(axis=2)
            env_lens += per_env_len[ended].astype(int).tolist()
            for a, agent in enumerate(algo.possible_agents):
                per_agent[agent] += returns[..., a][ended].tolist()
            if turn_based and simultaneous:
                valid = np.asarray(episodes["valid"]).reshape(shape)
                acted_steps += int(valid.any(axis=2).sum())
            metrics = jax.device_get(record["metrics"])
            counts += np.asarray(metrics["counts"], np.int64)
            metric_sums.append(metrics["groups"])
        learner = {}
        for i, pid in enumerate(algo.policy_ids):
            if not algo.train_mask[i]:  # not trained (or forward-only): no metrics, as RLlib's
                continue
            g, k = int(algo.group_of[i]), int(algo.local_of[i])
            learner[pid] = {
                key: float(np.mean([float(np.asarray(m[g][key])[k]) for m in metric_sums]))
                for key in metric_sums[0][g]
            }
            learner[pid]["num_module_steps_trained"] = int(counts[i])
        policy_returns: dict[str, list[float]] = {pid: [] for pid in algo.policy_ids}
        for e in range(len(env_returns)):
            per_policy: dict[str, float] = {}
            for a, agent in enumerate(algo.possible_agents):
                pid = algo.policy_ids[int(algo._agent_policy[a])]
                per_policy[pid] = per_policy.get(pid, 0.0) + per_agent[agent][e]
            for pid, ret in per_policy.items():
                policy_returns[pid].append(ret)
        agent_counts, module_counts = algo._agent_steps.count(every, algo._agent_policy)
        agent_steps = sum(agent_counts.values())
        nan = float("nan")
        agents = AgentMetrics(
            module_episode_returns_mean={
                p: float(np.mean(r)) if r else nan for p, r in policy_returns.items()
            },
            agent_episode_returns_mean={
                str(a): float(np.mean(r)) if r else nan for a, r in per_agent.items()
            },
            agent_steps=agent_counts,
            agent_steps_lifetime=dict(algo._agent_steps.agent_lifetime),
            module_steps=module_counts,
            module_steps_lifetime=dict(algo._agent_steps.module_lifetime),
        )
        return IterationResult(
            num_env_steps_sampled=(
                (acted_steps if simultaneous else agent_steps)
                if turn_based
                else agent_steps // num_agents
            ),
            num_env_steps_trained=int(counts[algo.train_mask].sum()),
            episode_returns=np.array(env_returns),
            episode_lens=np.array(env_lens, int),
            learner_metrics=learner,
            timers=timers,
            agents=agents,
        )

    return report


@dataclasses.dataclass(frozen=True)
class FusedPieces:
    """What the fused loop of a ``MultiAgentPPO`` is made of (``fused_pieces``).

    Attributes:
      rollout: ``rollout(params, runner_state) -> (runner_state, Transition [T, slots])``.
      most: Each policy's most rows in a batch ``[P]`` (``policy_row_counts``).
      report: ``report(records, timers) -> IterationResult`` (``fused_report``).
    """

    rollout: Any
    most: np.ndarray
    report: Any


def fused_pieces(algo: Any, jax_env: Any) -> FusedPieces:
    """The rollout, row counts and report of ``algo``'s (a ``MultiAgentPPO``) fused path on
    ``jax_env``; sets ``algo.runner_state`` (the envs' states, checkpointed by
    ``JaxEnvStates``)."""
    from rljax.env.jax_multi_agent import AgentSlots

    cfg = algo.config
    slots = AgentSlots(jax_env, algo._agent_policy)
    start = start_turn_rollout if slots.turn_based else start_jax_env
    rollout, algo.runner_state = start(
        slots,
        algo.parts.act,
        algo._act_step,
        algo._runner_params(),
        algo.num_slots,
        algo.seed,
        algo.fragment_length,
        algo.parts.to_env_action,
    )
    rows_per_slot = algo.fragment_length * cfg.num_envs_per_env_runner
    report = fused_report(
        algo,
        cfg.num_envs_per_env_runner,
        slots.num_agents,
        turn_based=slots.turn_based,
        simultaneous=slots.simultaneous,
    )
    most = policy_row_counts(algo._agent_policy, algo.num_policies, rows_per_slot)
    return FusedPieces(rollout=rollout, most=most, report=report)


def setup_fused(algo: Any, postprocess: Any, jax_env: Any) -> OnPolicyLoop[Any]:
    """The fused loop of ``algo`` (a ``MultiAgentPPO``) on ``jax_env``; sets
    ``algo.runner_state`` (the envs' states, checkpointed by ``JaxEnvStates``)."""
    pieces = fused_pieces(algo, jax_env)
    return OnPolicyLoop.fused(
        pieces.rollout,
        postprocess,
        fused_grouped_update(algo, pieces.most),
        algo.parts.acting_params,
        algo._runner_params,
        steps_per_iteration=steps_per_iteration(algo.config),
        report=pieces.report,
    )


def population_parts(algo: Any, pieces: FusedPieces, jax_env: Any) -> PopulationParts:
    """What a population runs of ``algo``, a ``MultiAgentPPO`` built as a population's trial
    (``population_member=True``) on the fused path: its slot rollout (vmapped over the trials
    with the envs), its report, and its learner functions of the population settings
    (``values -> (postprocess, update)``: GAE with the trial's gamma and lambda, every group's
    update with the trial's values where the group does not override them)."""
    hp, rows, num_policies = algo.hp, algo._postprocess_rows, algo.num_policies

    def learner_functions(values: Mapping[str, Any]) -> tuple[Any, Any]:
        valued = dataclasses.replace(hp, gamma=values["gamma"], lambda_=values["lambda_"])
        discounts = algo._policy_discounts(values["gamma"], values["lambda_"])
        postprocess = make_ppo_postprocess(
            valued, rows, num_policies=num_policies, policy_discounts=discounts
        )
        return postprocess, fused_grouped_update(algo, pieces.most, values)

    return PopulationParts(
        act_step=algo._act_step,
        xla_step=None,
        reset_ended=None,
        fragment_length=algo.fragment_length,
        to_env_action=algo.parts.to_env_action,
        acting_params=algo.parts.acting_params,
        learner_functions=learner_functions,
        jax_env=jax_env,
        steps_per_iteration=steps_per_iteration(algo.config),
        rollout=pieces.rollout,
        report=pieces.report,
    )


def start_turn_rollout(
    slots: Any,
    policy_fn: Any,
    act_step: Any,
    params: Any,
    num_slots: int,
    seed: int,
    length: int,
    to_env_action: Any,
) -> tuple[Any, FusedRunnerState]:
    """``(rollout, runner_state)`` of a turn-based env's slots (``AgentSlots.turn_step``):
    ``lax.scan`` of one act step and one env step, the result rows carrying ``present``."""

    def start(params: Any, key: jax.Array) -> FusedRunnerState:
        env_key, run_key = jax.random.split(key)
        turn, first = slots.turn_reset(env_key, num_slots)
        example = jax.tree.map(lambda o: o[0], first.obs)
        actor = init_actor_state(policy_fn, params, example, num_slots)
        return strong_types(FusedRunnerState(turn, actor, first, run_key))

    def step(params: Any, carry: FusedRunnerState) -> tuple[FusedRunnerState, Any]:
        key, act_key, env_key = jax.random.split(carry.key, 3)
        action, actor, transition = act_step(params, act_key, carry.actor, carry.result)
        turn, result = slots.turn_step(carry.handle, to_env_action(action), env_key)
        return FusedRunnerState(turn, actor, result, key), transition

    def rollout(params: Any, rs: FusedRunnerState) -> tuple[FusedRunnerState, Any]:
        return jax.lax.scan(lambda carry, _: step(params, carry), rs, None, length=length)

    # Committed to the parameters' device, as the runner state every iteration returns (an
    # uncommitted first state would make the iteration's program compile twice).
    device = next(iter(jax.tree.leaves(params)[0].devices()))
    rs = jax.device_put(jax.jit(start)(params, jax.random.PRNGKey(seed)), device)
    return rollout, rs


def env_states(algo: Any) -> JaxEnvStates:
    """What saves and restores the fused run's envs (``JaxEnvStates``)."""
    return JaxEnvStates(algo, str(algo.config.env))


__all__ = [
    "FusedPieces",
    "agent_policies",
    "env_states",
    "fused_grouped_update",
    "fused_pieces",
    "fused_report",
    "policy_row_counts",
    "population_parts",
    "setup_fused",
    "start_turn_rollout",
    "traced_policy_rows",
    "valued_group",
]
