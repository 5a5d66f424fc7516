"""Runners that step vector envs from Python (gymnasium envs, or EnvPool with runner threads).

The policy still runs jitted on whole batches; Python only moves the batch between the env and the
jitted ``act_step``. Several runners sample concurrently in threads: EnvPool and XLA release the
GIL while they work, and ASYNC gymnasium envs step in their own processes.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rljax.env.vector import EnvSpec, make_host_env
from rljax.runners.acting import ActorState, Transition, init_actor_state


class HostRunner:
    """One vector env and its actor state; ``sample`` returns a ``Transition`` of [T, K]."""

    def __init__(
        self,
        spec: EnvSpec,
        num_envs: int,
        mode: str,
        seed: int,
        async_batch_size: int | None,
        policy_fn: Callable,
        act_step: Callable,
        to_env_action: Callable[[np.ndarray], np.ndarray],
        params: Any,
        device: jax.Device,
        env_id_offset: int = 0,
    ):
        self.env = make_host_env(spec, num_envs, mode, seed, async_batch_size)
        self.offset = env_id_offset
        self.device = device
        self.to_env_action = to_env_action
        self._act = jax.jit(act_step, device=device)
        self.result = self.env.reset()
        obs0 = jnp.asarray(self.result.obs[0])
        self.actor: ActorState = init_actor_state(policy_fn, params, obs0, num_envs)
        self.key = jax.random.PRNGKey(seed)

    def sample(self, params: Any, length: int) -> Transition:
        steps = []
        for _ in range(length):
            self.key, sub = jax.random.split(self.key)
            action, self.actor, transition = self._act(params, sub, self.actor, self.result)
            action = np.asarray(action)
            self.result = self.env.step(self.to_env_action(action), self.result.env_id)
            steps.append(transition)
        traj = jax.tree.map(lambda *xs: jnp.stack(xs), *steps)
        # Sub-env ids are made global across runners so the learner can tell trajectories apart.
        return traj._replace(env_id=traj.env_id + self.offset)

    def close(self) -> None:
        self.env.close()


class RunnerGroup:
    """``num_env_runners`` runners sampling in parallel threads; results joined along K."""

    def __init__(self, runners: list[HostRunner]):
        self.runners = runners
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, len(runners)), thread_name_prefix="rljax-runner"
        )

    def sample(self, params: Any, length: int) -> Transition:
        if len(self.runners) == 1:
            return self.runners[0].sample(params, length)
        futures = [self._pool.submit(r.sample, params, length) for r in self.runners]
        parts = []
        for i, f in enumerate(futures):
            try:
                parts.append(f.result())
            except Exception as e:
                raise RuntimeError(f"env runner {i} failed: {type(e).__name__}: {e}") from e
        return jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *parts)

    def close(self) -> None:
        for r in self.runners:
            r.close()
        self._pool.shutdown(wait=False)
