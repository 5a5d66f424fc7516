"""``Algorithm``: config + an algorithm's parts + the execution layer, behind RLlib's public
methods; ``train()`` returns RLlib's result dict.

The jobs behind those methods are units of their own, which this class hands what they need:
runner building (``rljax.runners.build``), evaluation (``rljax.execution.evaluation``),
checkpoints (``rljax.execution.checkpoints``, through the state hooks ``_checkpoint_state``,
``_restore_state``, ``_check_loaded_state`` and ``_inference_target``), inference modules
(``rljax.core.rl_module.rl_module``) and observation checks (``rljax.core.rl_module.inputs``);
the names that moved there (``RLModule``, ``checked_metadata``, ``EpisodeStats``, ...) are
importable from here as before.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from rljax import distributed
from rljax.algorithms.algorithm_config import AlgorithmConfig
from rljax.algorithms.rllib_surface import EnvRunnerGroup, LearnerGroup, SaveResult
from rljax.callbacks.callbacks import HOOKS
from rljax.callbacks.dispatch import Callbacks
from rljax.callbacks.episodes import EpisodeReplay
from rljax.callbacks.runner_hooks import (
    RunnerCallbacks,
    episode_context,
    multi_agent_episode_context,
)
from rljax.connectors.env_to_module import build_env_to_module
from rljax.core import DEFAULT_POLICY_ID
from rljax.core.rl_module.inputs import _checked_leaf as _checked_leaf
from rljax.core.rl_module.inputs import _checked_structure as _checked_structure
from rljax.core.rl_module.inputs import checked_observations
from rljax.core.rl_module.rl_module import RecurrentActor, RLModule
from rljax.core.rl_module.rl_module import rllib_module_path as rllib_module_path
from rljax.env.spaces import is_structured
from rljax.env.vector import EnvSpec, env_spaces, resolve_env
from rljax.execution import checkpoints
from rljax.execution import evaluation as evaluation_job
from rljax.execution.checkpoints import SavedMetadata as SavedMetadata
from rljax.execution.checkpoints import _check_policy_mapping as _check_policy_mapping
from rljax.execution.checkpoints import _checked_load as _checked_load
from rljax.execution.checkpoints import _in_saved_policy_order as _in_saved_policy_order
from rljax.execution.checkpoints import _LoadedCheckpoint as _LoadedCheckpoint
from rljax.execution.checkpoints import _saved_spaces as _saved_spaces
from rljax.execution.checkpoints import check_runner_state_schema as check_runner_state_schema
from rljax.execution.checkpoints import checked_metadata as checked_metadata
from rljax.execution.episode_stats import EpisodeStats
from rljax.execution.evaluation import Background as _Background
from rljax.execution.evaluation import EvaluationEnv
from rljax.execution.loop import IterationResult
from rljax.execution.parts import InferenceFn, Params, PolicyParts, State
from rljax.execution.results import IterationTotals, result_dict
from rljax.execution.video import check_video_dir
from rljax.execution.weights import _replace_leaves as _replace_leaves
from rljax.execution.weights import check_weights_fit, with_weights
from rljax.learners.devices import (
    data_sharding,
    learner_devices,
    make_mesh,
    replicated,
    runner_device,
)
from rljax.policy.export import export_policy
from rljax.runners import build as runner_build
from rljax.runners.acting import recurrent_spec
from rljax.runners.build import needs_x64 as needs_x64
from rljax.runners.group import RunnerGroup
from rljax.types import ActStep, FusedRunnerState
from rljax.utils.checks import require_bool
from rljax.utils.errors import AlgorithmStoppedError, ConfigError
from rljax.utils.exclusive import ExclusiveUse
from rljax.utils.memory import check_fits
from rljax.utils.metrics.metrics_logger import MetricsLogger, merge_into
from rljax.utils.nonfinite import NonFiniteUpdateError, count_non_finite
from rljax.utils.seeding import derive_seed

logger = logging.getLogger("rljax")

DEFAULT_POLICY = DEFAULT_POLICY_ID


class Algorithm:
    """Config + an algorithm's parts + the execution layer, behind RLlib's public methods.

    The base class resolves the env and the devices, runs the training loop and hands the other
    jobs what they need: runners (``rljax.runners.build``), callbacks
    (``rljax.callbacks.runner_hooks``), evaluation (``rljax.execution.evaluation``) and
    checkpoints (``rljax.execution.checkpoints``). A subclass's ``_setup()`` builds its learner
    and sets, once, ``parts`` (its policy's pure functions:
    ``rljax.execution.parts.PolicyParts``), ``state`` (its training state) and
    ``_action_key``; it implements ``_training_step()`` and the checkpoint state hooks
    (``_checkpoint_state``, ``_restore_state``, optionally ``_check_loaded_state`` and
    ``_inference_target``: ``checkpoints.StateHooks``). Nothing else of a subclass is read here.
    """

    config_class: type[AlgorithmConfig] = AlgorithmConfig

    # Set by the subclass's _setup(), once (a subclass declares its own state's type).
    parts: PolicyParts[Any]
    state: State
    _action_key: jax.Array
    # Set by the execution layer's builders: the runner threads, or the fused path's EnvPool env.
    _runners: RunnerGroup | None = None
    _env: Any = None
    # The fused path's runner state (EnvPool handle, pending result, acting key); None otherwise.
    runner_state: Any = None
    # With a learner mesh: where the train state and the batch live (None on one device).
    _state_sharding: Any = None
    _batch_sharding: jax.sharding.Sharding | None = None
    # A multi-agent run's agents (evaluation reports each one's returns); None: single-agent.
    possible_agents: list[Any] | None = None
    # Runners reset an ended episode's sub-env in the step that ended it, so every row is an
    # env step (``rljax.env.vector``): on-policy algorithms, whose batches count env steps as
    # RLlib's do. Off-policy ones keep next-step resets, which their replay buffers read.
    _same_step_reset: bool = False
    env_spec: EnvSpec | None

    @classmethod
    def get_default_config(cls) -> AlgorithmConfig:
        """A new config of this algorithm with its defaults (RLlib's ``get_default_config``),
        e.g. ``get_trainable_cls("PPO").get_default_config().environment("CartPole-v1")``."""
        config = cls.config_class()
        if config.algo_class is None:
            raise ConfigError(f"{cls.__name__} is no algorithm to configure")
        return config

    @classmethod
    def default_resource_request(cls, config: AlgorithmConfig | dict[str, Any]) -> Any:
        """RLlib's resource request of a run of ``config``, as a
        ``tune.PlacementGroupFactory``: the driver's bundle (with the learner's GPUs when
        ``num_learners`` is 0), one per env runner and evaluation env runner
        (``num_cpus_per_env_runner``, ``num_gpus_per_env_runner``) and one per learner
        (``num_cpus_per_learner``, "auto" as 1 CPU without GPUs, ``num_gpus_per_learner``).

        On one host nothing is reserved with it (``rljax.tune.resources``): it records what
        the config's knobs already say, for ``tune.with_resources``.
        """
        from rljax.tune.resources import PlacementGroupFactory

        if isinstance(config, dict):
            config = cls.get_default_config().update_from_dict(config)
        return PlacementGroupFactory(runner_build.resource_bundles(config))

    @classmethod
    def multi_agent_class(cls) -> type[Algorithm] | None:
        """The class that trains this algorithm on ``.multi_agent(...)`` configs, if any."""
        return None

    def __init__(
        self,
        config: AlgorithmConfig,
        *,
        population_member: bool = False,
        inference_only: bool = False,
        saved_spaces: dict[str, Any] | None = None,
    ):
        if not isinstance(config, AlgorithmConfig):
            _refuse_config(type(self), config)
        distributed.initialize(config)  # before any JAX computation: a no-op for one process
        self.config = config
        # train() runs in one thread at a time, and a save never during another thread's
        # train() (whose updates donate the state's buffers): ``_exclusive``.
        self._busy = ExclusiveUse()
        # A trial of a population (``rljax.execution.population``): its learner state and env
        # are built here, and the population trains it.
        self._population_member = population_member
        # A module loaded for inference (``RLModule.from_checkpoint``): the networks and the
        # learner state's shapes only; no env, runner, replay buffer or training program.
        # ``saved_spaces`` (the checkpoint's description) spares resolving the env's.
        self._inference_only = inference_only
        self._saved_spaces = saved_spaces
        self.seed = (
            int(config.seed)
            if config.seed is not None
            else int.from_bytes(os.urandom(4), "little") >> 1
        )
        self.seed = distributed.common_seed(self.seed)  # process 0's, across processes
        self._resolve_env()
        env_name = (
            getattr(self.env_spec, "name", None)
            or (config.env if isinstance(config.env, str) else None)
            or getattr(config.env, "__name__", "the env")
        )
        # Every build, a loaded policy's too: what it allocates, estimated before anything is.
        terms = (
            config.inference_memory_terms(self.observation_space, self.action_space)
            if inference_only
            else config.memory_terms(self.observation_space, self.action_space)
        )
        check_fits(terms, f"{config.algo_name} on {env_name}")
        self.learner_devices = learner_devices(config.num_learners, config.num_gpus_per_learner)
        self.mesh = make_mesh(self.learner_devices) if len(self.learner_devices) > 1 else None
        self.runner_device = runner_device(config.num_gpus_per_env_runner)
        distributed.check_process_settings(self)
        # Observation connectors (config.env_to_module_connector): built once, and stored in
        # the config as their specs, so the checkpoint's config rebuilds them without code.
        self._env_to_module = build_env_to_module(
            config.env_to_module_connector,
            self.observation_space,
            self.action_space,
            self.runner_device,
        )
        if self._env_to_module is not None:
            config.env_to_module_connector = self._env_to_module.specs()
        self.iteration = 0
        # RLlib's private counters, which example scripts keep their own numbers in (a
        # curriculum's current task); not saved in checkpoints.
        self._counters: collections.defaultdict[str, int] = collections.defaultdict(int)
        # Per runner slot: the config a script sees as env_runner.config (RLlib's runners hold
        # copies), and the env its envs were rebuilt from by env_runner.make_env().
        self._runner_configs: dict[int, AlgorithmConfig] = {}
        self._runner_env_specs: dict[int, EnvSpec] = {}
        self.num_env_steps_sampled_lifetime = 0
        self.num_env_steps_trained_lifetime = 0
        self.time_total_s = 0.0
        self.episodes = EpisodeStats(config.metrics_num_episodes_for_smoothing)
        self._infer_cache: dict[InferenceFn, InferenceFn] = {}
        self._recurrent_infer_cache: dict[Any, Callable[..., Any]] = {}
        self._greedy_slots_jit: Callable[[Params, Any], jax.Array] | None = None
        self._num_evaluations = 0
        self._non_finite_seen = 0
        # NaN and infinite numbers in the weights the last checkpoint loaded brought.
        self._non_finite_weights_loaded = 0
        self._stopped = False
        # User callbacks (config.callbacks); with an episode hook the sampled steps reach the
        # host once per iteration (rljax.callbacks.episodes).
        self.callbacks = Callbacks(
            config.callbacks_class, {h: getattr(config, f"callbacks_{h}") for h in HOOKS}
        )
        self.metrics = MetricsLogger()  # RLlib's algo.metrics: top level of the next result
        self._env_runner_metrics = MetricsLogger()  # episode hooks': under env_runners
        self._record_episodes = self.callbacks.wants_episodes and not population_member
        self._episode_replay: EpisodeReplay | None = None
        self._runner_callbacks = RunnerCallbacks(self.callbacks, config, self._env_runner_metrics)
        try:
            self._setup()
            if self._record_episodes and not config.is_multi_agent:
                self._episode_replay = EpisodeReplay(
                    self.callbacks, self._env_runner_metrics, self._episode_context
                )
            if not population_member:
                self._runner_callbacks.envs_created(self._runner_envs())
                self.callbacks("on_algorithm_init", algorithm=self, metrics_logger=self.metrics)
        except BaseException:  # Ctrl-C during a compile too: no runner thread or env outlives it
            self.stop()
            raise
        _stop_at_exit(self)

    # ------------------------------------------------------------------ subclass hooks
    def _resolve_env(self) -> None:
        """Sets ``env_spec`` and the (per-agent) observation and action spaces."""
        if self._saved_spaces is not None:  # a module loaded for inference: no env is built
            self.env_spec = None
            self.observation_space, self.action_space = self._saved_spaces["spaces"]
            return
        self.env_spec = resolve_env(self.config.env, self.config.env_config)
        self.observation_space, self.action_space = env_spaces(self.env_spec)

    def _policy_ids(self) -> list[str]:
        return [DEFAULT_POLICY]

    def _observation_shape(self) -> tuple[int, ...]:
        """The (per-agent) observation space's shape; a space without one (a ``Dict``) is
        refused, which a custom module would otherwise meet as a TypeError."""
        shape = self.observation_space.shape
        if shape is None:
            raise ConfigError(
                f"observation space {self.observation_space} has no fixed shape; rljax's "
                "algorithms need array observations (e.g. a Box)"
            )
        return shape

    def _setup(self) -> None:
        """Builds the learner and the runners; sets ``parts``, ``state`` and ``_action_key``."""
        raise NotImplementedError

    def _training_step(self) -> IterationResult:
        """One iteration of the algorithm's loop (``rljax.execution.loop.Loop``): what it
        sampled, trained and measured, which ``train()`` turns into RLlib's result dict."""
        raise NotImplementedError

    def _check_policy_id(self, policy_id: str | None) -> None:
        ids = self._policy_ids()
        if policy_id is None and len(ids) == 1:
            return
        if policy_id not in ids:
            raise ValueError(f"unknown policy_id {policy_id!r}; this algorithm has {ids}")

    def _checkpoint_state(self, include_replay_buffer: bool | None = None) -> Any:
        """The arrays to save; ``include_replay_buffer`` (None: the config's choice) for replay."""
        raise NotImplementedError

    def _restore_state(self, state: Any) -> None:
        raise NotImplementedError

    def _inference_target(self, includes_replay_buffer: bool) -> Any:
        """The shapes of a checkpoint's state, for a module loaded for inference."""
        return self._checkpoint_state(False)

    def _check_loaded_state(self, state: Any, path: Any) -> None:
        """Checks values of a loaded state (numpy) that its shapes and dtypes cannot: raises
        ``CheckpointError`` naming ``path``. Runs before anything is restored."""

    def _place_learner_state(self, state: Any) -> Any:
        """Replicates ``state`` over the learner mesh (setting the state and batch shardings), or
        puts it on the one learner device."""
        if self.mesh is not None:
            # Across processes a replay buffer's storage is split by sub-env (rljax.distributed).
            self._state_sharding = distributed.state_shardings(state, replicated(self.mesh))
            self._batch_sharding = data_sharding(self.mesh)
            return distributed.global_array(state, self._state_sharding)
        return jax.device_put(state, self.learner_devices[0])

    # ------------------------------------------------------------------ runners
    def _fused_envpool(self) -> bool:
        """EnvPool env, no runner threads: the rollout runs inside jit (the fused path)."""
        return runner_build.fused_envpool(
            self.env_spec, self.config, self.observation_space, self.action_space
        )

    def _on_runner_device(self, params: Any) -> Any:
        """A copy of ``params`` on the runner device, for runner threads to act with.

        A copy, because the update donates the train state while runner threads may still act
        with the previous weights; with a learner mesh ``device_put`` alone may hand back the
        runner device's shard of the replicated state, so the copy is made there.
        """
        params = distributed.local_copy(params)  # across processes: this one's replica
        params = jax.device_put(params, self.runner_device, may_alias=False)
        if self.mesh is not None:
            params = jax.tree.map(jnp.copy, params)
        return params

    def _live_runners(self) -> RunnerGroup:
        """The runner threads, on a path that has them (not the fused one)."""
        assert self._runners is not None, "no runner threads: the fused path, or stopped"
        return self._runners

    def _make_fused_runner(
        self, params: Params, act_step: ActStep | None = None
    ) -> tuple[Callable[..., Any], FusedRunnerState, Callable[..., Any] | None]:
        """Builds the driver's EnvPool env for the fused path (kept in ``self._env``, closed by
        ``stop``); returns ``(xla_step, runner_state, reset_ended)``
        (``runners.build.start_fused_runner``)."""
        assert self.env_spec is not None  # only EnvPool envs run fused
        self._env = runner_build.make_fused_env(self.config, self.env_spec, self.seed)
        return runner_build.start_fused_runner(
            self._env,
            self.config,
            self.parts,
            params,
            self.seed,
            self.runner_device,
            act_step,
            keep_info=self._record_episodes,  # EnvPool's infos for episode callbacks
            same_step_reset=self._same_step_reset,
        )

    def _runner_env(self, runner_index: int) -> Any:
        """A vector env for runner ``runner_index``; None lets the runner build its own."""
        return None

    def _slots_per_runner(self) -> int:
        """Streams (sub-envs, or agent slots) per runner: the offset between runners' ids."""
        return self.config.num_envs_per_env_runner

    def _make_runner_group(
        self,
        params: Params,
        act_step: ActStep,
        fragment_length: int,
        max_policy_lag: int | None = None,
        free_running: bool = False,
        max_queued_fragments: int | None = None,
    ) -> RunnerGroup:
        """``max(1, num_env_runners)`` runners as a started group
        (``runners.build.make_runner_group``, which documents the arguments and the fault
        tolerance settings)."""
        return runner_build.make_runner_group(
            self.config,
            self.env_spec,
            self.seed,
            self.parts,
            params,
            act_step,
            fragment_length,
            self.runner_device,
            streams_per_runner=self._slots_per_runner(),
            runner_env=self._runner_env,
            runner_env_specs=self._runner_env_specs,
            record_infos=self._record_episodes,
            same_step_reset=self._same_step_reset,
            max_policy_lag=max_policy_lag,
            free_running=free_running,
            max_queued_fragments=max_queued_fragments,
        )

    def _fault_tolerance_metrics(self) -> dict[str, int]:
        return runner_build.fault_tolerance_metrics(self._runners)

    # ------------------------------------------------------------------ callbacks
    def _runner_envs(self, slots: Iterable[int] | None = None) -> list[tuple[int, Any, Any]]:
        """``(worker_index, env_runner, vector env)`` of the runners (``slots``: those only);
        on the fused path the algorithm is the one runner."""
        return runner_build.runner_envs(
            self._runners, self.config.num_env_runners, self, self._env, slots
        )

    def _runners_recreated(self) -> None:
        """Calls the hooks for runners the group replaced since the last call."""
        self._runner_callbacks.runners_recreated(self, self._runners, self._runner_envs)

    def _episode_context(self, stream: int) -> dict[str, Any]:
        """The hook arguments of an episode of ``stream`` (a sub-env id across runners)."""
        if not hasattr(self, "_callback_module"):
            self._callback_module = self.get_module()
        return episode_context(
            stream, self._slots_per_runner(), self._runners, self, self._env, self._callback_module
        )

    def _multi_agent_episode_context(self, slot: int, env_index: int) -> dict[str, Any]:
        modules = {pid: self.get_module(pid) for pid in self._policy_ids()}
        return multi_agent_episode_context(slot, env_index, self._runners, modules)

    def _replay_episodes(self, out: dict[str, Any]) -> None:
        """Episode hooks over the iteration's steps, then ``on_sample_end``."""
        if self._record_episodes:
            self._runner_callbacks.replay_episodes(
                out,
                self._episode_replay,
                self._multi_agent_episode_context,
                self if self._runners is None else None,
            )

    # ------------------------------------------------------------------ training
    @contextlib.contextmanager
    def _exclusive(self, what: str, reentrant: bool = False) -> Iterator[None]:
        """Runs ``what`` (``train()``, a save) with no other thread in ``train()`` or a save of
        this algorithm; raises ``AlgorithmBusyError`` at once if one is (no waiting).

        ``reentrant``: also runs inside this thread's own ``train()`` (a save from a callback).
        """
        with self._busy.hold(what, type(self).__name__, reentrant):
            yield

    def train(self) -> dict[str, Any]:
        """Runs one training iteration and returns RLlib's nested result dict.

        Raises ``AlgorithmStoppedError`` after ``stop()``, and ``AlgorithmBusyError`` while
        another thread runs this algorithm's ``train()`` or a save.
        """
        with self._exclusive("train()"):
            return self._train_iteration()

    def train_from(self, iteration: IterationResult) -> dict[str, Any]:
        """``train()`` of an iteration that ran outside this algorithm: a population's step
        over its stacked trials (``rljax.execution.population``) hands each trial its
        ``IterationResult``, which becomes the trial's RLlib result dict as ``train()`` makes
        it (counters, callbacks, evaluation)."""
        with self._exclusive("train()"):
            return self._train_iteration(iteration)

    def _train_iteration(self, ran: IterationResult | None = None) -> dict[str, Any]:
        if self._stopped:
            raise AlgorithmStoppedError(
                f"train() after stop(): this {type(self).__name__}'s env runners and envs are "
                "closed. Build a new algorithm (config.build_algo()), or continue this one from a "
                "checkpoint: save_to_path(dir) still works after stop(), then "
                "Algorithm.from_checkpoint(dir)"
            )
        start = time.perf_counter()
        interval = self.config.evaluation_interval
        due = interval is not None and interval > 0 and (self.iteration + 1) % interval == 0
        parallel = None
        step_done = threading.Event()  # a parallel "auto" evaluation runs until it is set
        if due and self.config.evaluation_parallel_to_training:
            self.callbacks("on_evaluate_start", algorithm=self, metrics_logger=self.metrics)
            params = self._evaluation_params()
            parallel = _Background(self._run_evaluation, None, params, step_done)
        try:
            out = ran if ran is not None else self._training_step()
        except BaseException as e:
            if parallel is not None:
                step_done.set()
                parallel.wait()  # no evaluation outlives a failed iteration; its error first
            distributed.raise_if_peer_failed(e)  # across processes: a collective's lost peer
            raise
        step_done.set()
        evaluation = parallel.result() if parallel is not None else None
        self._runners_recreated()
        self._replay_episodes(
            {"episode_steps": out.episode_steps, "multi_agent_episodes": out.multi_agent_episodes}
        )
        self.iteration += 1
        self.num_env_steps_sampled_lifetime += int(out.num_env_steps_sampled)
        self.num_env_steps_trained_lifetime += int(out.num_env_steps_trained)
        self.episodes.add(out.episode_returns, out.episode_lens)
        non_finite_total = count_non_finite(self._checkpoint_state(False))
        non_finite = non_finite_total - self._non_finite_seen
        self._non_finite_seen = non_finite_total
        # A trial of a population: the population's step, shared by its trials, ran before.
        elapsed = time.perf_counter() - start + float(out.shared_s)
        self.time_total_s += elapsed
        result = result_dict(
            out,
            IterationTotals(
                iteration=self.iteration,
                elapsed_s=elapsed,
                time_total_s=self.time_total_s,
                num_env_steps_sampled_lifetime=self.num_env_steps_sampled_lifetime,
                num_env_steps_trained_lifetime=self.num_env_steps_trained_lifetime,
                episodes=self.episodes.summary(),
                num_episodes_lifetime=self.episodes.num_episodes_lifetime,
                env_runner_metrics=self._env_runner_metrics.reduce(),
                num_non_finite_updates=non_finite,
                num_non_finite_updates_lifetime=non_finite_total,
                num_non_finite_weights_loaded=self._non_finite_weights_loaded,
                fault_tolerance=self._fault_tolerance_metrics(),
            ),
        )
        if non_finite and self.config.on_non_finite_update == "raise":
            raise NonFiniteUpdateError(
                f"training iteration {self.iteration}: {non_finite} update step(s) had NaN or "
                "infinite gradients and were skipped (the parameters are still finite); look for "
                "NaN/inf in rewards or observations, or lower the learning rate. "
                "fault_tolerance(on_non_finite_update='skip') trains on past them"
            )
        if evaluation is not None:  # evaluated while this iteration trained
            self.callbacks(
                "on_evaluate_end",
                algorithm=self,
                metrics_logger=self.metrics,
                evaluation_metrics=evaluation,
            )
            result["evaluation"] = evaluation
        elif due:
            result["evaluation"] = self.evaluate()
        merge_into(result, self.metrics.reduce(), "")
        self.callbacks(
            "on_train_result", algorithm=self, metrics_logger=self.metrics, result=result
        )
        return result

    # ------------------------------------------------------------------ inference
    def _check_obs(self, obs: Any, batched: bool) -> Any:
        """Observations checked against the observation space (an array, or for Dict / Tuple
        spaces a dict / tuple of arrays); a mismatch raises ``ValueError`` naming it."""
        if not is_structured(self.observation_space):
            self._observation_shape()  # a space without a shape: ConfigError, as before
        return checked_observations(self.observation_space, obs, batched)

    def _infer_fn(self, explore: bool, policy_id: str | None = None) -> InferenceFn:
        """The jitted ``parts.inference(policy_id, explore)``: one per inference function, so
        policies that share a network share its compilations."""
        explore = require_bool("explore", explore)  # "no" or 1 must not pick sampling
        infer = self.parts.inference(policy_id, explore)
        if infer not in self._infer_cache:
            self._infer_cache[infer] = jax.jit(infer)
        return self._infer_cache[infer]

    def _recurrent_infer_fn(self, explore: bool) -> Callable[..., Any]:
        """A recurrent policy's jitted ``recurrent_inference(explore)``, compiled once."""
        assert self.parts.recurrent_inference is not None
        infer = self.parts.recurrent_inference(explore)
        if infer not in self._recurrent_infer_cache:
            self._recurrent_infer_cache[infer] = jax.jit(infer)
        return self._recurrent_infer_cache[infer]

    def compute_actions(
        self, obs_batch: Any, explore: bool = False, policy_id: str | None = None
    ) -> Any:
        """Actions for a batch of observations ``[B, *obs_shape]`` (or a dict id -> observation).

        An empty batch gives an empty array of the action shape and dtype (``{}`` for ``{}``).
        """
        explore = require_bool("explore", explore)
        self._check_policy_id(policy_id)
        space = self.observation_space
        # A dict of observations by id, unless it is one batch of a Dict space.
        is_batch = isinstance(space, gym.spaces.Dict) and (
            isinstance(obs_batch, dict) and set(obs_batch) == set(space.spaces)
        )
        if isinstance(obs_batch, dict) and not is_batch:
            if not obs_batch:
                return {}
            ids = list(obs_batch)
            rows = [self._check_obs(obs_batch[i], False) for i in ids]
            actions = self.compute_actions(
                jax.tree.map(lambda *xs: np.stack(xs), *rows), explore, policy_id
            )
            return {i: jax.tree.map(lambda a, k=k: a[k], actions) for k, i in enumerate(ids)}
        return self._forward(self._check_obs(obs_batch, batched=True), explore, policy_id)[1]

    def _forward(
        self,
        obs: np.ndarray,
        explore: bool,
        policy_id: str | None = None,
        params: Params | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One jitted pass over checked observations: (action_dist_inputs, env actions), with
        the current weights or ``params`` (a snapshot)."""
        if params is None:
            params = self.parts.inference_params(self.state, policy_id)
        infer = self._infer_fn(explore, policy_id)
        if len(jax.tree.leaves(obs)[0]) == 0:
            return empty_outputs(infer, params, obs, self._action_key)
        inputs, action = infer(params, jax.tree.map(jnp.asarray, obs), self._next_action_key())
        return np.asarray(inputs), self.parts.to_env_action_host(jax.tree.map(np.asarray, action))

    def _next_action_key(self) -> jax.Array:
        """A new key of the inference key stream (``compute_actions``, modules, evaluation)."""
        self._action_key, sub = jax.random.split(self._action_key)
        return sub

    def compute_single_action(
        self, observation: Any, explore: bool = False, policy_id: str | None = None
    ) -> Any:
        """The action for one observation; ``explore=False`` takes the distribution's mode."""
        explore = require_bool("explore", explore)
        self._check_policy_id(policy_id)
        obs = self._check_obs(observation, batched=False)
        actions = self._forward(jax.tree.map(lambda x: x[None], obs), explore, policy_id)[1]
        action = jax.tree.map(lambda a: a[0], actions)  # a Tuple / Dict space's: part by part
        return int(action) if isinstance(self.action_space, gym.spaces.Discrete) else action

    def get_module(self, policy_id: str | None = None) -> RLModule:
        self._check_policy_id(policy_id)
        return RLModule(self, policy_id)

    # ------------------------------------------------------------------ RLlib's attributes
    @property
    def training_iteration(self) -> int:
        """Iterations trained so far (RLlib's name; also ``iteration``)."""
        return self.iteration

    def get_config(self) -> AlgorithmConfig:
        """The config this algorithm was built from (RLlib's ``get_config``)."""
        return self.config

    def get_weights(self, policies: list[str] | None = None) -> dict[str, Any]:
        """``{policy_id: the policy's inference weights}`` as numpy arrays (RLlib's
        ``get_weights``); ``policies``: these only (default: all)."""
        wanted = list(self._policy_ids()) if policies is None else list(policies)
        out = {}
        for pid in wanted:
            self._check_policy_id(None if pid == DEFAULT_POLICY else pid)
            params = self.get_module(None if pid == DEFAULT_POLICY else pid).params
            out[pid] = jax.tree.map(np.asarray, jax.device_get(params))
        return out

    def _runner_params(self) -> Any:
        """The weights runner threads act with (each execution layer's own)."""
        raise NotImplementedError

    def set_weights(self, weights: dict[str, Any]) -> None:
        """Replaces policies' inference weights (RLlib's ``set_weights``): ``{policy_id:
        weights}`` in ``get_weights()``'s structure. The weights are written where the training
        state holds them, so the learner trains on from them and the runners act with them
        from the next sample on; target networks and optimizer state are left as they are.
        A shape or structure that differs from the policy's is refused, naming both."""
        for pid, given in weights.items():
            policy_id = None if pid == DEFAULT_POLICY else pid
            self._check_policy_id(policy_id)
            current = self.parts.inference_params(self.state, policy_id)
            check_weights_fit(pid, given, current)
            self.state = with_weights(self.state, current, given, pid, type(self).__name__)
        if self._runners is not None:  # runner threads act with them next (none after stop())
            self._runners.publish(self._runner_params(), advance=False)

    @property
    def env_runner(self) -> Any:
        """The local env runner (RLlib's ``algo.env_runner``): the driver's sampling, or None
        with runner threads."""
        return self.env_runner_group.local_env_runner

    @property
    def learner_group(self) -> LearnerGroup:
        """The learners as RLlib's ``LearnerGroup``: ``get_weights()``, ``foreach_learner``."""
        return LearnerGroup(self)

    @property
    def env_runner_group(self) -> EnvRunnerGroup:
        """The env runners, as RLlib's ``EnvRunnerGroup``: ``foreach_env_runner(fn)``."""
        return EnvRunnerGroup(self)

    def export_policy(
        self,
        path: str | os.PathLike,
        policy_id: str | None = None,
        platforms: tuple[str, ...] = ("cpu", "cuda"),
    ) -> str:
        """Writes the policy for serving with JAX alone: StableHLO programs (greedy and
        sampling, any batch size) and a JSON of its spaces; see ``rljax.policy.export``."""
        return export_policy(self, path, policy_id, platforms)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, record_video: str | os.PathLike | None = None) -> dict[str, Any]:
        """Runs ``evaluation_duration`` episodes (or timesteps) with the greedy policy
        (sampling with ``evaluation_config={"explore": True}``).

        Episodes run on their own copies of the env (``min(evaluation_duration, 8)`` of them,
        or ``evaluation_num_env_runners * num_envs_per_env_runner``; new episodes each time;
        ``evaluation_config`` may name another ``env`` / ``env_config`` with the same spaces);
        in a multi-agent run with the training mapping function, so each agent plays with the
        policy it trains, and the returns per policy and per agent are reported too.

        ``record_video=DIR``: the episodes (``evaluation_duration`` of them; with the
        ``"timesteps"`` unit, whole episodes until that many steps) are played one after
        another on a rendering copy of the env and each is written to
        ``DIR/episode-<i>.mp4`` (``rljax.execution.video``); the result lists them under
        ``videos``. Single-agent runs; needs imageio-ffmpeg (``pip install rljax[video]``).
        """
        video_dir = None
        if record_video is not None:
            if self.possible_agents is not None or self.env_spec is None:
                raise ConfigError("record_video records single-agent envs only")
            video_dir = check_video_dir(record_video)
        self.callbacks("on_evaluate_start", algorithm=self, metrics_logger=self.metrics)
        result = self._run_evaluation(video_dir)
        self.callbacks(
            "on_evaluate_end",
            algorithm=self,
            metrics_logger=self.metrics,
            evaluation_metrics=result,
        )
        return result

    def _evaluation_params(self) -> Any:
        """A copy of the weights evaluation acts with (so that training may go on)."""
        return evaluation_job.evaluation_params(self.parts, self.state)

    def _run_evaluation(
        self,
        video_dir: Path | None = None,
        params: Any = None,
        trained: threading.Event | None = None,
    ) -> dict[str, Any]:
        """One evaluation (no callbacks): with the current weights, or ``params``; ``trained``:
        set when the training step it runs beside has ended (``evaluation_duration="auto"``)."""
        cfg = self.config
        spaces = (self.observation_space, self.action_space)
        spec = evaluation_job.evaluation_spec(cfg, self.env_spec, spaces)
        self._num_evaluations += 1
        seed = derive_seed(self.seed, 7919 * self._num_evaluations)  # new episodes each time
        actions = self._evaluation_actions(evaluation_job.evaluation_explores(cfg), params)
        if cfg.custom_evaluation_function is not None and video_dir is None:
            return evaluation_job.custom_evaluation(
                self,
                cfg,
                actions,
                seed,
                spec,
                spaces,
                self.metrics,
                self.possible_agents is not None,
            )
        agents = self.possible_agents
        return evaluation_job.run_evaluation(
            cfg,
            spec,
            seed,
            actions,
            self._evaluation_env,
            recurrent=self.parts.recurrent_inference is not None,
            video_dir=video_dir,
            trained=trained,
            policy_ids=self._policy_ids() if agents is not None else None,
            agent_ids=agents,
        )

    def _evaluation_env(
        self, num_envs: int, seed: int, spec: EnvSpec | None = None
    ) -> EvaluationEnv:
        """``num_envs`` copies of the env ``spec`` (default: the training env) for
        evaluation (a multi-agent run builds its own)."""
        spec = spec or self.env_spec
        assert spec is not None  # a single-agent run resolved its env
        return evaluation_job.single_agent_env(spec, num_envs, seed)

    def _evaluation_actions(
        self, explore: bool = False, params: Any = None
    ) -> Callable[[Any], np.ndarray]:
        """Observations -> the policy's env actions (greedy, or sampled with ``explore``), for
        evaluation; with ``params`` (a snapshot) instead of the current weights."""
        parts = self.parts
        if parts.recurrent_inference is not None:
            spec = recurrent_spec(parts.act)
            infer = self._recurrent_infer_fn(explore)
            if params is None:
                params = parts.inference_params(self.state, None)
            return RecurrentActor(
                spec, infer, params, parts.to_env_action_host, self._next_action_key
            )
        if parts.greedy_slots is None:
            return lambda obs: self._forward(jax.tree.map(np.asarray, obs), explore, params=params)[
                1
            ]
        greedy = self._greedy_slots_jit
        if greedy is None:
            # Typed as the function it wraps: mypy 1.14 joins a jitted one and it to object.
            jitted: Callable[[Params, Any], jax.Array] = jax.jit(parts.greedy_slots)
            greedy = self._greedy_slots_jit = jitted
        if params is None:
            params = parts.acting_params(self.state)
        to_env = parts.to_env_action_host
        return lambda obs: to_env(np.asarray(greedy(params, obs)))

    # ------------------------------------------------------------------ checkpoints
    def _spaces_data(self) -> dict[str, Any] | None:
        """The spaces and agents as data in the metadata (None: resolved when loading)."""
        return checkpoints.spaces_data(
            self.observation_space, self.action_space, self.possible_agents
        )

    def _includes_replay_buffer(self, include_replay_buffer: bool | None) -> bool:
        return checkpoints.includes_replay_buffer(self.config, include_replay_buffer)

    def _counter_values(self) -> dict[str, Any]:
        """The counters a checkpoint keeps (``checkpoints._COUNTERS`` and ``time_total_s``)."""
        return {
            "training_iteration": self.iteration,
            "num_env_steps_sampled_lifetime": self.num_env_steps_sampled_lifetime,
            "num_env_steps_trained_lifetime": self.num_env_steps_trained_lifetime,
            "time_total_s": self.time_total_s,
            "num_episodes_lifetime": self.episodes.num_episodes_lifetime,
            "num_evaluations": self._num_evaluations,
        }

    def _set_counter_values(self, counters: dict[str, Any]) -> None:
        self.iteration = counters["training_iteration"]
        self.num_env_steps_sampled_lifetime = counters["num_env_steps_sampled_lifetime"]
        self.num_env_steps_trained_lifetime = counters["num_env_steps_trained_lifetime"]
        self.time_total_s = counters["time_total_s"]
        self.episodes.num_episodes_lifetime = counters["num_episodes_lifetime"]
        self._num_evaluations = counters["num_evaluations"]  # seeds evaluation envs

    def save_to_path(
        self,
        path: str | os.PathLike | None = None,
        include_replay_buffer: bool | None = None,
        num_to_keep: int = 1,
    ) -> str:
        """Writes a checkpoint (atomically, no pickle) and returns its directory.

        ``path`` None: a new temporary directory (RLlib's default).
        ``include_replay_buffer`` (off-policy algorithms): also save the replay buffer, so that
        a restored run continues as if never stopped; None follows the config's
        ``store_buffer_in_checkpoints``. ``num_to_keep``: how many versions saved to ``path``
        stay (the newest loads from ``path``, an older one from ``path/v-NNNNNN``).

        The env runners' mid-episode state is saved too where it can be (gymnasium envs, SYNC
        or lock-step ASYNC, synchronous sampling, env state that is plain data:
        ``rljax.env.state``), so that a restored run continues exactly as this one would;
        otherwise the metadata's ``env_state_missing_because`` says why, and a restored run
        starts new episodes.

        A save leaves everything in ``path`` that saves did not write as it is
        (``rljax.utils.checkpoint.is_checkpoint_entry``). ``path`` that is a file raises
        ``CheckpointError`` before anything is written; another process saving to ``path`` is
        waited for (``CheckpointBusyError`` after ``SAVE_LOCK_TIMEOUT_S``); a save while another
        thread runs this algorithm's ``train()`` raises ``AlgorithmBusyError`` (from a callback
        of ``train()`` itself it works).
        """
        with self._exclusive(f"save_to_path({str(path)!r})", reentrant=True):
            metadata = checkpoints.run_metadata(
                self.config,
                (self.observation_space, self.action_space),
                self._spaces_data(),
                self._policy_ids(),
                self.seed,
                self._counter_values(),
            )
            return checkpoints.save(
                self,
                path,
                metadata,
                include_replay_buffer=self._includes_replay_buffer(include_replay_buffer),
                runners=self._runners,
                stopped=self._stopped,
                num_to_keep=num_to_keep,
            )

    def save(self, checkpoint_dir: str | os.PathLike | None = None, **kwargs: Any) -> SaveResult:
        """Writes a checkpoint and returns what RLlib's ``save`` returns: an object whose
        ``checkpoint.path`` is the directory (``metrics``: the counters at the save).
        ``checkpoint_dir`` None: a new temporary directory."""
        from rljax.tune.result_grid import Checkpoint

        path = self.save_to_path(checkpoint_dir, **kwargs)
        return SaveResult(
            checkpoint=Checkpoint(path),
            metrics={
                "training_iteration": self.iteration,
                "num_env_steps_sampled_lifetime": self.num_env_steps_sampled_lifetime,
            },
        )

    def restore_from_path(self, path: str | os.PathLike) -> None:
        """Loads a checkpoint of the same algorithm and architecture into this algorithm.

        Everything is read and checked first (the metadata's fields, the state's tree, shapes
        and dtypes against this algorithm's, the env runners' saved state), so a checkpoint
        that does not fit raises ``CheckpointError`` and leaves this algorithm as it was.
        """
        restored = checkpoints.restore(
            self,
            path,
            algo_name=self.config.algo_name,
            policy_ids=self._policy_ids(),
            runners=self._runners,
        )
        self._set_counter_values(restored.saved.counters)
        self._non_finite_seen = count_non_finite(self._checkpoint_state(False))
        self._non_finite_weights_loaded = checkpoints.non_finite_weights_loaded(
            restored.state, restored.state_file
        )
        self.callbacks("on_checkpoint_loaded", algorithm=self)

    def restore(self, checkpoint_path: Any) -> None:
        """Loads a checkpoint (RLlib's ``restore``): a directory, a ``tune.Checkpoint`` or what
        ``save()`` returned."""
        checkpoint = getattr(checkpoint_path, "checkpoint", checkpoint_path)
        self.restore_from_path(os.fspath(checkpoint))

    @classmethod
    def _for_inference(
        cls,
        path: str | os.PathLike,
        *,
        allow_imports: Iterable[str] | None = None,
        env: Any = None,
        module_class: Any = None,
    ) -> Algorithm:
        """The networks and weights of a checkpoint, for inference only
        (``checkpoints.for_inference``): no env, runner, replay buffer or training program."""
        return checkpoints.for_inference(
            path,
            loader=None if cls is Algorithm else cls,
            allow_imports=allow_imports,
            env=env,
            module_class=module_class,
        )

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike,
        *,
        allow_imports: Iterable[str] | None = None,
        env: Any = None,
        policy_mapping_fn: Any = None,
        module_class: Any = None,
        callbacks: Any = None,
    ) -> Algorithm:
        """Builds the algorithm a checkpoint was written by and restores its state.

        The run's callbacks (``config.callbacks``) are code too: pass them again
        (``callbacks=MyCallbacks``, for the callback classes) or allow their module; callbacks
        that are neither are left out, with a warning.

        A checkpoint may come from anyone: loading it never imports or calls code that it
        names. A config whose env, policy mapping function or module class is code (not an
        env id) loads only when the caller opts in: by passing the object (``env=MyEnv``,
        ``policy_mapping_fn=fn``, ``module_class=MyModule``), by registering it in this
        process (``rljax.register_env``, ``register_module_class``,
        ``register_policy_mapping_fn``), or by allowing its module
        (``allow_imports=["mypkg"]``). Every field is checked, and the config's memory
        estimated against the machine's, before anything is built; a checkpoint that does not
        fit raises ``CheckpointError`` naming the file and the field.
        """
        return checkpoints.from_checkpoint(
            path,
            loader=None if cls is Algorithm else cls,
            allow_imports=allow_imports,
            env=env,
            policy_mapping_fn=policy_mapping_fn,
            module_class=module_class,
            callbacks=callbacks,
        )

    def stop(self) -> None:
        """Closes envs and runner threads; a second call does nothing.

        Afterwards ``train()`` raises ``AlgorithmStoppedError``; what needs no env runner still
        works: ``compute_actions``, ``get_module()``, ``save_to_path`` and ``evaluate()`` (which
        builds its own envs). An algorithm not stopped by the time the interpreter exits is
        stopped then (``_stop_at_exit``).
        """
        self._stopped = True
        with _LIVE_LOCK:  # the exit handler may be copying the set in another thread
            _LIVE.discard(self)
        if self._runners is not None:
            self._runners.close()
            self._runners = None
        if self._env is not None:
            self._env.close()
            self._env = None

    def __enter__(self) -> Algorithm:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# Algorithms built and not yet stopped. A script that ends without ``stop()`` (as many of RLlib's
