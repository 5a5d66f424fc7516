"""A JAX env's rollout: ``lax.scan`` over vmapped envs, inside the training program.

On the fused path (``OnPolicyLoop.fused``) an EnvPool env is stepped through its XLA custom
call; an env written in JAX (``rljax.env.jax_env``) is stepped by its own traced ``step``
instead, so rollout, postprocess and update are one XLA program with no host callback or
thread: the same ``rollout(params, runner_state) -> (runner_state, Transition [T, N])`` shape,
with the envs' states where the EnvPool handle is (``FusedRunnerState.handle``).

``num_envs_per_env_runner`` is the vmap width. Auto-reset is same-step
(``jax_env.batched_step``): every row is a transition (a batch of N rows holds N env steps),
and a truncated row's final observation is bootstrapped from (``StepResult.final_obs``). As on
the EnvPool path, the first env step is taken when the runner starts (``acting.prime``), so the
first fragment holds as many env steps as rows.

PPO, IMPALA and APPO run on JAX envs (``check_jax_env_run``): all three take their fused path's
``OnPolicyLoop.fused`` with this rollout in place of EnvPool's. DQN, SAC and TD3 take their fused
iteration with it, auto-resetting next-step (``next_step=True``: the row after an episode end
resets the env and is no transition, as on EnvPool's fused path), so the replay buffer sees each
episode's last observation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.jax_env import (
    AutoResetStep,
    batched_next_step,
    batched_reset,
    batched_step,
    strong_types,
)
from rljax.env.state import EnvStateError, decode_leaves, encode
from rljax.env.steps import StepResult
from rljax.runners.acting import (
    ActStep,
    FusedRunnerState,
    PolicyFn,
    Transition,
    init_actor_state,
)
from rljax.utils.errors import ConfigError
from rljax.utils.jit import run_once, shared_key

Rollout = Callable[[Any, FusedRunnerState], tuple[FusedRunnerState, Transition]]

# Algorithms whose programs step JAX envs.
JAX_ENV_ALGORITHMS = ("PPO", "IMPALA", "APPO", "DQN", "SAC", "TQC", "TD3")


def check_jax_env_run(config: Any, env_name: str) -> None:
    """Raises ``ConfigError`` for what does not run on a JAX env yet: an algorithm not in
    ``JAX_ENV_ALGORITHMS``, a multi-agent run, runner threads (``num_env_runners`` > 0)."""
    algo = getattr(config, "algo_name", type(config).__name__)
    known = ", ".join(JAX_ENV_ALGORITHMS)
    if algo not in JAX_ENV_ALGORITHMS:
        raise ConfigError(
            f"{algo} does not run on JAX envs yet (env {env_name!r}): only {known} do; use an "
            "EnvPool or gymnasium env for it"
        )
    if getattr(config, "is_multi_agent", False):
        raise ConfigError(
            f"env {env_name!r} is a single-agent JAX env; multi-agent PPO runs on multi-agent "
            "JAX envs ('jaxmarl:<id>', 'pgx:<game>', a JaxMultiAgentEnv class)"
        )
    if config.num_env_runners:
        raise ConfigError(
            f"env {env_name!r} is a JAX env, stepped inside the training program: "
            f"num_env_runners={config.num_env_runners} is not supported; use "
            "num_env_runners=0 and num_envs_per_env_runner (the vmap width)"
        )


def _result(
    out: AutoResetStep, env_id: jax.Array, keep_info: bool, next_step: bool = False
) -> StepResult:
    return StepResult(
        out.obs,
        out.reward,
        out.terminated,
        out.truncated,
        env_id,
        info=dict(out.info) if keep_info else None,
        final_obs=None if next_step else out.final_obs,
    )


def make_start(
    env: Any,
    policy_fn: PolicyFn,
    act_step: ActStep,
    num_envs: int,
    to_env_action: Callable[[jax.Array], jax.Array],
    keep_info: bool = False,
    next_step: bool = False,
) -> Callable[[Any, jax.Array], FusedRunnerState]:
    """``start(params, key) -> runner_state``, jit-able: ``num_envs`` envs reset, the policy's
    first action taken and the envs stepped once (the same-step runners' prime); with
    ``next_step``, the reset's result pending (the first row is the reset's, no transition, as
    on EnvPool's next-step path)."""

    def start(params: Any, key: jax.Array) -> FusedRunnerState:
        env_key, act_key, step_key, run_key = jax.random.split(key, 4)
        states, obs = batched_reset(env, env_key, num_envs)
        env_id = jnp.arange(num_envs, dtype=jnp.int32)
        actor = init_actor_state(policy_fn, params, jax.tree.map(lambda o: o[0], obs), num_envs)
        zeros = jnp.zeros((num_envs,), bool)
        first = StepResult(obs, jnp.zeros((num_envs,), jnp.float32), zeros, zeros, env_id)
        if next_step:
            if keep_info:  # the info's structure, as the env's steps give it (zeros)
                action = jax.eval_shape(lambda: act_step(params, act_key, actor, first)[0])
                _, shape = jax.eval_shape(
                    lambda: batched_step(env, states, to_env_action(action), step_key)
                )
                info = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), dict(shape.info))
                first = first._replace(info=info)
            return FusedRunnerState(states, actor, first, run_key)
        action, actor, _ = act_step(params, act_key, actor, first)
        states, out = batched_step(env, states, to_env_action(action), step_key)
        return FusedRunnerState(states, actor, _result(out, env_id, keep_info), run_key)

    return start


