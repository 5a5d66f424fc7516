"""Multi-agent IMPALA and APPO: multi-agent PPO's policies, sampling and groups, V-trace's
losses.

Everything but the learning is multi-agent PPO's (``rljax.algorithms.ppo.multi_agent``): the
policies stacked in groups of equal settings, the agent slots of the runners' vector envs,
frozen and forward-only policies, evaluation, checkpoints and results. What differs:

- **Batches.** The runners' fragments are ordered by stream (an agent slot of a sub-env), and
  each policy's rows are gathered in that order into one column ``[rows, 1]``, cut wherever
  the next row is not the same agent's next step, so V-trace runs along each agent's own
  trajectory and never across two. Columns are padded to a power of two (masked rows), so an
  update compiles once per size bucket.
- **The update** of a group is IMPALA's (or APPO's) single-policy update, vmapped over the
  group's policies: one gradient step per iteration at RLlib's defaults, ``num_epochs``
  passes over the whole batch when set. The settings a group's policies override
  (``algorithm_config_overrides_per_module``) are theirs, schedules of ``lr`` and
  ``entropy_coeff`` included (each following the run's lifetime env steps sampled before
  the update, as RLlib's). A policy without rows in a batch keeps its whole state.
- **Sampling.** With runner threads (``num_env_runners >= 1``) the runners sample without
  pause, as single-agent IMPALA's do: an update takes the first ``fragments_per_batch``
  fragments ready from any runners (``train_batch_size_per_learner`` env steps in fragments of
  ``rollout_fragment_length`` per sub-env), each sampled with the weights its runner had,
  and V-trace corrects for the lag; weights go out every ``broadcast_interval`` updates. The
  update runs in the driver (no learner thread). With ``num_env_runners=0`` the driver
  samples one fragment of every sub-env holding the train batch, then trains on it. A
  multi-agent JAX env is stepped from the host.

Not built: ``minibatch_size`` (RLlib's minibatches of whole fragments), recurrent modules,
several learners and populations; each is refused by name when the config is validated or the
algorithm built.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from rljax.algorithms.impala.learner import (
    APPOHyperparams,
    APPOTrainState,
    IMPALAHyperparams,
    IMPALATrainState,
    VTraceTrainBatch,
    impala_optimizer,
    make_appo_update,
    make_impala_update,
    stream_ordered_batch,
)
from rljax.algorithms.on_policy import FreeRunning
from rljax.algorithms.ppo.multi_agent import MultiAgentPPO
from rljax.algorithms.ppo.multi_agent_parts import _bucket, _Group
from rljax.algorithms.settings import frozen_from_config
from rljax.learners.hyperparams import dynamic_settings, with_hyperparams
from rljax.types import Transition
from rljax.utils.jit import run_once
from rljax.utils.schedules import is_schedule, schedule_start

# The smallest padded column of a policy's rows (V-trace scans it row by row).
_MIN_ROWS = 32
# The settings an update reads as it trains (schedules allowed): IMPALA's.
_DYNAMIC = ("lr", "entropy_coeff")


@dataclasses.dataclass(frozen=True)
class _VTraceLearner:
    """A group's frozen settings (IMPALA's or APPO's record) and its dynamic ones."""

    hp: Any
    dynamic: dict[str, Any]
    lr_start: float


def make_multi_agent_vtrace_postprocess() -> Any:
    """``postprocess(Transition [T, slots]) -> VTraceTrainBatch [1, T * slots]``: the rows in
    stream order (each agent slot's real steps in time order, its padding after them), cut
    where a stream stops (``rljax.runners.ordering.order_by_stream``)."""

    def postprocess(traj: Transition) -> VTraceTrainBatch:
        return jax.tree.map(lambda x: x[None], stream_ordered_batch(traj))

    return postprocess


