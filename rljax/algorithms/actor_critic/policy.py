"""The actor-critic policy PPO, IMPALA and APPO share: the module and its distribution, the
policy id, the execution layer's parts, and the small pieces of their losses and updates.

Nothing here imports an algorithm: an on-policy algorithm builds on this package, not on PPO.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import gymnasium as gym
import jax
import jax.numpy as jnp

from rljax.core.rl_module.spec import RLModuleSpec
from rljax.env.spaces import zeros_batch
from rljax.execution.parts import PolicyParts, distribution_inference, space_env_actions
from rljax.networks.distributions import ActionDistribution, make_distribution
from rljax.networks.models import build_module
from rljax.runners.acting import RecurrentInput, RecurrentSpec

# The one policy's id in ``state.params`` (RLlib's default module id).
POLICY_ID = "default_policy"


class ActorCriticState(Protocol):
    """What the shared on-policy code reads of a learner state (PPO's, IMPALA's, APPO's are
    ``flax.struct`` dataclasses with these fields).

    Attributes:
      params: ``{POLICY_ID: params}``.
      opt_state: The optimizer's state.
      env_steps: Env steps trained on (the real rows of every batch); dynamic settings
        (schedules) follow it. None where nothing reads it.
      connectors: The env-to-module connectors' state; None: none.
    """

    params: Any
    opt_state: Any
    env_steps: Any
    connectors: Any

    def replace(self, **changes: Any) -> Any: ...


class OnPolicyBatch(Protocol):
    """What the shared on-policy code reads of a post-processed batch (``PPOBatch``,
    ``VTraceTrainBatch``): the observations (connectors transform them) and which rows are
    real transitions (connectors learn from those)."""

    obs: Any

    @property
    def mask(self) -> jax.Array: ...

    def _replace(self, **changes: Any) -> Any: ...


def build_policy(
    observation_space: gym.Space, action_space: gym.Space, cfg: Any
) -> tuple[ActionDistribution, Any]:
    """The action distribution and the actor-critic Flax module a config asks for.

    ``cfg`` is an on-policy config (or a policy's config of a multi-agent run): its
    ``model_config`` and ``rl_module_spec`` are read.
    """
    dist = make_distribution(action_space, cfg.model_config.log_std_clip_param)
    module = build_module(
        observation_space,
        dist.num_outputs,
        isinstance(action_space, gym.spaces.Box),
        cfg.model_config,
        cfg.rl_module_spec,
        cfg.action_mask_key,
    )
    return dist, module


def make_actor_critic_parts(
    apply: Callable[[Any, jax.Array], tuple[jax.Array, jax.Array]],
    dist: ActionDistribution,
    action_space: gym.Space,
    clip_actions: bool,
) -> PolicyParts[Any]:
    """The actor-critic's policy for the execution layer (any learner state whose ``params``
    are ``{POLICY_ID: params}``).

    Args:
      apply: The module's ``apply(params, obs [B, ...]) -> (action_dist_inputs [B, D],
        value [B])``.
      dist: The action distribution of ``action_dist_inputs``.
      action_space: The env's action space (actions are cast to it, and clipped to a Box's
        bounds with ``clip_actions``).
      clip_actions: Clip a Box's actions to its bounds.
    """

    def act(params: Any, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        dist_inputs, value = apply(params[POLICY_ID], obs)
        action = dist.sample(key, dist_inputs)
        extras = {
            "action_logp": dist.log_prob(dist_inputs, action),
            "vf_preds": value,
            "action_dist_inputs": dist_inputs,
        }
        return action, extras

    def outputs(params: Any, obs: jax.Array) -> jax.Array:
        return apply(params[POLICY_ID], obs)[0]

    def params_of(state: Any) -> Any:
        return state.params

    to_env, to_env_host = space_env_actions(action_space, clip_actions)
    return PolicyParts(
        act=act,
        acting_params=params_of,
        bootstrap_keys=("vf_preds",),
        inference=distribution_inference(outputs, dist),
        inference_params=lambda state, policy_id: params_of(state),
        to_env_action=to_env,
        to_env_action_host=to_env_host,
    )


def one_step(rin: RecurrentInput) -> RecurrentInput:
    """An acting row [B] as a sequence of one step, [B, 1]."""
    add = lambda x: None if x is None else jax.tree.map(lambda a: a[:, None], x)  # noqa: E731
    return rin._replace(
        obs=add(rin.obs),
        first=rin.first[:, None],
        prev_action=add(rin.prev_action),
        prev_reward=add(rin.prev_reward),
    )


def recurrent_spec_of(module: Any, action_space: gym.Space) -> RecurrentSpec:
    """How the act step feeds ``module`` (its ``initial_state``; previous actions and rewards
    as its ``model_config`` asks)."""
    mc = getattr(module, "model_config", None)
    return RecurrentSpec(
        initial_state=module.initial_state,
        # The policy's zero actions: the action space's shapes, in the dtypes JAX computes in.
        action_zeros=lambda n: jax.tree.map(jnp.asarray, zeros_batch(action_space, n)),
        prev_action=bool(getattr(mc, "lstm_use_prev_action", False)),
        prev_reward=bool(getattr(mc, "lstm_use_prev_reward", False)),
    )


def make_recurrent_policy_parts(
    apply: Callable[..., Any],
    spec: RecurrentSpec,
    dist: ActionDistribution,
    action_space: gym.Space,
    clip_actions: bool,
) -> PolicyParts[Any]:
    """The actor-critic's policy parts for a recurrent module (PPO's, IMPALA's and APPO's):
    ``apply(params, RecurrentInput [B, L]) -> (dist_inputs, values, state_out)``."""

    def step(params: Any, rin: RecurrentInput) -> tuple[jax.Array, jax.Array, Any]:
        dist_inputs, value, state_out = apply(params[POLICY_ID], one_step(rin))
        return dist_inputs[:, 0], value[:, 0], state_out

    def act(params: Any, rin: RecurrentInput, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        dist_inputs, value, state_out = step(params, rin)
        action = dist.sample(key, dist_inputs)
        extras = {
            "action_logp": dist.log_prob(dist_inputs, action),
            "vf_preds": value,
            "action_dist_inputs": dist_inputs,
            "state_out": state_out,
        }
        return action, extras

    act.recurrent = spec  # type: ignore[attr-defined]

    def inference(policy_id: str | None, explore: bool) -> Any:
        raise ValueError(
            "a recurrent policy (use_lstm) needs its state: use "
            "algo.get_module().forward_inference({'obs': ..., 'state_in': ...}), which returns "
            "'state_out' for the next call"
        )

    def infer_explore(params: Any, rin: RecurrentInput, key: jax.Array) -> Any:
        dist_inputs, _, state_out = step(params, rin)
        return dist_inputs, dist.sample(key, dist_inputs), state_out

    def infer_greedy(params: Any, rin: RecurrentInput, key: jax.Array) -> Any:
        dist_inputs, _, state_out = step(params, rin)
        return dist_inputs, dist.mode(dist_inputs), state_out

    def recurrent_inference(explore: bool) -> Callable[..., Any]:
        return infer_explore if explore else infer_greedy

    to_env, to_env_host = space_env_actions(action_space, clip_actions)
    return PolicyParts(
        act=act,
        acting_params=lambda state: state.params,
        bootstrap_keys=("vf_preds",),
        inference=inference,
        inference_params=lambda state, policy_id: state.params,
        to_env_action=to_env,
        to_env_action_host=to_env_host,
        recurrent_inference=recurrent_inference,
    )


def recorded_input(obs: Any, extras: Mapping[str, Any]) -> RecurrentInput:
    """What a recurrent policy's acting pass fed it, as its rows recorded it (every leaf with
    the rows' leading axes, ``state_in`` the state each row acted from)."""
    return RecurrentInput(
        obs=obs,
        state_in=extras["state_in"],
        first=extras["is_first"],
        prev_action=extras.get("prev_action"),
        prev_reward=extras.get("prev_reward"),
    )