def make_jax_env_step(
    env: Any,
    act_step: ActStep,
    to_env_action: Callable[[jax.Array], jax.Array],
    next_step: bool = False,
) -> Callable[[Any, FusedRunnerState], tuple[FusedRunnerState, Transition]]:
    """``step(params, runner_state) -> (runner_state, Transition [N])``, jit-able: one act step
    and one vmapped env step (same-step auto-reset; ``next_step``: next-step). A population
    ``vmap``s it over its trials, so trial k steps exactly as its own run does."""

    def step(params: Any, carry: FusedRunnerState) -> tuple[FusedRunnerState, Transition]:
        key, act_key, env_key = jax.random.split(carry.key, 3)
        action, actor, transition = act_step(params, act_key, carry.actor, carry.result)
        env_action = to_env_action(action)
        if next_step:
            ended = carry.result.terminated | carry.result.truncated
            states, out = batched_next_step(env, carry.handle, env_action, env_key, ended)
        else:
            states, out = batched_step(env, carry.handle, env_action, env_key)
        keep_info = carry.result.info is not None
        result = _result(out, carry.result.env_id, keep_info, next_step)
        return FusedRunnerState(states, actor, result, key), transition

    return step


def make_jax_env_rollout(
    env: Any,
    act_step: ActStep,
    length: int,
    to_env_action: Callable[[jax.Array], jax.Array],
    next_step: bool = False,
) -> Rollout:
    """``rollout(params, runner_state) -> (runner_state, Transition [length, N])``, jit-able:
    ``make_jax_env_step`` in ``lax.scan``."""
    step = make_jax_env_step(env, act_step, to_env_action, next_step)

    def rollout(params: Any, rs: FusedRunnerState) -> tuple[FusedRunnerState, Transition]:
        return jax.lax.scan(lambda carry, _: step(params, carry), rs, None, length=length)

    return rollout


def start_jax_env(
    env: Any,
    policy_fn: PolicyFn,
    act_step: ActStep,
    params: Any,
    num_envs: int,
    seed: int,
    length: int,
    to_env_action: Callable[[jax.Array], jax.Array],
    keep_info: bool = False,
    next_step: bool = False,
) -> tuple[Rollout, FusedRunnerState]:
    """``(rollout, runner_state)`` of ``num_envs`` copies of the JAX env ``env``: the runner
    state started by one jitted call (on the device of ``params``), from ``seed``."""
    start = make_start(env, policy_fn, act_step, num_envs, to_env_action, keep_info, next_step)
    # A one-shot program, compiled with the cheap settings; a population's trials, built alike
    # within ``sharing_programs()``, share it.
    rs = run_once(
        lambda p, k: strong_types(start(p, k)),
        params,
        jax.random.PRNGKey(seed),
        cache_key=shared_key(("jax_env_start", num_envs, length, keep_info, next_step)),
    )
    return make_jax_env_rollout(env, act_step, length, to_env_action, next_step), rs


class JaxEnvStates:
    """The fused JAX-env runner's state (its envs' states, the actor state, the pending step
    result and the acting key: ``owner.runner_state``) saved and restored as a checkpoint saves
    env runners' (``runners.json``: one runner whose ``env`` names the JAX env), so a restored
    run goes on mid-episode exactly as the saved one would have.

    Args:
      owner: The algorithm, whose ``runner_state`` this reads and replaces.
      env_name: The JAX env's name (a saved state of another env does not fit).
    """

    def __init__(self, owner: Any, env_name: str):
        self.owner = owner
        self.env = {"jax_env": str(env_name)}

    def get_state(self, include_envs: bool = True) -> dict[str, Any]:
        """``{"runners": [one runner's state], "dropped": {}, "num_restarts": 0}``."""
        meta: dict[str, Any] = {"runners": None, "dropped": {}, "num_restarts": 0}
        if include_envs:
            leaves = jax.tree.leaves(jax.device_get(self.owner.runner_state))
            arrays = [encode(np.asarray(x), "JAX env runner state") for x in leaves]
            meta["runners"] = [{"env": self.env, "arrays": arrays, "num_sub_env_restarts": 0}]
        return meta

    def check_state(self, state: dict[str, Any]) -> list[Any] | None:
        """Raises ``EnvStateError`` unless ``state`` fits this run; returns its arrays."""
        runners = state["runners"]
        if runners is None:
            return None
        if len(runners) != 1 or runners[0] is None:
            raise EnvStateError(
                f"the saved state has {len(runners)} env runner(s); a JAX env's run has one"
            )
        if runners[0]["env"] != self.env:
            raise EnvStateError(
                f"the saved state is of {runners[0]['env']}; this run's is {self.env}"
            )
        saved = decode_leaves(runners[0]["arrays"], jax.tree.leaves(self.owner.runner_state))
        if saved is None:
            raise EnvStateError(
                "the saved JAX env state does not fit this run (other sizes or policy)"
            )
        return [saved]

    def set_state(self, state: dict[str, Any], checked: list[Any] | None = None) -> None:
        """Puts ``get_state``'s output back (checked first, so a misfit changes nothing)."""
        if checked is None:
            checked = self.check_state(state)
        if checked is None:
            return
        live = self.owner.runner_state
        device = next(iter(jax.tree.leaves(live)[0].devices()))
        restored = jax.tree.unflatten(jax.tree.structure(live), checked[0])
        self.owner.runner_state = jax.device_put(restored, device)


__all__ = [
    "JAX_ENV_ALGORITHMS",
    "JaxEnvStates",
    "check_jax_env_run",
    "make_jax_env_rollout",
    "make_jax_env_step",
    "make_start",
    "start_jax_env",
    "strong_types",
]