# do) would otherwise leave runner and learner threads running while the interpreter and JAX's
# backends shut down, which aborts the process ("terminate called ..."); they are stopped at exit.
_LIVE: weakref.WeakSet[Algorithm] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def _stop_live_algorithms() -> None:
    """Stops every algorithm not yet stopped (an ``atexit`` handler); an error is logged."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for algo in live:
        try:
            algo.stop()
        except Exception:
            logger.exception("stopping %s at interpreter exit", type(algo).__name__)


def _stop_at_exit(algo: Algorithm) -> None:
    """Has ``algo`` stopped at interpreter exit unless ``stop()`` runs first.

    ``atexit`` runs its handlers last-registered first, after ``threading`` has joined the
    non-daemon threads (the runner and learner threads are daemons: they still run). Registered
    again at each build, the handler runs before every handler registered earlier, JAX's among
    them (which tear down its backends), so the threads end while JAX still works.
    """
    with _LIVE_LOCK:
        _LIVE.add(algo)
        atexit.unregister(_stop_live_algorithms)
        atexit.register(_stop_live_algorithms)


def _refuse_config(cls: type[Algorithm], config: Any) -> None:
    """``Algo(config=...)`` with something other than a config object: what to call instead."""
    name = cls.config_class.__name__
    algo = cls.config_class.algo_name
    if isinstance(config, Mapping):
        from rljax.utils.old_api_trainers import trainer_path

        path = trainer_path(algo)
        trainer = f"; RLlib 1.x's dict keys: {path}(config=d)" if path else ""
        raise ConfigError(
            f"{cls.__name__}(config=<a dict>): {cls.__name__} takes a {name}; build it from the "
            f"dict with {name}().update_from_dict(d).build_algo(){trainer}"
        )
    raise ConfigError(
        f"{cls.__name__}(config={config!r}): expected a {name} "
        f"({name}().environment(...).build_algo() builds the algorithm)"
    )


def empty_outputs(
    infer: InferenceFn, params: Params, obs: Any, key: jax.Array
) -> tuple[np.ndarray, np.ndarray]:
    """``infer(params, obs, key)``'s outputs for an empty batch ``obs``, built from its output
    shapes for one row (traced, not compiled): nothing needs computing, and a model that reshapes
    by the batch size cannot even be traced with a batch of 0."""
    row = jax.tree.map(lambda x: jax.ShapeDtypeStruct((1, *x.shape[1:]), x.dtype), obs)
    inputs, action = jax.eval_shape(infer, params, row, key)
    return (
        np.zeros((0, *inputs.shape[1:]), inputs.dtype),
        jax.tree.map(lambda a: np.zeros((0, *a.shape[1:]), a.dtype), action),
    )
