"""A runner thread's EnvPool stepped inside one jitted program per fragment (Sebulba's actor).

``HostRunner`` steps its vector env from Python, one call per env step. With an EnvPool env a
runner can do what the driver's fused path does instead: step EnvPool through its XLA interface
inside ``lax.scan`` (``acting.make_fused_rollout``), so a whole fragment is one call on the
runner's device and no Python runs per env step. Each runner thread owns its EnvPool (SYNC or
ASYNC) and acting device; the learner owns the learner devices (Podracer's Sebulba split). On a
single CPU device both share it.

EnvPool's C++ envs do not raise, so a fused runner never returns a cut fragment; and, as every
EnvPool env, it has no state to save (``get_state`` raises ``EnvStateError``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.state import EnvStateError
from rljax.env.vector import (
    envpool_batch_size,
    envpool_reset,
    envpool_reset_ended,
    envpool_same_step,
    envpool_step,
    make_envpool,
)
from rljax.runners.acting import (
    FusedRunnerState,
    Transition,
    init_actor_state,
    make_fused_rollout,
    prime,
)
from rljax.runners.host import RunnerSpec
from rljax.utils import xla_options
from rljax.utils.errors import ConfigError


def start_envpool(
    env: Any,
    policy_fn: Any,
    act_step: Any,
    params: Any,
    num_envs: int,
    seed: int,
    to_env_action: Callable[[jax.Array], jax.Array],
    keep_info: bool = False,
    same_step: bool = False,
) -> tuple[Callable[..., Any], FusedRunnerState, Callable[..., Any] | None]:
    """Resets an EnvPool for the fused rollout: ``(xla_step, runner_state, reset_ended)``.

    ``same_step`` (applied to a SYNC EnvPool: ``vector.envpool_same_step``): same-step
    auto-reset (``vector.envpool_reset_ended``, the rollout's ``reset_ended``), and the first
    env step is taken here (``acting.prime``), so the first fragment holds as many env steps as
    rows. The runner state is on the host's default device; the caller places it.
    """
    handle, _recv, _send, xla_step = env.xla()
    same_step = envpool_same_step(env, same_step)
    result = jax.tree.map(jnp.asarray, envpool_reset(env, keep_info, same_step))
    actor = init_actor_state(policy_fn, params, result.obs[0], num_envs)
    key = jax.random.PRNGKey(seed + 1)  # the runner's acting key: env seed + 1
    reset_ended = None
    if same_step:

        def step(action: Any, env_id: Any) -> Any:
            out = envpool_step(env, np.asarray(to_env_action(action)), env_id, keep_info, True)
            return jax.tree.map(jnp.asarray, out)

        key, sub = jax.random.split(key)
        # Acting eagerly needs every input where the weights are (the runner's device).
        devices = jax.tree.leaves(params)[0].devices()
        if len(devices) == 1:
            actor, result, sub = jax.device_put((actor, result, sub), next(iter(devices)))
        actor, result = prime(act_step, params, sub, actor, result, step)
        reset_ended = envpool_reset_ended(env)
    return xla_step, FusedRunnerState(jnp.asarray(handle), actor, result, key), reset_ended


class FusedRunner:
    """One EnvPool and its actor state; ``sample`` runs a fragment as one jitted call.

    Args:
      spec: As for ``HostRunner``; ``spec.env`` must be an EnvPool task.
      params: The first weights (their shapes give the actor state's).
      to_env_action: Policy actions -> the env's actions, traced (``PolicyParts.to_env_action``).
    """

    def __init__(
        self, spec: RunnerSpec, params: Any, to_env_action: Callable[[jax.Array], jax.Array]
    ):
        assert spec.env is not None and spec.env.backend == "envpool", "EnvPool envs only"
        self.spec = spec
        self.device = spec.device
        self.offset = spec.env_id_offset
        self.num_sub_env_restarts = 0
        self.busy = False
        self.error: str | None = None  # EnvPool's envs do not raise: always None
        self.last_num_steps = 0
        self.last_num_rows = 0
        self.last_stats: Any = None
        self._to_env_action = to_env_action
        self._rollouts: dict[int, Callable[..., Any]] = {}
        self._compiler_options = xla_options.current("rollout")
        self._params_shape = jax.eval_shape(lambda p: p, params)
        self.env, self._xla_step, self.state, self._reset_ended = self._start(spec, params)

    def _start(self, spec: RunnerSpec, params: Any) -> tuple[Any, Any, FusedRunnerState, Any]:
        """``(env, xla_step, runner_state, reset_ended)``: ``spec``'s EnvPool built and reset
        (``start_envpool``), its state on this runner's device; closed again if that fails."""
        assert spec.env is not None
        batch = envpool_batch_size(spec.num_envs, spec.mode, spec.async_batch_size)
        env = make_envpool(spec.env, spec.num_envs, batch, spec.seed)
        try:
            xla_step, state, reset_ended = start_envpool(
                env,
                spec.policy_fn,
                spec.act_step,
                params,
                spec.num_envs,
                spec.seed,
                self._to_env_action,
                keep_info=spec.record_infos,  # EnvPool's infos for episode callbacks
                same_step=spec.same_step,
            )
            return env, xla_step, jax.device_put(state, self.device), reset_ended
        except BaseException:
            env.close()
            raise

    def rebuild_env(self, env: Any, params: Any) -> None:
        """Replaces the EnvPool with one built from ``env`` (an EnvPool spec: a curriculum's
        next task, RLlib's ``env_runner.make_env()``): the old one is closed, the new one reset,
        every sub-env starts a new episode, and the rollouts compile anew for its XLA step.
        Called between iterations, while the runner does not sample.

        Raises:
          ConfigError: ``env`` is not an EnvPool env."""
        if self.busy:
            raise RuntimeError("rebuild_env() while the runner samples; call it between iterations")
        if env.backend != "envpool":
            raise ConfigError(
                f"make_env(): this runner steps EnvPool inside jit and rebuilds EnvPool envs "
                f"only; env {env.name!r} is a {env.backend} env (use a gymnasium env from "
                "the start for a curriculum across kinds of env)"
            )
        spec = dataclasses.replace(self.spec, env=env)
        old = self.env
        self.env, self._xla_step, self.state, self._reset_ended = self._start(spec, params)
        self.spec, self._rollouts = spec, {}
        old.close()

    def _rollout(self, length: int) -> Callable[..., Any]:
        """The jitted rollout of ``length`` steps (one per length; the state is donated)."""
        if length not in self._rollouts:
            rollout = make_fused_rollout(
                self.spec.act_step,
                self._xla_step,
                length,
                self._to_env_action,
                reset_ended=self._reset_ended,
            )
            self._rollouts[length] = jax.jit(
                rollout, donate_argnums=(1,), compiler_options=self._compiler_options
            )
        return self._rollouts[length]

    def sample(
        self, params: Any, length: int, resume: Transition | None = None, first_row: int = 0
    ) -> Transition:
        """A fragment of ``length`` env steps, [length, K], one jitted call."""
        if resume is not None or first_row:
            raise ValueError("an EnvPool runner never leaves a cut fragment to resume")
        self.busy = True
        try:
            self.state, traj = self._rollout(length)(params, self.state)
        finally:
            self.busy = False
        self.last_num_steps = self.last_num_rows = length
        return traj._replace(env_id=traj.env_id + self.offset)

    def empty_fragment(self, length: int) -> Transition:
        """A fragment of this runner's shape with no transition in it (``valid`` False), each
        column one of its streams."""
        shape = jax.eval_shape(self._rollout(length), self._params_shape, self.state)[1]
        traj = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype, device=self.device), shape)
        streams = traj.env_id.shape[1]
        ids = jnp.broadcast_to(jnp.arange(streams, dtype=traj.env_id.dtype), traj.env_id.shape)
        return traj._replace(env_id=jax.device_put(ids + self.offset, self.device))

    def get_state(self) -> dict[str, Any]:
        raise EnvStateError("EnvPool envs cannot save their state (EnvPool has no state API)")

    def check_state(self, state: dict[str, Any]) -> list[Any]:
        raise EnvStateError("EnvPool envs cannot restore a saved state")

    def set_state(self, state: dict[str, Any], checked: list[Any] | None = None) -> None:
        raise EnvStateError("EnvPool envs cannot restore a saved state")

    def close(self, force: bool = False, wait_s: float = 30.0) -> None:
        """Closes the EnvPool once no rollout runs in it (its XLA step must not lose its envs
        mid-call); a runner still inside one after ``wait_s`` (hung) is left open."""
        deadline = time.monotonic() + wait_s
        while self.busy:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
        self.env.close()


__all__ = ["FusedRunner", "start_envpool"]
