"""What PPO, IMPALA and APPO share: an actor-critic policy, and the algorithm that runs the
execution layer's on-policy loop (``rljax/execution/on_policy.py``) on their parts.

A subclass's ``_setup()`` builds its actor-critic (``_init_actor_critic``), its learner state,
postprocess and update, sets ``parts``, then calls ``_setup_execution``: the fused EnvPool path
(one jitted program per iteration) for an EnvPool env without runner threads, runner threads
otherwise.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from rljax import distributed
from rljax.algorithms.actor_critic.policy import (
    POLICY_ID,
    OnPolicyBatch,
    build_policy,
    one_step,
    recurrent_spec_of,
)
from rljax.algorithms.algorithm import Algorithm
from rljax.connectors.env_to_module import EnvToModulePipeline
from rljax.env.jax_env import is_jax_spec, jax_env_of
from rljax.env.spaces import is_structured, zeros_batch
from rljax.execution.complete_episodes import EpisodeBuffer
from rljax.execution.loop import (
    IterationResult,
    LearnerFactory,
    PopulationParts,
    setting_is_off,
)
from rljax.execution.on_policy import OnPolicyLoop, steps_per_iteration
from rljax.execution.parts import with_env_to_module
from rljax.learners.hyperparams import live_layout, saved_layout
from rljax.networks.distributions import ActionDistribution
from rljax.runners.acting import make_act_step, make_fused_rollout, recurrent_input
from rljax.runners.jax_env import JaxEnvStates, start_jax_env
from rljax.types import RecurrentInput, Transition
from rljax.utils import xla_options
from rljax.utils.errors import ConfigError
from rljax.utils.jit import run_once
from rljax.utils.schedules import Schedule, is_schedule, schedule_start


@dataclasses.dataclass(frozen=True)
class FreeRunning:
    """How an asynchronous learner (IMPALA, APPO) takes its runners' fragments.

    Attributes:
      fragments_per_batch: Fragments of one update, the first ready from any runners.
      broadcast_interval: Updates between weight broadcasts.
      max_queued_fragments: Finished fragments a runner may hold (requests in flight).
      learner_thread: Update in a thread of its own (``num_learners >= 1``).
      max_pending_updates: Updates that thread may finish before the driver collects them.
    """

    fragments_per_batch: int
    broadcast_interval: int = 1
    max_queued_fragments: int = 1
    learner_thread: bool = False
    max_pending_updates: int = 1


def _connectors_of(state: Any) -> Any:
    return state.connectors


def connected_update(
    update: Callable[[Any, Any], tuple[Any, dict[str, jax.Array]]],
    pipeline: EnvToModulePipeline,
) -> Callable[[Any, Any], tuple[Any, dict[str, jax.Array]]]:
    """``update`` on a batch of raw observations: it trains on them as the connectors
    transformed them for acting (their state before this batch), then the connectors learn
    from the batch's real rows (a MeanStdFilter's statistics: every runner's rows, merged)."""

    def update_connected(state: Any, batch: OnPolicyBatch) -> tuple[Any, dict[str, jax.Array]]:
        before = state.connectors
        recurrent = isinstance(batch.obs, RecurrentInput)  # sequences: transform the obs
        raw = batch.obs.obs if recurrent else batch.obs
        seen = pipeline.transform(before, raw)
        obs = batch.obs._replace(obs=seen) if recurrent else seen
        state, metrics = update(state, batch._replace(obs=obs))
        after = pipeline.update(before, raw, batch.mask)
        return state.replace(connectors=after), metrics

    return update_connected


