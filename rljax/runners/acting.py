"""The acting step shared by every runner, and the fused EnvPool rollout.

A runner keeps, for each sub-env, the observation it acted on and the policy's outputs ("pending").
When a sub-env's result arrives (in any order, any subset: EnvPool ASYNC returns whichever sub-envs
finished first), the pending entry becomes a finished transition, and the policy acts on the new
observation. The same jitted ``act_step`` runs inside ``lax.scan`` on the fused path and once per
env step on the Python path, so both produce identical data. Nothing here knows the algorithm:
``policy_fn`` returns the action and a dict of extras (log-probs, values, ...).

The data types (``Transition``, ``ActorState``, ``PolicyFn``, ``RecurrentInput``, ...) are
``rljax.types``'s, re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.vector import envpool_result
from rljax.types import (
    ActorState,
    ActStep,
    FusedRunnerState,
    PolicyFn,
    RecurrentInput,
    RecurrentSpec,
    StepResult,
    Transition,
)
from rljax.utils.jit import compile_cheap, host_zeros


def recurrent_spec(policy_fn: Any) -> RecurrentSpec | None:
    return getattr(policy_fn, "recurrent", None)


def _row_mask(flags: jax.Array, x: jax.Array) -> jax.Array:
    return flags.reshape(flags.shape + (1,) * (x.ndim - flags.ndim))


def recurrent_input(
    spec: RecurrentSpec,
    obs: Any,
    memory: Any,
    first: jax.Array,
    prev_action: Any,
    prev_reward: jax.Array,
) -> RecurrentInput:
    """One acting step's ``RecurrentInput``: the state, previous action and reward zeroed
    where ``first``."""
    zero = lambda x: jnp.where(_row_mask(first, x), jnp.zeros_like(x), x)  # noqa: E731
    return RecurrentInput(
        obs=obs,
        state_in=jax.tree.map(zero, memory),
        first=first,
        prev_action=jax.tree.map(zero, prev_action) if spec.prev_action else None,
        prev_reward=zero(prev_reward.astype(jnp.float32)) if spec.prev_reward else None,
    )


def _recurrent_extras(extras: dict[str, Any], rin: RecurrentInput) -> tuple[dict[str, Any], Any]:
    """The policy's extras without ``state_out`` (returned apart) and with what the learner
    replays: ``state_in``, ``is_first`` and the previous action / reward."""
    extras = dict(extras)
    state_out = extras.pop("state_out")
    extras["state_in"] = rin.state_in
    extras["is_first"] = rin.first
    if rin.prev_action is not None:
        extras["prev_action"] = rin.prev_action
    if rin.prev_reward is not None:
        extras["prev_reward"] = rin.prev_reward
    return extras, state_out


def init_actor_state(
    policy_fn: PolicyFn, params: Any, obs_example: jax.Array, num_envs: int
) -> ActorState:
    """Zeros for N sub-envs, with shapes taken from one policy call; nothing is pending yet.

    ``obs_example`` is one observation (an array, or a pytree such as multi-agent slots'
    ``{"obs": ..., "policy": ...}``). The zeros are made on the host and transferred in one
    call: made with ``jnp.zeros`` each shape would compile a program of its own.
    """
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    obs_batch = jax.tree.map(lambda o: jax.ShapeDtypeStruct((1, *o.shape), o.dtype), obs_example)
    rows = lambda s: host_zeros((num_envs, *s.shape[1:]), s.dtype)  # noqa: E731
    spec = recurrent_spec(policy_fn)
    memory = None
    if spec is None:
        action, extras = jax.eval_shape(policy_fn, params, obs_batch, key)
    else:
        rin = recurrent_input(
            spec,
            jax.tree.map(lambda o: jnp.zeros(o.shape, o.dtype), obs_batch),
            spec.initial_state(1),
            jnp.ones((1,), bool),
            spec.action_zeros(1),
            jnp.zeros((1,), jnp.float32),
        )
        action, extras = jax.eval_shape(policy_fn, params, rin, key)
        extras, state_out = _recurrent_extras(extras, rin)
        memory = jax.tree.map(rows, state_out)
    return jax.device_put(
        ActorState(
            obs=jax.tree.map(lambda o: host_zeros((num_envs, *o.shape), o.dtype), obs_example),
            action=jax.tree.map(rows, action),
            extras=jax.tree.map(rows, extras),
            valid=np.zeros((num_envs,), bool),
            episode_return=np.zeros((num_envs,), np.float32),
            episode_len=np.zeros((num_envs,), np.int32),
            memory=memory,
        )
    )


def make_act_step(
    policy_fn: PolicyFn,
    bootstrap_keys: tuple[str, ...],
    record_steps: bool = False,
    clip_rewards: bool | float | None = None,
) -> ActStep:
    """Builds ``act_step(params, key, actor_state, result) -> (action, actor_state, transition)``.

    ``result`` holds K rows (one per sub-env that reported); ``transition`` finishes the K pending
    transitions of those sub-envs (leading shape [K]), and ``action`` is the policy's answer to the
    new observations, to send to the same sub-envs. ``record_steps``: the transitions also
    carry their next observation and the result's info (``Transition.next_obs`` / ``info``),
    which episode callbacks replay on the host. ``clip_rewards`` (RLlib's setting): the
    transitions' rewards, which training reads, are clipped to their sign (True) or to
    ``[-c, c]`` (a number); episode returns add up the env's own rewards.
    """

    spec = recurrent_spec(policy_fn)

    def train_reward(reward: jax.Array) -> jax.Array:
        reward = reward.astype(jnp.float32)
        if clip_rewards is True:
            return jnp.sign(reward)
        if clip_rewards is not None and clip_rewards is not False:
            return jnp.clip(reward, -float(clip_rewards), float(clip_rewards))
        return reward

    def act_step(
        params: Any, key: jax.Array, state: ActorState, result: Any
    ) -> tuple[jax.Array, ActorState, Transition]:
        ids = result.env_id
        # Multi-agent slots: rows with present False are not results (the agent did not act or
        # finish this step) and change nothing; their pending entries keep waiting.
        present = getattr(result, "present", None)
        raw_reward = getattr(result, "raw_reward", None)
        game_over = getattr(result, "game_over", None)
        restarted = getattr(result, "restarted", None)
        # Same-step auto-reset: where an episode ended, result.obs is already the next episode's
        # first observation and final_obs the ended one's last.
        final_obs = getattr(result, "final_obs", None)
        done = result.terminated | result.truncated
        memory = None
        if spec is None:
            action, extras = policy_fn(params, result.obs, key)
        else:
            # A row after an episode end (the pending transition was not real: the env reset)
            # or a rebuilt sub-env's is an episode's first: the policy's state starts afresh.
            first = ~state.valid[ids]
            if final_obs is not None:
                first = first | done
            if restarted is not None:
                first = first | restarted
            rin = recurrent_input(
                spec,
                result.obs,
                jax.tree.map(lambda m: m[ids], state.memory),
                first,
                jax.tree.map(lambda a: a[ids], state.action),
                result.reward,
            )
            action, extras = policy_fn(params, rin, key)
            extras, memory = _recurrent_extras(extras, rin)
        was_valid = state.valid[ids] if present is None else state.valid[ids] & present
        if restarted is not None:
            # A sub-env that raised in its step was rebuilt: this row is its fresh first
            # observation, so the pending action has no real result and the broken episode is
            # never reported. One whose same-step reset raised (done: the episode ended well) was
            # rebuilt for the next episode only: the transition is real.
            was_valid = was_valid & ~(restarted & ~done)
        next_extras = {k: extras[k] for k in bootstrap_keys}
        if final_obs is not None and bootstrap_keys:
            next_extras = _final_obs_extras(
                policy_fn, spec, params, key, state, result, final_obs, next_extras
            )
        # Metrics follow whole games: unclipped rewards, and lost lives do not end an episode.
        metric_reward = result.reward if raw_reward is None else raw_reward
        game_over = done if game_over is None else game_over
        # Multi-agent slots count every present row's reward and end: an agent's rewards before
        # its first action and the end of an episode in which it never acted are its episode's
        # too (as the host's multi-agent episodes count them).
        counted = was_valid if present is None else present
        ep_ret = state.episode_return[ids] + jnp.where(counted, metric_reward, 0.0)
        ep_len = state.episode_len[ids] + was_valid.astype(jnp.int32)
        episode_done = game_over & counted
        transition = Transition(
            obs=jax.tree.map(lambda o: o[ids], state.obs),
            action=jax.tree.map(lambda a: a[ids], state.action),
            reward=train_reward(result.reward),
            terminated=result.terminated,
            truncated=result.truncated,
            valid=was_valid,
            env_id=ids,
            extras=jax.tree.map(lambda x: x[ids], state.extras),
            next_extras=next_extras,
            episode_return=ep_ret,
            episode_len=ep_len,
            episode_done=episode_done,
            next_obs=(result.obs if final_obs is None else final_obs) if record_steps else None,
            info=recorded_info(result, clip_rewards) if record_steps else None,
            present=present,
            stepped=getattr(result, "stepped", None),
        )
        # With next-step auto-reset, after an episode end the env resets on the next step and
        # ignores this action, so the transition that starts from a final observation is not
        # real; with same-step auto-reset the observation already starts the next episode.
        episode_over = game_over if restarted is None else game_over | restarted
        new = ActorState(
            obs=result.obs,
            action=action,
            extras=extras,
            valid=~done if final_obs is None else jnp.ones_like(done),
            episode_return=jnp.where(episode_over, 0.0, ep_ret),
            episode_len=jnp.where(episode_over, 0, ep_len),
            memory=memory,
        )
        if present is not None:
            old = jax.tree.map(lambda s: s[ids], state)

            def keep_absent(n, o):
                mask = present.reshape(present.shape + (1,) * (n.ndim - 1))
                return jnp.where(mask, n, o)

            new = jax.tree.map(keep_absent, new, old)
        state = jax.tree.map(lambda s, n: s.at[ids].set(n), state, new)
        return action, state, transition

    return act_step


def _final_obs_extras(
    policy_fn: PolicyFn,
    spec: RecurrentSpec | None,
    params: Any,
    key: jax.Array,
    state: ActorState,
    result: Any,
    final_obs: Any,
    next_extras: dict[str, Any],
) -> dict[str, Any]:
    """The bootstrap extras of each row's next observation under same-step auto-reset: the
    policy's on ``final_obs`` where the episode was truncated (a value to bootstrap from),
    ``next_extras`` (of ``result.obs``) elsewhere. A terminated row needs none (its next value
    counts zero), so the second policy pass runs only in steps with a truncation."""
    ids = result.env_id

    def on_final(_: Any) -> dict[str, Any]:
        if spec is None:
            _, extras = policy_fn(params, final_obs, key)
        else:
            # The final observation continues the pending step's episode: the state after the
            # pending observation, its action and this step's reward.
            rin = recurrent_input(
                spec,
                final_obs,
                jax.tree.map(lambda m: m[ids], state.memory),
                jnp.zeros_like(result.truncated),
                jax.tree.map(lambda a: a[ids], state.action),
                result.reward,
            )
            _, extras = policy_fn(params, rin, key)
        return {k: extras[k] for k in next_extras}

    truncated = result.truncated
    final = jax.lax.cond(jnp.any(truncated), on_final, lambda _: next_extras, None)
    return jax.tree.map(lambda f, n: jnp.where(_row_mask(truncated, f), f, n), final, next_extras)


def prime(
    act_step: ActStep,
    params: Any,
    key: jax.Array,
    actor: ActorState,
    result: Any,
    step: Callable[[Any, Any], Any],
) -> tuple[ActorState, Any]:
    """For a same-step runner: acts on the reset ``result`` and steps the env once
    (``step(action, env_id) -> result``), so that the first fragment's first row finishes a
    real transition and a batch of N rows holds N env steps from the first iteration on, as
    RLlib's first sample does. Returns the actor state and the step's result.

    The act step runs as one program compiled with cheap settings (it runs once): run eagerly,
    each of its operations would compile a program of its own (about 40, over a second in a
    fresh process). The reset result has no final observation to bootstrap from (``final_obs``
    is dropped for the call)."""
    args = (params, key, actor, result._replace(final_obs=None))
    action, actor, _ = compile_cheap(act_step, *args)(*args)
    return actor, step(action, result.env_id)


def make_fused_rollout(
    act_step: ActStep,
    xla_step: Callable[..., Any],
    length: int,
    to_env_action: Callable[[jax.Array], jax.Array],
    reset_ended: Callable[[Any, Any, Any], Any] | None = None,
) -> Callable[[Any, FusedRunnerState], tuple[FusedRunnerState, Transition]]:
    """``rollout(params, runner_state) -> (runner_state, Transition [length, K])``, jit-able.

    Steps EnvPool through its XLA interface inside ``lax.scan``: no Python per env step.
    ``reset_ended`` (``vector.envpool_reset_ended``): same-step auto-reset.
    """

    def rollout(params: Any, rs: FusedRunnerState) -> tuple[FusedRunnerState, Transition]:
        def body(carry: FusedRunnerState, _):
            key, sub = jax.random.split(carry.key)
            action, actor, transition = act_step(params, sub, carry.actor, carry.result)
            handle, (obs, rew, term, trunc, info) = xla_step(
                carry.handle, to_env_action(action), carry.result.env_id
            )
            # The info travels with the result only where episode callbacks asked for it.
            keep_info = carry.result.info is not None
            result = envpool_result(
                obs, rew, term, trunc, info, xp=jnp, keep_info=keep_info, reset_ended=reset_ended
            )
            return FusedRunnerState(handle, actor, result, key), transition

        return jax.lax.scan(body, rs, None, length=length)

    return rollout


# Where the recorded steps keep the env's own reward when training reads a clipped one.
RAW_REWARD = "rljax_raw_reward"
# The fields of the recorded steps episode hooks replay (``rljax.callbacks.episodes``).
STEP_FIELDS = (
    "obs",
    "next_obs",
    "action",
    "reward",
    "terminated",
    "truncated",
    "valid",
    "env_id",
    "episode_done",
)


def recorded_info(result: Any, clip_rewards: bool | float | None) -> Any:
    """The info a recorded step keeps: the result's, with the env's own reward under
    ``RAW_REWARD`` where ``clip_rewards`` clips the reward training reads (episode hooks see
    the env's rewards)."""
    info = getattr(result, "info", None)
    if clip_rewards is None or clip_rewards is False:
        return info
    return {**(info or {}), RAW_REWARD: result.reward.astype(jnp.float32)}


def recorded_steps(traj: Transition, fields: tuple[str, ...]) -> dict[str, Any]:
    """``fields`` of a trajectory's recorded steps, ``reward`` the env's own (``RAW_REWARD``)
    where training's was clipped, and the info without it."""
    steps = {name: getattr(traj, name) for name in fields}
    info = dict(traj.info) if traj.info is not None else {}
    if RAW_REWARD in info:
        steps["reward"] = info.pop(RAW_REWARD)
    steps["info"] = info
    return steps


def episode_arrays(traj: Transition) -> dict[str, Any]:
    """Flattened per-step episode outputs; the host picks the rows where an episode ended
    (``"valid"``: the rows that are transitions, which multi-agent reports count per env).

    With recorded steps (``make_act_step(record_steps=True)``) also ``"steps"``: the rows
    episode callbacks replay (``rljax.callbacks.episodes``), [T, K] each.
    """
    out: dict[str, Any] = {
        "returns": traj.episode_return.reshape(-1),
        "lens": traj.episode_len.reshape(-1),
        "done": traj.episode_done.reshape(-1),
        "num_valid": jnp.sum(traj.valid.astype(jnp.int32)),
        "valid": traj.valid.reshape(-1),
    }
    # Multi-agent slots (``{"obs": ..., "policy": ...}``, inside a ``RecurrentInput`` for
    # recurrent policies): each row's policy index, for the per-module step counts.
    slot_obs = getattr(traj.obs, "obs", traj.obs)
    if isinstance(slot_obs, dict) and "policy" in slot_obs and "obs" in slot_obs:
        out["policy"] = slot_obs["policy"].reshape(-1)
    if traj.next_obs is not None:
        out["steps"] = recorded_steps(traj, STEP_FIELDS)
    return out


__all__ = [
    "RAW_REWARD",
    "STEP_FIELDS",
    "ActStep",
    "ActorState",
    "FusedRunnerState",
    "PolicyFn",
    "RecurrentInput",
    "RecurrentSpec",
    "StepResult",
    "Transition",
    "episode_arrays",
    "recorded_info",
    "recorded_steps",
    "init_actor_state",
    "make_act_step",
    "make_fused_rollout",
    "prime",
    "recurrent_input",
    "recurrent_spec",
]