def to_sequences(x: jax.Array, seq_len: int) -> jax.Array:
    """``[K, T, ...] -> [K * ceil(T / seq_len), seq_len, ...]``: each stream's rows cut into
    sequences of ``seq_len``, the last zero-padded."""
    pad = -x.shape[1] % seq_len
    x = jnp.pad(x, [(0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 2))
    return x.reshape((-1, seq_len, *x.shape[2:]))


def sequences_of(rin: RecurrentInput, seq_len: int) -> RecurrentInput:
    """A ``RecurrentInput`` of streams (every leaf ``[K, T, ...]``, ``state_in`` too) as the
    learner's sequences (RLlib's): ``to_sequences`` of each leaf, each sequence starting from
    the state recorded at its first row and resetting where an episode starts inside it."""

    def seqs(x: Any) -> Any:
        return None if x is None else to_sequences(x, seq_len)

    return RecurrentInput(
        obs=jax.tree.map(seqs, rin.obs),
        state_in=jax.tree.map(lambda s: seqs(s)[:, 0], rin.state_in),
        first=seqs(rin.first),
        prev_action=seqs(rin.prev_action),
        prev_reward=seqs(rin.prev_reward),
    )


RECURRENT_LIMITS = (
    "recurrent policies train with single-agent PPO, IMPALA or APPO and multi-agent PPO, on "
    "lock-step sampling: gym_env_vectorize_mode='SYNC' without async_batch_size, one learner"
)


def recurrent_refusal(cfg: Any, user_module: bool = True) -> str | None:
    """Why a recurrent module cannot train with the config ``cfg`` (None: it can): its batches
    must be lock-step columns of whole streams (not ASYNC's first-ready ones) of one policy,
    split over no learners. With ``user_module`` (``use_lstm``, checked by ``validate()``), a
    ``module_class`` of the user's is refused too: it is built as it is, so ``use_lstm`` would
    change nothing (a recurrent user module needs no ``use_lstm``)."""
    if cfg.is_multi_agent and cfg.algo_name != "PPO":
        return f"a multi-agent {cfg.algo_name} config"
    if cfg.gym_env_vectorize_mode != "SYNC" or cfg.async_batch_size is not None:
        return f"gym_env_vectorize_mode={cfg.gym_env_vectorize_mode!r}"
    if cfg.num_learners > 1:
        return f"num_learners={cfg.num_learners}"
    spec = cfg.rl_module_spec
    if user_module and isinstance(spec, RLModuleSpec) and spec.module_class:
        return "a module_class of its own (a recurrent user module needs no use_lstm)"
    return None


def masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    """The mean of ``x`` over the rows where ``mask`` is 1 (0 when there are none)."""
    return jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def adapt_kl_coeff(kl_coeff: jax.Array, kl: jax.Array, kl_target: Any) -> jax.Array:
    """RLlib's adaptive KL coefficient: x1.5 when ``kl > 2 kl_target``, x0.5 when
    ``kl < kl_target / 2``, else unchanged."""
    return jnp.where(
        kl > 2.0 * kl_target,
        kl_coeff * 1.5,
        jnp.where(kl < 0.5 * kl_target, kl_coeff * 0.5, kl_coeff),
    )


__all__ = [
    "POLICY_ID",
    "RECURRENT_LIMITS",
    "ActorCriticState",
    "OnPolicyBatch",
    "adapt_kl_coeff",
    "build_policy",
    "make_actor_critic_parts",
    "make_recurrent_policy_parts",
    "masked_mean",
    "one_step",
    "recorded_input",
    "recurrent_refusal",
    "recurrent_spec_of",
    "sequences_of",
    "to_sequences",
]