class OnPolicyAlgorithm(Algorithm):
    """An actor-critic trained by ``OnPolicyLoop`` (fused, or with runner threads).

    Its runners reset same-step (``Algorithm._same_step_reset``): a batch of N rows holds N env
    steps, as RLlib's does (a population's trials too).

    Populations (``rljax.execution.population``): an algorithm whose ``population_settings``
    is not empty builds its postprocess and update with ``_learner_functions(values)``, so
    that trials differing only in those settings (and the seed) can train as one vmapped
    program, each setting a traced scalar per trial.
    """

    state: Any
    _same_step_reset = True
    _fused_envpool_runners = True
    _loop: OnPolicyLoop[Any] | None
    _xla_step: Callable[..., Any] | None  # a population trial's EnvPool step (None: JAX env)
    _reset_ended: Callable[..., Any] | None = None  # the fused rollout's same-step resets
    # A population trial's JAX-env rollout, as its own run's (None: EnvPool, or no trial).
    _jax_rollout: Callable[..., Any] | None = None
    # The settings (RLlib's names) trials of one population may differ in, besides the seed:
    # values the jitted postprocess and update read. Empty: no populations.
    population_settings: ClassVar[tuple[str, ...]] = ()
    # Settings trials may differ in that only set the initial learner state (each trial builds
    # its own); population-based training cannot change them in place.
    population_state_settings: ClassVar[tuple[str, ...]] = ()
    # The settings that may change while a run trains (RLlib's schedules): the update reads
    # them as one mapping, evaluated at the env steps trained on
    # (``rljax.learners.hyperparams``); the frozen record holds their start.
    dynamic_settings: ClassVar[tuple[str, ...]] = ("lr", "entropy_coeff")

    def population_values(self) -> dict[str, float | Schedule | None]:
        """This run's ``population_settings`` (and ``dynamic_settings``), each read from the
        config once: floats, a schedule for a dynamic setting given as one; None for a setting
        that is off (``vf_clip_param=None``; ``grad_clip`` None or 0), which stays off in the
        program."""
        values: dict[str, float | Schedule | None] = {}
        for name in dict.fromkeys((*self.population_settings, *self.dynamic_settings)):
            value = getattr(self.config, name)
            if setting_is_off(name, value):
                values[name] = None
            elif name in self.dynamic_settings and is_schedule(value):
                values[name] = value
            else:
                values[name] = schedule_start(value)
        return values

    def _static_config(self) -> Any:
        """The config with each dynamic setting at its start (a schedule's first value): what
        the frozen hyper-parameter record is built from (the updates follow the schedules)."""
        at_start = self.config.copy()
        for name in self.dynamic_settings:
            setattr(at_start, name, schedule_start(getattr(self.config, name)))
        return at_start

    def population_parts(self) -> PopulationParts:
        """The parts of this trial's loop that its population runs (a trial built with
        ``population_member=True``): acting, its EnvPool's XLA step and same-step resets (or its
        JAX env), the
        rollout's length, and its learner functions of the population settings."""
        if not self._population_member:
            raise RuntimeError(
                f"this {type(self).__name__} is not a trial of a population (build it with "
                "population_member=True, as Population does)"
            )
        return PopulationParts(
            act_step=self._act_step,
            xla_step=self._xla_step,
            reset_ended=self._reset_ended,
            fragment_length=self.fragment_length,
            to_env_action=self.parts.to_env_action,
            acting_params=self.parts.acting_params,
            learner_functions=self._learner_factory(),
            jax_env=jax_env_of(self.env_spec) if is_jax_spec(self.env_spec) else None,
            rollout=self._jax_rollout,
            steps_per_iteration=steps_per_iteration(self.config),
        )

    def _learner_factory(self) -> LearnerFactory:
        """The pure function ``values -> (postprocess, update)`` of the population settings
        (numbers, or traced scalars in a population), closed over this algorithm's frozen
        parts only: a population jits it, so it must hold no algorithm or config."""
        raise NotImplementedError(f"{type(self).__name__} trains no populations")

    def _learner_functions(
        self, values: Mapping[str, Any]
    ) -> tuple[Callable[[Transition], Any], Callable[..., Any]]:
        """``(postprocess, update)`` built with ``values`` of the population settings."""
        return self._learner_factory()(values)

    def _init_actor_critic(self) -> tuple[ActionDistribution, dict[str, Any], jax.Array]:
        """Builds ``self.module`` (``build_policy``) and sets ``_action_key``; returns the
        distribution, the initial ``{POLICY_ID: params}`` and the learner's key."""
        # The module sees the observations as the env-to-module connectors give them.
        space = self.observation_space
        if self._env_to_module is not None:
            space = self._env_to_module.output_space
        dist, self.module = build_policy(space, self.action_space, self.config)
        obs_example = zeros_batch(space, 1)
        recurrent = hasattr(self.module, "initial_state")
        if recurrent:  # one sequence of one step, as acting feeds the module
            spec = recurrent_spec_of(self.module, self.action_space)
            first = jnp.ones((1,), bool)
            obs_example = one_step(
                recurrent_input(
                    spec,
                    obs_example,
                    spec.initial_state(1),
                    first,
                    spec.action_zeros(1),
                    jnp.zeros((1,), jnp.float32),
                )
            )
        try:
            # Shapes only (nothing compiles): a module that cannot take these observations
            # fails here, plainly.
            key_shape = jax.ShapeDtypeStruct((2,), jnp.uint32)
            shapes = jax.eval_shape(self.module.init, key_shape, obs_example)
            out = jax.eval_shape(self.module.apply, shapes, obs_example)
        except Exception as e:
            given = (
                "; the module gets a dict (keys sorted) / tuple of [B, ...] arrays for a Dict / "
                "Tuple observation space"
                if is_structured(space)
                else ""
            )
            raise ConfigError(
                f"the model could not be built for observations {space}: "
                f"{type(e).__name__}: {e}{given}"
            ) from e
        lead = (1, 1) if recurrent else (1,)
        if not (isinstance(out, tuple | list) and len(out) == 2 + recurrent) or (
            out[0].shape != (*lead, dist.num_outputs) or out[1].shape != lead
        ):
            raise ConfigError(
                f"the module must return (action_dist_inputs [B, {dist.num_outputs}], value [B]); "
                f"it returned {jax.tree.map(lambda x: x.shape, out)}"
            )
        key = jax.random.PRNGKey(self.seed)
        key, init_key, self._action_key = jax.random.split(key, 3)
        # Transferred, not converted: jnp.asarray compiles a program per leaf's shape.
        obs_example = jax.device_put(obs_example)
        params = {
            POLICY_ID: run_once(
                self.module.init, init_key, obs_example, cache_key=("init", self.module)
            )
        }
        return dist, params, key

    def _setup_execution(
        self,
        postprocess: Callable[[Transition], Any],
        update: Callable[[Any, Any], tuple[Any, dict[str, jax.Array]]],
        max_policy_lag: int | None = None,
        free_running: FreeRunning | None = None,
    ) -> None:
        """Builds the loop on ``self.parts`` and the learner state ``self.state``.

        Args:
          postprocess: ``postprocess(traj [T, K]) -> batch``.
          update: ``update(state, batch) -> (state, metrics)``.
          max_policy_lag: The runner threads' lag bound (``RunnerGroup``); None: 1 with
            ``sample_async``, else 0.
          free_running: With runner threads, sample free-running instead (IMPALA, APPO).
        """
        if self._env_to_module is not None:
            pipeline = self._env_to_module
            self.state = self.state.replace(connectors=pipeline.init_state())
            self.parts = with_env_to_module(self.parts, pipeline.transform, _connectors_of)
            update = connected_update(update, pipeline)
        self.fragment_length = self.config.get_rollout_fragment_length()
        self._postprocess = postprocess
        self._update = update
        act = self.parts.act
        if self.config.same_actions_as_one_process:
            act = distributed.same_actions_as_one_process(act)
        self._act_step = make_act_step(
            act,
            self.parts.bootstrap_keys,
            record_steps=self._record_episodes,
            clip_rewards=self.config.clip_rewards,
        )
        self.state = self._place_learner_state(self.state)
        self.fused = self._fused_envpool()
        # The compiler options of the loop's programs, picked by the network's size.
        self._xla_options = xla_options.resolve(
            self.config.xla_cpu_options, self.parts.acting_params(self.state)
        )
        with xla_options.applied(self._xla_options):
            self._setup_loop(max_policy_lag, free_running)

    def _setup_loop(
        self, max_policy_lag: int | None = None, free_running: FreeRunning | None = None
    ) -> None:
        """The loop and runners of ``_setup_execution`` (inside its compiler options)."""
        if self._inference_only:  # a module loaded for inference: no env, runner or loop
            self._loop = None
            self.fused = False
        elif self._population_member:
            # A trial of a population: its env is built, the population runs the program.
            if is_jax_spec(self.env_spec):  # its envs' states, started as its own run's
                self._jax_rollout, self.runner_state = self._start_jax_env()
                self._xla_step, self._reset_ended = None, None
            else:
                self._xla_step, self.runner_state, self._reset_ended = self._make_fused_runner(
                    self._runner_params(), self._act_step
                )
            self._loop = None
        elif self.fused:
            self._setup_fused()
        else:
            self._setup_host_runners(max_policy_lag, free_running)

    def _setup_fused(self) -> None:
        if is_jax_spec(self.env_spec):  # a JAX env's rollout: rljax.runners.jax_env
            rollout, self.runner_state = self._start_jax_env()
        else:
            xla_step, self.runner_state, self._reset_ended = self._make_fused_runner(
                self._runner_params(), self._act_step
            )
            rollout = make_fused_rollout(
                self._act_step,
                xla_step,
                self.fragment_length,
                self.parts.to_env_action,
                reset_ended=self._reset_ended,
            )
        self._loop = OnPolicyLoop.fused(
            rollout,
            self._postprocess,
            self._update,
            self.parts.acting_params,
            self._runner_params,
            self.mesh,
            self._state_sharding,
            self._batch_sharding,
            steps_per_iteration=steps_per_iteration(self.config),
        )

    def _start_jax_env(self) -> tuple[Any, Any]:
        """``(rollout, runner_state)`` of the JAX env (``runners.jax_env.start_jax_env``)."""
        return start_jax_env(
            jax_env_of(self.env_spec),
            self.parts.act,
            self._act_step,
            self._runner_params(),
            self.config.num_envs_per_env_runner,
            self.seed,
            self.fragment_length,
            self.parts.to_env_action,
            keep_info=self._record_episodes,
        )

    def _setup_host_runners(
        self, max_policy_lag: int | None = None, free_running: FreeRunning | None = None
    ) -> None:
        free = free_running
        self._runners = self._make_runner_group(
            self._runner_params(),
            self._act_step,
            self.fragment_length,
            max_policy_lag,
            free_running=free is not None,
            max_queued_fragments=free.max_queued_fragments if free else None,
        )
        self._loop = OnPolicyLoop.with_runners(
            self._runners,
            self._postprocess,
            self._update,
            self._runner_params,
            self.config.sample_timeout_s,
            self.mesh,
            self._state_sharding,
            self._batch_sharding,
            fragments_per_batch=free.fragments_per_batch if free else None,
            broadcast_interval=free.broadcast_interval if free else 1,
            learner_thread=free.learner_thread if free else False,
            max_pending_updates=free.max_pending_updates if free else 1,
            steps_per_iteration=steps_per_iteration(self.config),
            complete_episodes=self._complete_episodes(),
        )

    def _complete_episodes(self) -> tuple[EpisodeBuffer, Callable[[int], Any]] | None:
        """``(buffer, update_for)`` with ``batch_mode="complete_episodes"`` (else None):
        ``update_for(rows)`` is the update of a padded batch of that many rows."""
        if self.config.batch_mode != "complete_episodes":
            return None
        # (Env-to-module connectors are refused with it: config_validation.)
        buffer = EpisodeBuffer(self.config.total_train_batch_size, self._batch_unit())
        return buffer, self._update_for_rows

    def _update_for_rows(self, rows: int) -> Callable[[Any, Any], tuple[Any, dict[str, jax.Array]]]:
        """The update of a batch of ``rows`` rows, its padding skipped
        (``batch_mode="complete_episodes"``)."""
        raise NotImplementedError(f"{type(self).__name__} trains no batches of whole episodes")

    def _batch_unit(self) -> int:
        """A padded batch's size is a multiple of this (``complete_episodes``)."""
        raise NotImplementedError(f"{type(self).__name__} trains no batches of whole episodes")

    def _runner_params(self, state: Any = None) -> Any:
        return self._on_runner_device(
            self.parts.acting_params(self.state if state is None else state)
        )

    def _live_loop(self) -> OnPolicyLoop[Any]:
        assert self._loop is not None, "a trial of a population has no loop of its own"
        return self._loop

    # The loop's jitted programs (the multi-device and fault-tolerance checks inspect them).
    @property
    def _train_step(self) -> Any:
        return self._live_loop().train_step

    @property
    def _sample(self) -> Any:
        return self._live_loop().sample

    @property
    def _jit_update(self) -> Any:
        return self._live_loop().update

    @property
    def _postprocess_jit(self) -> Any:
        return self._live_loop().postprocess

    # ------------------------------------------------------------------ training
    def _training_step(self) -> IterationResult:
        if self._loop is None:  # a trial of a population: the population runs the iteration
            raise RuntimeError(
                f"this {type(self).__name__} is a trial of a population; Population.train() "
                "trains it (and hands each trial its iteration through train_from)"
            )
        self.state, self.runner_state, result = self._loop.step(self.state, self.runner_state)
        return result

    # ------------------------------------------------------------------ checkpoint hooks
    @property
    def _env_state_io(self) -> Any:
        """What saves and restores the envs' state: the runner group's, or on a JAX env's fused
        path its envs' states with the rest of the runner state (``JaxEnvStates``)."""
        spec = self.env_spec
        fused_jax = self.fused and not self._population_member and is_jax_spec(spec)
        if spec is not None and fused_jax and getattr(self, "runner_state", None) is not None:
            return JaxEnvStates(self, spec.name)
        return self._runners

    def _checkpoint_state(self, include_replay_buffer: bool | None = None) -> Any:
        # The stored layout: the optimizer state without the injected rate (hyperparams.py).
        return saved_layout(self.state)

    def _restore_state(self, state: Any) -> None:
        state = live_layout(state, self.state)  # the injected rate back (hyperparams.py)
        if self.mesh is not None:
            self.state = distributed.global_array(state, self._state_sharding)
        else:
            self.state = jax.device_put(jax.tree.map(jnp.asarray, state), self.learner_devices[0])
        if self._loop is not None:
            self._loop.set_state(self.state)  # a learner thread goes on from it
        if self._runners is not None:  # runner threads act with them next
            self._runners.publish(self._runner_params(), advance=False)

    def restore_from_path(self, path: str | os.PathLike, component: str | None = None) -> None:
        # A learner thread waits between updates meanwhile: the restore replaces its state, the
        # weights the runners act with and the runner group's faults (dropped runners).
        loop = getattr(self, "_loop", None)
        if loop is None or component is not None:  # a component pauses the thread itself
            super().restore_from_path(path, component)
            return
        with loop.paused():
            super().restore_from_path(path)

    def stop(self) -> None:
        loop = getattr(self, "_loop", None)  # None when building failed part-way
        super().stop()  # closing the runners ends a learner thread's wait for fragments
        if loop is not None:
            loop.close()


__all__ = ["FreeRunning", "OnPolicyAlgorithm"]