class MultiAgentIMPALA(MultiAgentPPO):
    """IMPALA over several policies on a ``MultiAgentEnv`` (built by ``IMPALAConfig`` with
    ``.multi_agent(...)``): multi-agent PPO's sampling and groups, V-trace's update."""

    # Trials of multi-agent IMPALA train one at a time (no population program).
    population_settings: ClassVar[tuple[str, ...]] = ()
    population_state_settings: ClassVar[tuple[str, ...]] = ()

    def _fragment_length(self) -> int:
        """With runner threads ``rollout_fragment_length`` (free-running runners, as
        single-agent IMPALA's); sampling in the driver, long enough that one fragment of every
        sub-env holds the train batch."""
        cfg = self.config
        if cfg.num_env_runners:
            return cfg.get_rollout_fragment_length()
        return max(
            cfg.get_rollout_fragment_length(),
            math.ceil(cfg.total_train_batch_size / cfg.num_envs_per_env_runner),
        )

    def _free_running(self) -> Any:
        """With runner threads: free-running, as single-agent IMPALA's (``FreeRunning``): each
        update takes the first ``fragments_per_batch`` fragments ready, sampled with whatever
        weights the runner had; V-trace corrects for the lag."""
        cfg: Any = self.config  # an IMPALAConfig (or APPOConfig)
        if not cfg.num_env_runners:
            return None
        return FreeRunning(
            fragments_per_batch=cfg.fragments_per_batch,
            broadcast_interval=cfg.broadcast_interval,
            max_queued_fragments=cfg.max_requests_in_flight_per_env_runner,
        )

    def _fused_jax_env(self) -> Any:
        return None  # a multi-agent JAX env is stepped from the host (module docstring)

    def _group_learner(self, gcfg: Any, batch_rows: int) -> tuple[Any, Any]:
        dynamic = {}
        for name in _DYNAMIC:
            value = getattr(gcfg, name)
            dynamic[name] = value if is_schedule(value) else float(value)
        at_start = gcfg.copy()
        for name in _DYNAMIC:
            setattr(at_start, name, schedule_start(getattr(gcfg, name)))
        return impala_optimizer(gcfg), _VTraceLearner(
            self._frozen_settings(at_start), dynamic_settings(dynamic), float(at_start.lr)
        )

    def _group_config(self, group: _Group) -> Any:
        """The config of the group's policies (the algorithm's with their overrides)."""
        return self.config.module_config(self.policy_ids[group.members[0]])

    def _frozen_settings(self, static_config: Any) -> Any:
        """The group's frozen record (IMPALA's; APPO's overrides)."""
        return frozen_from_config(IMPALAHyperparams, static_config, minibatch_size=None)

    def _opt_state(self, group: _Group, params: Any) -> Any:
        """The group's optimizer states, the learning rate at its start in them."""
        opt_state = run_once(jax.vmap(group.optimizer.init), params)
        rate = jnp.full((len(group.members),), group.hp.lr_start, jnp.float32)
        return with_hyperparams(opt_state, learning_rate=rate)

    def _group_state(self, group: _Group, params: Any, keys: jax.Array) -> Any:
        n = len(group.members)
        return IMPALATrainState(
            params=params,
            opt_state=self._opt_state(group, params),
            step=jnp.zeros((n,), jnp.int32),
            key=keys,
            env_steps=jnp.zeros((n,), jnp.int32),
        )

    def _make_postprocess(self, batch_rows: int) -> Any:
        return make_multi_agent_vtrace_postprocess()

    def _grouped_update(self, state: list[Any], batch: Any) -> tuple[list[Any], dict[str, Any]]:
        # As RLlib's learners, every policy's schedules follow the run's lifetime env steps
        # sampled (those before this update), not the rows the policy trained on.
        lifetime = self.num_env_steps_sampled_lifetime
        state = [
            dataclasses.replace(s, env_steps=jnp.full_like(s.env_steps, lifetime)) for s in state
        ]
        return super()._grouped_update(state, batch)

    def _policy_update(self, g: int, size: int, hp: Any = None, optimizer: Any = None) -> Any:
        group = self.groups[g]
        learner = group.hp
        return make_impala_update(
            group.module.apply, group.dist, group.optimizer, learner.hp, learner.dynamic
        )

    def _bucket_size(self, g: int, rows: int) -> int:
        return _bucket(rows, _MIN_ROWS)

    def _gathered(self, flat: Any, index: Any, real: Any, g: int) -> Any:
        """Group ``g``'s per-policy columns: the rows ``index`` [P_g, size] of the stream-ordered
        ``flat`` batch, masked by ``real``, cut where the next row of the column is not the
        next row of ``flat`` (another agent's, or after a step the agent did not act in) and at
        every padded row; every leaf [P_g, size, 1, ...] (traceable)."""
        index = jnp.asarray(index)
        real = jnp.asarray(real)
        obs = self.groups[g].obs(jax.tree.map(lambda x: x[index], flat.obs["obs"]), lead=2)
        rows = jax.tree.map(lambda x: x[index], flat._replace(obs=None))._replace(obs=obs)
        follows = jnp.concatenate(
            [index[:, 1:] == index[:, :-1] + 1, jnp.zeros((index.shape[0], 1), bool)], axis=1
        )
        next_real = jnp.concatenate([real[:, 1:], jnp.zeros((real.shape[0], 1), real.dtype)], 1)
        cut = rows.vtrace.truncated | ~follows | (next_real == 0) | (real == 0)
        vtrace = rows.vtrace._replace(truncated=cut, mask=rows.vtrace.mask * real)
        return jax.tree.map(lambda x: x[:, :, None], rows._replace(vtrace=vtrace))


class MultiAgentAPPO(MultiAgentIMPALA):
    """APPO over several policies on a ``MultiAgentEnv`` (built by ``APPOConfig`` with
    ``.multi_agent(...)``): each policy has its own target policy and KL coefficient."""

    def _frozen_settings(self, static_config: Any) -> Any:
        return frozen_from_config(
            APPOHyperparams, static_config, minibatches_per_batch=1, minibatch_size=None
        )

    def _group_state(self, group: _Group, params: Any, keys: jax.Array) -> Any:
        n = len(group.members)
        return APPOTrainState(
            params=params,
            opt_state=self._opt_state(group, params),
            target_params=jax.tree.map(jnp.copy, params),  # its own buffers (donated)
            kl_coeff=jnp.full((n,), self._group_config(group).kl_coeff, jnp.float32),
            step=jnp.zeros((n,), jnp.int32),
            key=keys,
            env_steps=jnp.zeros((n,), jnp.int32),
        )

    def _policy_update(self, g: int, size: int, hp: Any = None, optimizer: Any = None) -> Any:
        group = self.groups[g]
        learner = group.hp
        return make_appo_update(
            group.module.apply, group.dist, group.optimizer, learner.hp, learner.dynamic
        )


__all__ = ["MultiAgentAPPO", "MultiAgentIMPALA", "make_multi_agent_vtrace_postprocess"]
