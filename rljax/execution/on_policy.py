"""The on-policy loop: sample a batch, post-process it, update, hand the new weights to the runners.

An algorithm enters through three pure functions: ``postprocess(traj [T, K]) -> batch``,
``update(state, batch) -> (state, metrics)`` and ``PolicyParts.acting_params(state) -> params``.
Samples come from the fused EnvPool rollout (``rollout(params, runner_state)``, traced) or from
runner threads (a ``RunnerGroup``). With one learner on the fused path, sampling and the update
are one jitted program; with a learner mesh the rollout stays on its device (EnvPool's custom
call runs once, on one device) and the batch is placed on the mesh for the update. Nothing here
knows the algorithm.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import jax
import numpy as np

from rljax.execution.parts import Params
from rljax.learners.devices import replicated
from rljax.runners.acting import FusedRunnerState, Transition, episode_arrays
from rljax.runners.group import GroupSample, RunnerGroup

State = TypeVar("State")
Batch = Any
Metrics = dict[str, jax.Array]
Episodes = dict[str, Any]
Rollout = Callable[[Params, FusedRunnerState], tuple[FusedRunnerState, Transition]]


def make_sample(
    rollout: Rollout, postprocess: Callable[[Transition], Batch]
) -> Callable[[Params, FusedRunnerState], tuple[FusedRunnerState, Batch, Episodes]]:
    """``sample(params, runner_state) -> (runner_state, batch, episodes)``: one fused rollout,
    post-processed, with its finished episodes (``episode_arrays``)."""

    def sample(params: Params, rs: FusedRunnerState) -> tuple[FusedRunnerState, Batch, Episodes]:
        rs, traj = rollout(params, rs)
        return rs, postprocess(traj), episode_arrays(traj)

    return sample


def make_train_step(
    sample: Callable[[Params, FusedRunnerState], tuple[FusedRunnerState, Batch, Episodes]],
    update: Callable[[State, Batch], tuple[State, Metrics]],
    acting_params: Callable[[State], Params],
) -> Callable[[State, FusedRunnerState], tuple[State, FusedRunnerState, Metrics, Episodes]]:
    """``train_step(state, runner_state) -> (state, runner_state, metrics, episodes)``: the
    rollout with the current parameters and the update, for one jitted program."""

    def train_step(
        state: State, rs: FusedRunnerState
    ) -> tuple[State, FusedRunnerState, Metrics, Episodes]:
        rs, batch, episodes = sample(acting_params(state), rs)
        state, metrics = update(state, batch)
        return state, rs, metrics, episodes

    return train_step


def runner_group_metrics(group: GroupSample, learner_version: int) -> dict[str, Any]:
    """Policy lag (in weight versions) and per-runner throughput of the fragments of one update.

    Args:
      group: The runners' fragments, joined along the sub-env axis (``RunnerGroup.sample``).
      learner_version: The version of the weights the update starts from.
    """
    lags = [learner_version - v for v in group.versions]
    valid = np.asarray(group.traj.valid)
    steps = valid.reshape(valid.shape[0], len(lags), -1).sum(axis=(0, 2))
    return {
        "policy_lag_mean": float(np.mean(lags)),
        "policy_lag_max": int(np.max(lags)),
        "runner_wait_for_learner_s": float(np.mean(group.runner_wait_s)),
        "learner_wait_s": group.learner_wait_s,
        "per_runner": {
            str(i + 1): {
                "num_env_steps_sampled": int(steps[i]),
                "sample_s": group.sample_s[i],
                "env_steps_per_s": float(steps[i] / group.sample_s[i])
                if group.sample_s[i] > 0
                else float("nan"),
                "wait_for_learner_s": group.runner_wait_s[i],
                "policy_lag": lags[i],
            }
            for i in range(len(lags))
        },
    }


@dataclasses.dataclass
class OnPolicyLoop(Generic[State]):
    """One training iteration of an on-policy algorithm, on the fused path or runner threads.

    Build it with ``OnPolicyLoop.fused(...)`` or ``OnPolicyLoop.with_runners(...)``; ``step``
    returns the new train state and the dict ``Algorithm.train()`` turns into RLlib's result.
    """

    update: Callable[[State, Batch], tuple[State, Metrics]]
    runner_params: Callable[[State], Params]
    train_step: Callable[..., Any] | None = None
    sample: Callable[..., Any] | None = None
    postprocess: Callable[[Transition], tuple[Batch, Episodes]] | None = None
    runners: RunnerGroup | None = None
    batch_sharding: jax.sharding.Sharding | None = None
    sample_timeout_s: float | None = None

    @classmethod
    def fused(
        cls,
        rollout: Rollout,
        postprocess: Callable[[Transition], Batch],
        update: Callable[[State, Batch], tuple[State, Metrics]],
        acting_params: Callable[[State], Params],
        runner_params: Callable[[State], Params],
        mesh: jax.sharding.Mesh | None = None,
        state_sharding: Any = None,
        batch_sharding: jax.sharding.Sharding | None = None,
    ) -> OnPolicyLoop[State]:
        """The fused EnvPool path: one jitted program per iteration with one learner; with a
        mesh, the jitted rollout on the runner device, then the update partitioned over it."""
        sample = make_sample(rollout, postprocess)
        if mesh is None:
            # Rollout and update in one jitted call: no Python between env steps or minibatches.
            train_step = make_train_step(sample, update, acting_params)
            return cls(
                update=update,
                runner_params=runner_params,
                train_step=jax.jit(train_step, donate_argnums=(0, 1)),
            )
        return cls(
            update=jit_update(update, mesh, state_sharding, batch_sharding),
            runner_params=runner_params,
            sample=jax.jit(sample, donate_argnums=(1,)),
            batch_sharding=batch_sharding,
        )

    @classmethod
    def with_runners(
        cls,
        runners: RunnerGroup,
        postprocess: Callable[[Transition], Batch],
        update: Callable[[State, Batch], tuple[State, Metrics]],
        runner_params: Callable[[State], Params],
        sample_timeout_s: float | None,
        mesh: jax.sharding.Mesh | None = None,
        state_sharding: Any = None,
        batch_sharding: jax.sharding.Sharding | None = None,
    ) -> OnPolicyLoop[State]:
        """Runner threads sample; the batch is post-processed and the update runs in the
        driver (partitioned over the mesh with several learners); the new weights are published
        after each update."""

        def with_episodes(traj: Transition) -> tuple[Batch, Episodes]:
            return postprocess(traj), episode_arrays(traj)

        return cls(
            update=jit_update(update, mesh, state_sharding, batch_sharding),
            runner_params=runner_params,
            postprocess=jax.jit(with_episodes),
            runners=runners,
            batch_sharding=batch_sharding if mesh is not None else None,
            sample_timeout_s=sample_timeout_s,
        )

    def step(
        self, state: State, runner_state: FusedRunnerState | None
    ) -> tuple[State, FusedRunnerState | None, dict[str, Any]]:
        """One iteration: ``(state, runner_state, training_step_result)``."""
        t_start = time.perf_counter()
        runner_metrics: dict[str, Any] = {}
        if self.train_step is not None:
            state, runner_state, metrics, episodes = self.train_step(state, runner_state)
            jax.block_until_ready(metrics)
            # Sampling and learning run inside one XLA program here: only their sum is measured.
            timers = {"training_step": time.perf_counter() - t_start}
        else:
            t0 = time.perf_counter()
            if self.sample is not None:
                runner_state, batch, episodes = self.sample(self.runner_params(state), runner_state)
            else:
                assert self.runners is not None and self.postprocess is not None
                group = self.runners.sample(self.sample_timeout_s)
                batch, episodes = self.postprocess(group.traj)
                runner_metrics = runner_group_metrics(group, self.runners.version)
            if self.batch_sharding is not None:
                batch = jax.device_put(batch, self.batch_sharding)
            jax.block_until_ready(batch)
            t1 = time.perf_counter()
            state, metrics = self.update(state, batch)
            jax.block_until_ready(metrics)
            if self.runners is not None:
                self.runners.publish(self.runner_params(state))
            t2 = time.perf_counter()
            timers = {
                "training_step": t2 - t_start,
                "env_runner_sampling_timer": t1 - t0,
                "learner_update_timer": t2 - t1,
            }
            if runner_metrics:
                timers["learner_wait_for_runners_s"] = runner_metrics.pop("learner_wait_s")
        metrics, episodes = jax.device_get((metrics, episodes))
        done = episodes["done"]
        num_valid = int(episodes["num_valid"])
        return (
            state,
            runner_state,
            {
                "learner_metrics": metrics,
                "episode_returns": episodes["returns"][done],
                "episode_lens": episodes["lens"][done],
                "num_env_steps_sampled": num_valid,
                "num_env_steps_trained": num_valid,
                "timers": timers,
                "runner_metrics": runner_metrics,
            },
        )


def jit_update(
    update: Callable[[State, Batch], tuple[State, Metrics]],
    mesh: jax.sharding.Mesh | None,
    state_sharding: Any,
    batch_sharding: jax.sharding.Sharding | None,
) -> Callable[[State, Batch], tuple[State, Metrics]]:
    """The jitted update, the train state donated: on the default device, or partitioned over
    the learner mesh (state and batch placed as given, metrics replicated)."""
    if mesh is None:
        return jax.jit(update, donate_argnums=(0,))
    return jax.jit(
        update,
        in_shardings=(state_sharding, batch_sharding),
        out_shardings=(state_sharding, replicated(mesh)),
        donate_argnums=(0,),
    )
