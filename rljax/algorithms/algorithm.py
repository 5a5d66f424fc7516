"""``Algorithm``: builds runners and learner from a config; ``train()`` returns RLlib's result dict."""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import logging
import math
import os
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

import rljax
from rljax import distributed
from rljax.algorithms import registry as algorithm_registry
from rljax.algorithms.algorithm_config import AlgorithmConfig
from rljax.algorithms.rllib_surface import (
    EnvRunnerGroup,
    EvaluationEnvRunner,
    EvaluationEnvRunnerGroup,
    LearnerGroup,
    SaveResult,
)
from rljax.callbacks.callbacks import HOOKS
from rljax.callbacks.dispatch import Callbacks
from rljax.callbacks.episodes import EpisodeReplay, replay_multi_agent
from rljax.connectors.env_to_module import build_env_to_module
from rljax.core import DEFAULT_POLICY_ID, RL_MODULE_PATH
from rljax.core.rl_module.forward_module import ForwardModuleBase, forward_module_outputs
from rljax.env.env_context import EnvContext
from rljax.env.spaces import is_structured, space_from_data, space_to_data
from rljax.env.state import EnvStateError, EnvStateMalformed
from rljax.env.vector import (
    EnvSpec,
    env_spaces,
    envpool_batch_size,
    make_envpool,
    make_host_env,
    resolve_env,
)
from rljax.execution.evaluation import EvaluationEnv, SingleAgentEpisodes, evaluate_policy
from rljax.execution.parts import InferenceFn, Params, PolicyParts, State
from rljax.execution.video import check_video_dir, record_episodes, rendering_env
from rljax.learners.devices import (
    data_sharding,
    learner_devices,
    make_mesh,
    replicated,
    runner_device,
)
from rljax.policy.export import export_policy
from rljax.runners.acting import (
    ActStep,
    FusedRunnerState,
    recurrent_input,
    recurrent_spec,
)
from rljax.runners.fused import FusedRunner, start_envpool
from rljax.runners.group import RunnerGroup
from rljax.runners.host import HostRunner, RunnerSpec
from rljax.utils import checkpoint as ckpt
from rljax.utils.checks import require_bool
from rljax.utils.errors import (
    AlgorithmBusyError,
    AlgorithmStoppedError,
    CheckpointError,
    ConfigError,
)
from rljax.utils.jit import abstract_init
from rljax.utils.memory import check_fits
from rljax.utils.metrics.metrics_logger import MetricsLogger, merge_into
from rljax.utils.nonfinite import NonFiniteUpdateError, count_non_finite
from rljax.utils.references import LoadPolicy
from rljax.utils.seeding import derive_seed

logger = logging.getLogger("rljax")

DEFAULT_POLICY = DEFAULT_POLICY_ID


class EpisodeStats:
    """RLlib's episode metrics: means over the episodes finished in the latest iteration.

    As RLlib's new API stack reports them: each ``train()`` reduces the episodes its runners
    finished since the previous one (the last ``window`` of them, ``window`` being
    ``metrics_num_episodes_for_smoothing``), so the figures follow the current policy instead
    of lagging over earlier iterations; an iteration that finishes no episode reports NaN.
    """

    def __init__(self, window: int):
        self.returns: collections.deque[float] = collections.deque(maxlen=window)
        self.lengths: collections.deque[int] = collections.deque(maxlen=window)
        self.num_episodes_lifetime = 0

    def add(self, returns: np.ndarray, lengths: np.ndarray) -> None:
        """The episodes of a new iteration (those of the previous one are dropped)."""
        self.returns.clear()
        self.lengths.clear()
        self.returns.extend(float(r) for r in returns)
        self.lengths.extend(int(n) for n in lengths)
        self.num_episodes_lifetime += len(returns)

    def summary(self) -> dict[str, float]:
        if not self.returns:
            nan = float("nan")
            return {
                k: nan
                for k in (
                    "episode_return_mean",
                    "episode_return_max",
                    "episode_return_min",
                    "episode_len_mean",
                    "episode_len_max",
                    "episode_len_min",
                )
            }
        r = np.asarray(self.returns)
        n = np.asarray(self.lengths)
        return {
            "episode_return_mean": float(r.mean()),
            "episode_return_max": float(r.max()),
            "episode_return_min": float(r.min()),
            "episode_len_mean": float(n.mean()),
            "episode_len_max": int(n.max()),
            "episode_len_min": int(n.min()),
        }


def _checked_leaf(space: gym.Space, obs: Any, batched: bool, where: str = "observation") -> Any:
    """One array observation (or a batch) checked against ``space``'s shape and dtype."""
    shape = space.shape
    if shape is None:
        raise ValueError(f"{where}: the space {space} has no fixed shape")
    arr = np.asarray(obs)
    expected = shape if not batched else (None,) + shape
    shape_ok = (
        arr.shape == shape
        if not batched
        else (arr.ndim == len(shape) + 1 and arr.shape[1:] == shape)
    )
    if not shape_ok:
        raise ValueError(
            f"{where} of shape {arr.shape} does not fit the observation space {space} "
            f"(expected shape {expected})"
        )
    if isinstance(space, gym.spaces.Box):
        if not (np.can_cast(arr.dtype, space.dtype, "same_kind") or arr.dtype.kind in "iub"):
            raise ValueError(
                f"{where} dtype {arr.dtype} does not fit the observation space dtype {space.dtype}"
            )
        arr = arr.astype(space.dtype, copy=False)
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"{where} dtype {arr.dtype} does not fit {space} (integers)")
    return arr


def _checked_structure(space: gym.Space, obs: Any, batched: bool, where: str) -> Any:
    """A Dict / Tuple observation checked leaf by leaf: a dict with the space's keys (sorted,
    as JAX orders them) or a tuple of its length."""
    if isinstance(space, gym.spaces.Dict):
        keys = set(space.spaces)
        if not isinstance(obs, dict) or set(obs) != keys:
            got = sorted(map(str, obs)) if isinstance(obs, dict) else type(obs).__name__
            raise ValueError(f"{where} must be a dict with keys {sorted(keys)}; got {got}")
        return {
            k: _checked_structure(space.spaces[k], obs[k], batched, f"{where}[{k!r}]")
            for k in sorted(keys)
        }
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(obs, tuple | list) or len(obs) != len(space.spaces):
            raise ValueError(f"{where} must be a tuple of {len(space.spaces)} observations")
        return tuple(
            _checked_structure(s, o, batched, f"{where}[{i}]")
            for i, (s, o) in enumerate(zip(space.spaces, obs, strict=True))
        )
    return _checked_leaf(space, obs, batched, where)


def needs_x64(*spaces: gym.Space) -> bool:
    """Whether a space holds 64-bit floats (EnvPool's MuJoCo tasks) while JAX computes in 32
    bits: such an env cannot be stepped inside jit, so it runs on the host path (a runner in
    the driver that hands EnvPool numpy arrays of its dtypes)."""
    if jax.config.read("jax_enable_x64"):
        return False
    return any(isinstance(s, gym.spaces.Box) and np.dtype(s.dtype) == np.float64 for s in spaces)


class Algorithm:
    """Config + an algorithm's parts + the execution layer, behind RLlib's public methods.

    The base class holds env resolution, devices, metrics, inference, evaluation and
    checkpoints. A subclass's ``_setup()`` builds its learner and sets, once, ``parts`` (its
    policy's pure functions: ``rljax.execution.parts.PolicyParts``), ``state`` (its training
    state) and ``_action_key``; it implements ``_training_step()`` and the checkpoint state
    hooks. Nothing else of a subclass is read here.
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
        c: Any = config
        gpus = float(c.num_gpus_per_learner)
        cpus = c.num_cpus_per_learner
        learner_cpus = float(cpus) if cpus != "auto" else (0.0 if gpus else 1.0)
        if c.num_learners == 0:
            main = {"CPU": max(learner_cpus, 1.0), "GPU": gpus}
        else:
            main = {"CPU": 1.0, "GPU": 0.0}
        runner = {"CPU": float(c.num_cpus_per_env_runner), "GPU": float(c.num_gpus_per_env_runner)}
        runners = int(c.num_env_runners)
        if c.evaluation_interval:
            runners += int(c.evaluation_num_env_runners)
        learners = [{"CPU": learner_cpus, "GPU": gpus}] * int(c.num_learners)
        return PlacementGroupFactory([main, *([runner] * runners), *learners])

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
        self._busy_lock = threading.Lock()
        self._busy_thread: int | None = None
        self._busy_with = ""
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
        self._replaced_seen = 0
        try:
            self._setup()
            if self._record_episodes and not config.is_multi_agent:
                self._episode_replay = EpisodeReplay(
                    self.callbacks, self._env_runner_metrics, self._episode_context
                )
            if not population_member:
                self._envs_created(self._runner_envs())
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

    def _training_step(self) -> dict[str, Any]:
        """One iteration; returns learner metrics, episode arrays, step counts and timers
        (and ``shared_s``: seconds of the iteration spent before the call, for a trial of a
        population)."""
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
        """EnvPool env, no runner threads: the rollout runs inside jit, through EnvPool's XLA
        interface (the fused path)."""
        spec = self.env_spec
        return (
            spec is not None
            and spec.backend == "envpool"
            and self.config.num_env_runners == 0
            and not needs_x64(self.observation_space, self.action_space)
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
        """Builds the driver's EnvPool env for the fused path; returns ``(xla_step,
        runner_state, reset_ended)`` (``runners.fused.start_envpool``).

        ``self._env`` keeps the env (closed by ``stop``); the runner state holds its handle, the
        actor state and the first result, on the runner device. With ``act_step`` and a SYNC
        env, the rollout resets same-step (``_same_step_reset``).
        """
        cfg = self.config
        # Across processes: this process's share of the sub-envs, seeded as in one process.
        n, env_seed = distributed.env_share(cfg.num_envs_per_env_runner, self.seed)
        batch = envpool_batch_size(n, cfg.gym_env_vectorize_mode, cfg.async_batch_size)
        assert self.env_spec is not None  # only EnvPool envs run fused
        self._env = make_envpool(self.env_spec, n, batch, env_seed)
        xla_step, rs, reset_ended = start_envpool(
            self._env,
            self.parts.act,
            act_step,
            params,
            n,
            self.seed,
            self.parts.to_env_action,
            keep_info=self._record_episodes,  # EnvPool's infos for episode callbacks
            same_step=act_step is not None and self._same_step_reset,
        )
        return xla_step, jax.device_put(rs, self.runner_device), reset_ended

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
        """``max(1, num_env_runners)`` runners, each with its own vector env, as a started group.

        ``max_policy_lag``: how many weight versions a runner may sample ahead of the learner
        (``RunnerGroup``); None: 1 with ``sample_async``, else 0. ``free_running``: no lag
        bound, the runners held back only by ``max_queued_fragments`` (IMPALA, APPO); with an
        EnvPool env each of them then runs a whole fragment as one jitted call (``FusedRunner``)
        instead of stepping from Python.

        Fault tolerance: ``restart_failed_sub_environments`` (True, or "auto", the default,
        while ``restart_failed_env_runners`` is on) rebuilds a gymnasium sub-env that raises
        (its broken episode dropped); ``restart_failed_env_runners`` replaces a runner
        whose env raised or hung past ``sample_timeout_s``, up to ``max_num_env_runner_restarts``
        (each replacement built within ``env_runner_health_probe_timeout_s``);
        ``ignore_env_runner_failures`` drops a runner that cannot be restarted.
        """
        cfg = self.config
        builds = [0] * cfg.num_runners
        group: RunnerGroup | None = None
        fused = free_running and self.env_spec is not None and self.env_spec.backend == "envpool"
        spec = RunnerSpec(
            # None for a multi-agent run: its runners get their env from _runner_env.
            self.env_spec,
            cfg.num_envs_per_env_runner,
            cfg.gym_env_vectorize_mode,
            self.seed,
            cfg.async_batch_size,
            self.parts.act,
            act_step,
            self.parts.to_env_action_host,
            self.runner_device,
            num_workers=cfg.num_env_runners,
            restart_sub_envs=self._restarts_sub_envs(),
            record_infos=self._record_episodes,
            same_step=self._same_step_reset,
        )

        def make(i: int) -> HostRunner | FusedRunner:
            restart = builds[i]
            builds[i] += 1
            current = params if group is None or group.params is None else group.params
            runner_spec = dataclasses.replace(
                spec,
                # A runner whose envs a script rebuilt (EnvRunner.make_env) is restarted on them.
                env=self._runner_env_specs.get(i, spec.env),
                seed=derive_seed(self.seed, 1000 * i + 100_003 * restart),  # rebuilt: new episodes
                env_id_offset=i * self._slots_per_runner(),
                worker_index=i + 1 if cfg.num_env_runners else 0,
                make_env=lambda: self._runner_env(i),
            )
            if fused:
                return FusedRunner(runner_spec, current, self.parts.to_env_action)
            return HostRunner(runner_spec, current)

        runners: list[HostRunner | FusedRunner] = []
        try:
            for i in range(len(builds)):
                runners.append(make(i))
        except BaseException:  # a runner failed to build, or Ctrl-C: close those already built
            for runner in runners:
                runner.close(force=True)
            raise
        lag: int | None = max_policy_lag
        if lag is None:
            lag = 1 if cfg.sample_async else 0
        group = RunnerGroup(
            runners,
            fragment_length,
            max_policy_lag=None if free_running else lag,
            max_queued_fragments=max_queued_fragments,
            streams_per_runner=self._slots_per_runner(),
            make_runner=make,
            max_restarts=cfg.max_num_env_runner_restarts if cfg.restart_failed_env_runners else 0,
            ignore_failures=cfg.ignore_env_runner_failures,
            probe_timeout_s=cfg.env_runner_health_probe_timeout_s,
            local_runner=cfg.num_env_runners == 0,
        )
        group.publish(params)
        return group

    def _restarts_sub_envs(self) -> bool:
        """Whether a gymnasium sub-env that raises is rebuilt alone: with
        ``restart_failed_sub_environments=True``, or "auto" (the default) while runners may
        restart (with ``restart_failed_env_runners=False`` the first env error is to stop the
        run). Multi-agent runners build their own envs and replace a failed runner whole;
        EnvPool's C++ envs do not raise."""
        cfg = self.config
        if cfg.restart_failed_sub_environments == "auto":
            return bool(cfg.restart_failed_env_runners)
        return bool(cfg.restart_failed_sub_environments)

    def _fault_tolerance_metrics(self) -> dict[str, int]:
        runners = self._runners
        if runners is None:  # the fused EnvPool rollout: C++ envs, nothing to restart
            return {
                "num_healthy_env_runners": 1,
                "num_env_runner_restarts": 0,
                "num_sub_env_restarts": 0,
            }
        return {
            "num_healthy_env_runners": runners.num_healthy,
            "num_env_runner_restarts": runners.num_restarts,
            "num_sub_env_restarts": runners.num_sub_env_restarts,
        }

    # ------------------------------------------------------------------ callbacks
    def _runner_envs(self, slots: Iterable[int] | None = None) -> list[tuple[int, Any, Any]]:
        """``(worker_index, env_runner, vector env)`` of the runners (``slots``: those only);
        on the fused path the algorithm is the one runner."""
        if self._runners is None:
            return [(0, self, self._env)] if self._env is not None else []
        n = self.config.num_env_runners
        chosen = range(len(self._runners.runners)) if slots is None else slots
        return [
            (i + 1 if n else 0, self._runners.runners[i], self._runners.runners[i].env)
            for i in chosen
        ]

    def _envs_created(self, envs: list[tuple[int, Any, Any]]) -> None:
        if not self.callbacks.defines("on_environment_created"):
            return
        for worker_index, runner, env in envs:
            context = EnvContext(
                self.config.env_config, worker_index, 0, self.config.num_env_runners
            )
            self.callbacks(
                "on_environment_created",
                env_runner=runner,
                metrics_logger=self._env_runner_metrics,
                env=env,
                env_context=context,
            )

    def _runners_recreated(self) -> None:
        """Calls the hooks for runners the group replaced since the last call."""
        if self._runners is None:
            return
        new = self._runners.replaced[self._replaced_seen :]
        self._replaced_seen += len(new)
        if not new:
            return
        self.callbacks(
            "on_env_runners_recreated",
            algorithm=self,
            env_runner_group=self._runners,
            env_runner_indices=[i + 1 for i in new],
            is_evaluation=False,
        )
        self._envs_created(self._runner_envs(sorted(set(new))))

    def _episode_context(self, stream: int) -> dict[str, Any]:
        """The hook arguments of an episode of ``stream`` (a sub-env id across runners)."""
        per_runner = self._slots_per_runner()
        slot, env_index = divmod(stream, per_runner)
        runner: Any
        if self._runners is None:
            runner, env = self, self._env
        else:
            runner = self._runners.runners[min(slot, len(self._runners.runners) - 1)]
            env = runner.env
        if not hasattr(self, "_callback_module"):
            self._callback_module = self.get_module()
        return {
            "env_runner": runner,
            "env": env,
            "env_index": env_index,
            "rl_module": self._callback_module,
        }

    def _multi_agent_episode_context(self, slot: int, env_index: int) -> dict[str, Any]:
        runner = self._runners.runners[slot] if self._runners is not None else None
        return {
            "env_runner": runner,
            "env": getattr(runner, "env", None),
            "env_index": env_index,
            "rl_module": {pid: self.get_module(pid) for pid in self._policy_ids()},
        }

    def _replay_episodes(self, out: dict[str, Any]) -> None:
        """Episode hooks over the iteration's steps, then ``on_sample_end``."""
        if not self._record_episodes:
            return
        finished: list[Any] = []
        if self._episode_replay is not None:
            for steps, infos in out.get("episode_steps", []):
                finished += self._episode_replay.replay(steps, infos)
        else:  # multi-agent: the env copies logged their finished episodes
            finished = replay_multi_agent(
                self.callbacks,
                self._env_runner_metrics,
                out.get("multi_agent_episodes", []),
                self._multi_agent_episode_context,
            )
        self.callbacks(
            "on_sample_end",
            env_runner=self if self._runners is None else None,
            metrics_logger=self._env_runner_metrics,
            samples=finished,
        )

    # ------------------------------------------------------------------ training
    @contextlib.contextmanager
    def _exclusive(self, what: str, reentrant: bool = False) -> Iterator[None]:
        """Runs ``what`` (``train()``, a save) with no other thread in ``train()`` or a save of
        this algorithm; raises ``AlgorithmBusyError`` at once if one is (no waiting).

        ``reentrant``: also runs inside this thread's own ``train()`` (a save from a callback).
        """
        me = threading.get_ident()
        if reentrant and self._busy_thread == me:
            yield
            return
        if not self._busy_lock.acquire(blocking=False):
            where = "this thread" if self._busy_thread == me else "another thread"
            raise AlgorithmBusyError(
                f"{what} while {where} runs this {type(self).__name__}'s {self._busy_with}: one "
                "at a time. Call train() and save_to_path() from one thread (saving from a "
                "callback such as on_train_result works), or build one algorithm per thread"
            )
        self._busy_thread, self._busy_with = me, what
        try:
            yield
        finally:
            self._busy_thread, self._busy_with = None, ""
            self._busy_lock.release()

    def train(self) -> dict[str, Any]:
        """Runs one training iteration and returns RLlib's nested result dict.

        Raises ``AlgorithmStoppedError`` after ``stop()``, and ``AlgorithmBusyError`` while
        another thread runs this algorithm's ``train()`` or a save.
        """
        with self._exclusive("train()"):
            return self._train_iteration()

    def _train_iteration(self) -> dict[str, Any]:
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
            out = self._training_step()
        except BaseException as e:
            if parallel is not None:
                step_done.set()
                parallel.wait()  # no evaluation outlives a failed iteration; its error first
            distributed.raise_if_peer_failed(e)  # across processes: a collective's lost peer
            raise
        step_done.set()
        evaluation = parallel.result() if parallel is not None else None
        self._runners_recreated()
        self._replay_episodes(out)
        self.iteration += 1
        sampled = int(out["num_env_steps_sampled"])
        trained = int(out["num_env_steps_trained"])
        self.num_env_steps_sampled_lifetime += sampled
        self.num_env_steps_trained_lifetime += trained
        ep_returns, ep_lens = out["episode_returns"], out["episode_lens"]
        self.episodes.add(ep_returns, ep_lens)
        non_finite_total = count_non_finite(self._checkpoint_state(False))
        non_finite = non_finite_total - self._non_finite_seen
        self._non_finite_seen = non_finite_total
        # A trial of a population: the population's step, shared by its trials, ran before.
        elapsed = time.perf_counter() - start + float(out.get("shared_s", 0.0))
        self.time_total_s += elapsed
        env_runners = {
            **self.episodes.summary(),
            **out.get("runner_metrics", {}),
            "num_episodes": len(ep_returns),
            "num_episodes_lifetime": self.episodes.num_episodes_lifetime,
            "num_env_steps_sampled": sampled,
            "num_env_steps_sampled_lifetime": self.num_env_steps_sampled_lifetime,
            "num_env_steps_sampled_per_second": sampled / elapsed if elapsed > 0 else float("nan"),
        }
        merge_into(env_runners, self._env_runner_metrics.reduce(), "env_runners/")
        by_policy = out["learner_metrics"]
        if not all(isinstance(v, dict) for v in by_policy.values()):
            by_policy = {DEFAULT_POLICY: by_policy}
        result = {
            "env_runners": env_runners,
            "learners": {
                **{
                    pid: {k: float(v) for k, v in metrics.items()}
                    for pid, metrics in by_policy.items()
                },
                "__all_modules__": {
                    "num_non_finite_updates": non_finite,
                    "num_non_finite_updates_lifetime": non_finite_total,
                    "num_non_finite_weights_loaded": self._non_finite_weights_loaded,
                    "num_env_steps_trained": trained,
                    "num_env_steps_trained_lifetime": self.num_env_steps_trained_lifetime,
                    "num_env_steps_trained_per_second": trained / elapsed
                    if elapsed > 0
                    else float("nan"),
                },
            },
            "timers": {"training_iteration": elapsed, **out.get("timers", {})},
            "fault_tolerance": self._fault_tolerance_metrics(),
            "num_env_steps_sampled_lifetime": self.num_env_steps_sampled_lifetime,
            "num_env_steps_trained_lifetime": self.num_env_steps_trained_lifetime,
            "num_env_steps_sampled_per_second": env_runners["num_env_steps_sampled_per_second"],
            "training_iteration": self.iteration,
            "time_this_iter_s": elapsed,
            "time_total_s": self.time_total_s,
            "timestamp": int(time.time()),
            "done": False,
        }
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
        return _checked_structure(self.observation_space, obs, batched, "observation")

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
        self._action_key, sub = jax.random.split(self._action_key)
        inputs, action = infer(params, jax.tree.map(jnp.asarray, obs), sub)
        return np.asarray(inputs), self.parts.to_env_action_host(jax.tree.map(np.asarray, action))

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
            # Where each inference leaf lives in the state: the same array object.
            paths = {
                id(leaf): jax.tree_util.keystr(path)
                for path, leaf in jax.tree_util.tree_leaves_with_path(self.state)
            }
            new: dict[str, Any] = {}
            pairs = zip(
                jax.tree_util.tree_leaves_with_path(current), jax.tree.leaves(given), strict=True
            )
            for (where, leaf), value in pairs:
                if id(leaf) in paths:
                    array = jnp.asarray(value, leaf.dtype)
                    new[paths[id(leaf)]] = jax.device_put(array, getattr(leaf, "sharding", None))
                elif not np.array_equal(np.asarray(value), np.asarray(leaf)):
                    # Computed when acting (DQN's epsilon, TD3's warm-up flag), not stored.
                    raise ValueError(
                        f"set_weights: {pid!r}{jax.tree_util.keystr(where)} is computed from "
                        f"{type(self).__name__}'s training state (now {np.asarray(leaf)}), "
                        "not a weight; pass get_weights()'s value"
                    )
            self.state = _replace_leaves(self.state, new)
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

    def _evaluation_spec(self) -> EnvSpec | None:
        """The env evaluation runs on: the training env, or ``evaluation_config``'s."""
        overrides = self.config.evaluation_config or {}
        if self.env_spec is None or not ("env" in overrides or "env_config" in overrides):
            return self.env_spec
        spec = resolve_env(
            overrides.get("env", self.config.env),
            overrides.get("env_config", self.config.env_config),
        )
        spaces = env_spaces(spec)
        if spaces != (self.observation_space, self.action_space):
            raise ConfigError(
                f"evaluation_config's env {spec.name!r} has spaces {spaces}; the policy was "
                f"trained on {(self.observation_space, self.action_space)}"
            )
        return spec

    def _evaluation_params(self) -> Any:
        """A copy of the weights evaluation acts with (so that training may go on)."""
        if self.parts.greedy_slots is not None:
            params = self.parts.acting_params(self.state)
        else:
            params = self.parts.inference_params(self.state, None)
        return jax.tree.map(jnp.copy, params)

    def _run_evaluation(
        self,
        video_dir: Path | None = None,
        params: Any = None,
        trained: threading.Event | None = None,
    ) -> dict[str, Any]:
        """One evaluation (no callbacks): with the current weights, or ``params``; ``trained``:
        set when the training step it runs beside has ended (``evaluation_duration="auto"``)."""
        cfg = self.config
        overrides = cfg.evaluation_config or {}
        explore = bool(overrides.get("explore", False))
        spec = self._evaluation_spec()
        auto = cfg.evaluation_duration == "auto"
        duration = None if auto else int(cfg.evaluation_duration)
        by_episodes = cfg.evaluation_duration_unit == "episodes"
        per_runner = overrides.get("num_envs_per_env_runner", cfg.num_envs_per_env_runner)
        num_envs = cfg.evaluation_num_envs
        if duration is not None and not by_episodes:
            # All env copies step together: as many as divide the steps asked for, so that the
            # evaluation takes exactly that many (10 steps on 8 copies: 5 copies, 2 steps each).
            num_envs = max(d for d in range(1, min(num_envs, duration) + 1) if duration % d == 0)
        self._num_evaluations += 1
        seed = derive_seed(self.seed, 7919 * self._num_evaluations)  # new episodes each time
        agents = self.possible_agents
        actions = self._evaluation_actions(explore, params)
        if cfg.custom_evaluation_function is not None and video_dir is None:
            return self._custom_evaluation(actions, per_runner, seed, spec)
        if video_dir is not None and self.parts.recurrent_inference is not None:
            raise ValueError("videos of a recurrent policy (use_lstm) are not recorded yet")
        if video_dir is not None:
            assert spec is not None
            wanted = num_envs if duration is None else duration
            return record_episodes(
                rendering_env(spec),
                actions,
                video_dir,
                seed,
                num_episodes=wanted if by_episodes or duration is None else None,
                min_steps=None if by_episodes or duration is None else duration,
            )
        # "auto": while the iteration trains (a parallel evaluation), else one episode per copy.
        return evaluate_policy(
            self._evaluation_env(num_envs, seed, spec),
            actions,
            num_envs if auto and trained is None else duration,
            by_episodes or (auto and trained is None),
            policy_ids=self._policy_ids() if agents is not None else None,
            agent_ids=agents,
            until=trained.is_set if trained is not None else None,
            timeout_s=cfg.evaluation_sample_timeout_s,
            window=overrides.get("metrics_num_episodes_for_smoothing"),
        )

    def _custom_evaluation(
        self, actions: Callable[[Any], Any], per_runner: int, seed: int, spec: EnvSpec | None
    ) -> dict[str, Any]:
        """``custom_evaluation_function(self, eval_env_runner_group)``, on
        ``evaluation_num_env_runners`` (at least one) evaluation runners of
        ``num_envs_per_env_runner`` env copies each, closed afterwards."""
        if self.possible_agents is not None or spec is None:
            raise ConfigError("custom_evaluation_function evaluates single-agent runs only")
        n = max(1, self.config.evaluation_num_env_runners)
        runners = []
        spaces = (self.observation_space, self.action_space)
        overrides = self.config.evaluation_config or {}
        config = self.config.copy()  # each runner's own, with evaluation_config's env applied
        config.env = overrides.get("env", config.env)
        config.env_config = dict(overrides.get("env_config", config.env_config))
        try:
            for i in range(n):

                def build(env_spec: EnvSpec, i: int = i) -> Any:
                    return make_host_env(
                        env_spec, per_runner, "SYNC", derive_seed(seed, i), None, i + 1, n
                    )

                runners.append(
                    EvaluationEnvRunner(i + 1, build(spec), actions, config.copy(), build, spaces)
                )
            fn = self.config.custom_evaluation_function
            out = fn(self, EvaluationEnvRunnerGroup(runners))
        finally:
            for runner in runners:
                runner.close()
        env_steps = None
        if isinstance(out, tuple) and len(out) == 3:
            out, env_steps, _agent_steps = out
        if not isinstance(out, dict):
            raise TypeError(
                f"custom_evaluation_function returned {type(out).__name__}; return (metrics dict, "
                "env_steps, agent_steps) or a metrics dict"
            )
        metrics = dict(out)
        if env_steps is not None:
            metrics.setdefault("num_env_steps_sampled", int(env_steps))
        # What the function logged under "evaluation" (RLlib's example aggregates its runners'
        # metrics there) is part of this evaluation's result, not of the next result's top.
        logged = self.metrics.pop_reduced("evaluation")
        result = {"env_runners": metrics}
        for section, values in logged.items():
            if isinstance(values, dict) and isinstance(result.get(section), dict):
                result[section] = {**values, **result[section]}
            else:
                result.setdefault(section, values)
        return result

    def _evaluation_env(
        self, num_envs: int, seed: int, spec: EnvSpec | None = None
    ) -> EvaluationEnv:
        """``num_envs`` copies of the env ``spec`` (default: the training env) for
        evaluation (a multi-agent run builds its own)."""
        spec = spec or self.env_spec
        assert spec is not None  # a single-agent run resolved its env
        return SingleAgentEpisodes(make_host_env(spec, num_envs, "SYNC", seed, None), num_envs)

    def _evaluation_actions(
        self, explore: bool = False, params: Any = None
    ) -> Callable[[Any], np.ndarray]:
        """Observations -> the policy's env actions (greedy, or sampled with ``explore``), for
        evaluation; with ``params`` (a snapshot) instead of the current weights."""
        greedy_slots = self.parts.greedy_slots
        if self.parts.recurrent_inference is not None:
            return RecurrentActor(self, explore, params)
        if greedy_slots is None:
            return lambda obs: self._forward(jax.tree.map(np.asarray, obs), explore, params=params)[
                1
            ]
        greedy = self._greedy_slots_jit
        if greedy is None:
            # Typed as the function it wraps: mypy 1.14 joins a jitted one and it to object.
            jitted: Callable[[Params, Any], jax.Array] = jax.jit(greedy_slots)
            greedy = self._greedy_slots_jit = jitted
        if params is None:
            params = self.parts.acting_params(self.state)
        to_env = self.parts.to_env_action_host
        return lambda obs: to_env(np.asarray(greedy(params, obs)))

    # ------------------------------------------------------------------ checkpoints
    def _metadata(self) -> dict[str, Any]:
        return {
            "rljax_version": rljax.__version__,
            "algo": self.config.algo_name,
            "config_module": f"{type(self.config).__module__}:{type(self.config).__qualname__}",
            "config": self.config.to_dict(),
            "observation_space": repr(self.observation_space),
            "action_space": repr(self.action_space),
            # As data, so that a module loads for inference without building the env.
            "spaces": self._spaces_data(),
            "policy_ids": self._policy_ids(),
            "seed": self.seed,
            "counters": {
                "training_iteration": self.iteration,
                "num_env_steps_sampled_lifetime": self.num_env_steps_sampled_lifetime,
                "num_env_steps_trained_lifetime": self.num_env_steps_trained_lifetime,
                "time_total_s": self.time_total_s,
                "num_episodes_lifetime": self.episodes.num_episodes_lifetime,
                "num_evaluations": self._num_evaluations,
            },
        }

    def _spaces_data(self) -> dict[str, Any] | None:
        try:
            return {
                "observation": space_to_data(self.observation_space),
                "action": space_to_data(self.action_space),
                "possible_agents": list(self.possible_agents)
                if self.possible_agents is not None
                else None,
            }
        except TypeError:  # a space without a data form: the env is resolved when loading
            return None

    def _includes_replay_buffer(self, include_replay_buffer: bool | None) -> bool:
        if include_replay_buffer is None:
            return bool(getattr(self.config, "store_buffer_in_checkpoints", False))
        return bool(include_replay_buffer)

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
            if path is None:  # RLlib's default: a new directory of its own
                path = tempfile.mkdtemp(prefix=f"{self.config.algo_name}_checkpoint_")
            else:
                ckpt.check_save_path(path)  # a file there: refused before any work
            include = self._includes_replay_buffer(include_replay_buffer)
            runners, why = self._runner_state()
            meta = {
                **self._metadata(),
                "includes_replay_buffer": include,
                "includes_env_state": runners is not None and runners["runners"] is not None,
                "env_state_missing_because": why,
            }
            state = distributed.host_value(self._checkpoint_state(include))
            if distributed.is_writer():  # across processes, process 0 writes
                ckpt.save_checkpoint(path, meta, state, num_to_keep=num_to_keep, runners=runners)
        return str(path)

    def _runner_state(self) -> tuple[Any, str]:
        """The env runners' state (their envs' mid-episode state where it can be saved) and,
        when the envs' state is missing, why."""
        if self._stopped:
            return None, "saved after stop(), which closed the env runners"
        runners = self._runners
        if runners is None:
            return None, "EnvPool's fused rollout: EnvPool has no API to save its envs' state"
        try:
            return runners.get_state(), ""
        except EnvStateError as e:
            return runners.get_state(include_envs=False), str(e)

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
        meta, version_dir = ckpt.load_metadata(path)
        saved = checked_metadata(meta, version_dir / ckpt.META_FILE)
        if saved.algo != self.config.algo_name:
            raise CheckpointError(
                f"{str(path)!r} holds a {saved.algo} checkpoint; this is {self.config.algo_name}"
            )
        if saved.policy_ids != self._policy_ids():
            raise CheckpointError(
                f"{str(path)!r} holds policies {saved.policy_ids[:20]}; this algorithm has "
                f"{self._policy_ids()}"
            )
        live = self._checkpoint_state(saved.includes_replay_buffer)
        target = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), live)
        state = ckpt.load_state(version_dir, target)
        self._check_loaded_state(state, version_dir / ckpt.STATE_FILE)
        # Only runners that can take it read the saved runner state (EnvPool's fused path has none).
        has_runners = self._runners is not None
        runners = ckpt.load_runners(version_dir) if has_runners else None
        check_runner_state_schema(runners, version_dir / ckpt.RUNNERS_FILE)
        runners_fit, runners_checked = self._check_runner_state(
            runners, version_dir / ckpt.RUNNERS_FILE
        )
        # Nothing has changed so far; from here on the checked checkpoint is applied, the env
        # runners first: if their envs refuse the state after all, they are reset as built and
        # the learner is left as it was.
        try:
            self._restore_runner_state(runners, meta, runners_fit, runners_checked)
        except EnvStateError as e:
            raise CheckpointError(
                f"{version_dir / ckpt.RUNNERS_FILE}: the env runners could not take the saved "
                f"state ({str(e)[:300]}); their envs were reset, nothing else changed"
            ) from None
        self._restore_state(state)
        counters = saved.counters
        self.iteration = counters["training_iteration"]
        self.num_env_steps_sampled_lifetime = counters["num_env_steps_sampled_lifetime"]
        self.num_env_steps_trained_lifetime = counters["num_env_steps_trained_lifetime"]
        self.time_total_s = counters["time_total_s"]
        self.episodes.num_episodes_lifetime = counters["num_episodes_lifetime"]
        self._num_evaluations = counters["num_evaluations"]  # seeds evaluation envs
        self._non_finite_seen = count_non_finite(self._checkpoint_state(False))
        self._note_loaded_weights(state, version_dir / ckpt.STATE_FILE)
        self.callbacks("on_checkpoint_loaded", algorithm=self)

    def _note_loaded_weights(self, state: Any, path: Any) -> None:
        """Counts the NaN and infinite numbers in a loaded state's weights (its host arrays
        under a ``*params`` key): warns, naming the file, where there are any (such a policy
        acts on garbage, e.g. always action 0, and every update is skipped as non-finite), and
        each result reports the count (``learners/__all_modules__/
        num_non_finite_weights_loaded``)."""
        bad, total = ckpt.count_non_finite_weights(state)
        self._non_finite_weights_loaded = bad
        if bad:
            logger.warning(
                "%s: %s of the %s loaded weights are NaN or infinite; the policy's actions "
                "are meaningless and updates from them are skipped as non-finite",
                path,
                f"{bad:,}",
                f"{total:,}",
            )

    def _check_runner_state(self, runners: Any, path: Any) -> tuple[str, list[Any] | None]:
        """Whether the saved env runners' state fits this run's runners: ("", the checked
        arrays) if it does, else (why not, None); then the run restores the rest and starts new
        episodes. A state that is not of the form the envs save (a corrupt or crafted file)
        raises ``CheckpointError``."""
        group = self._runners
        if runners is None or group is None:
            return "no runner state to restore", None
        try:
            return "", group.check_state(runners)
        except EnvStateMalformed as e:
            raise CheckpointError(f"{path}: {str(e)[:500]}") from None
        except EnvStateError as e:
            return str(e)[:500], None

    def _restore_runner_state(
        self, runners: Any, meta: dict[str, Any], fit: str, checked: list[Any] | None
    ) -> None:
        """Puts the env runners back mid-episode, so that the run continues exactly as it would
        have; where that cannot be done, the runners go on with fresh episodes (logged)."""
        group = self._runners
        if runners is None or group is None or runners.get("runners") is None:
            why = meta.get("env_state_missing_because") or "this run's envs are EnvPool's"
            logger.info("restored run starts new episodes: %s", str(why)[:500])
        if runners is None or group is None:
            return
        if fit:
            logger.warning("restored run starts new episodes; the envs' saved state: %s", fit)
            return
        group.set_state(runners, checked)  # checked above: not again

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
        """The networks and weights of a checkpoint, for inference only: no env, runner,
        replay buffer or training program is built (``RLModule.from_checkpoint``).

        Code the checkpoint names loads only as for ``from_checkpoint``; the env and the
        mapping function are not needed when the checkpoint describes its spaces (rljax writes
        that description), so they are not loaded then. A user Flax module must be trusted
        (``module_class=``, registered, or ``allow_imports``): it is the network. The config is
        checked as ``from_checkpoint`` checks it (``_checked_load``), and the state file's tree
        against the shapes the networks would have, before anything is compiled.
        """
        loaded = _checked_load(
            cls,
            path,
            inference=True,
            allow_imports=allow_imports,
            env=env,
            module_class=module_class,
        )
        meta_file = loaded.version_dir / ckpt.META_FILE
        try:
            # The learner state's shapes, traced (jax.eval_shape): nothing compiles or runs
            # before the state file is checked against them.
            with abstract_init():
                algo = loaded.algo_class(
                    loaded.config, inference_only=True, saved_spaces=loaded.saved_spaces
                )
        except ConfigError as e:
            raise CheckpointError(f"{meta_file}: config: {e}") from None
        target = algo._inference_target(loaded.saved.includes_replay_buffer)
        shapes = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), target)
        state = ckpt.load_state(loaded.version_dir, shapes)
        algo._check_loaded_state(state, loaded.version_dir / ckpt.STATE_FILE)
        algo._restore_state(state)
        algo._note_loaded_weights(state, loaded.version_dir / ckpt.STATE_FILE)
        algo.iteration = loaded.saved.counters["training_iteration"]
        return algo

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
        loaded = _checked_load(
            cls,
            path,
            inference=False,
            allow_imports=allow_imports,
            env=env,
            policy_mapping_fn=policy_mapping_fn,
            module_class=module_class,
            callbacks=callbacks,
        )
        try:
            algo = loaded.config.build_algo()
        except ConfigError as e:
            raise CheckpointError(f"{loaded.version_dir / ckpt.META_FILE}: config: {e}") from None
        try:
            algo.restore_from_path(loaded.version_dir)
        except BaseException:
            algo.stop()
            raise
        return algo

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
        from rljax.agents import trainer_path

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


@dataclasses.dataclass(frozen=True)
class _LoadedCheckpoint:
    """A checkpoint's checked metadata and config, ready to build (``_checked_load``)."""

    config: AlgorithmConfig
    saved: SavedMetadata
    version_dir: Path
    saved_spaces: dict[str, Any] | None
    algo_class: type[Algorithm]


_MAX_AGENTS = 10_000


def _saved_spaces(meta: dict[str, Any], meta_file: Path) -> dict[str, Any] | None:
    """The spaces and agents a checkpoint describes (bounded: ``space_from_data``), or None
    when it describes none."""
    spaces = meta.get("spaces")
    if spaces is None:
        return None
    where = f"{meta_file}: spaces"
    if not isinstance(spaces, dict):
        raise CheckpointError(f"{where}: expected an object; got a {type(spaces).__name__}")
    agents = spaces.get("possible_agents")
    if agents is not None and not (
        isinstance(agents, list)
        and 0 < len(agents) <= _MAX_AGENTS
        and all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in agents)
        and len(set(agents)) == len(agents)
    ):
        raise CheckpointError(
            f"{where}: possible_agents must be null or a list of at most {_MAX_AGENTS:,} "
            "distinct agent ids (strings or ints)"
        )
    return {
        "spaces": (
            space_from_data(spaces.get("observation"), f"{where}.observation"),
            space_from_data(spaces.get("action"), f"{where}.action"),
        ),
        "possible_agents": agents,
    }


def _check_policy_mapping(config: AlgorithmConfig, agents: list[Any], meta_file: Path) -> None:
    """Each agent's policy under the config's mapping function, before anything is built: a
    policy id that is not one of the config's is a ``CheckpointError`` listing both. A mapping
    function that needs an episode to decide (it raises on ``episode=None``) is left to the
    env runners, which check each agent as it appears."""
    from rljax.env.multi_agent_vector import mapping_caller

    if config.policy_mapping_fn is None or config.policies is None:
        return
    fn = mapping_caller(config.policy_mapping_fn)
    mapped = {}
    for agent in agents:
        try:
            mapped[agent] = fn(agent, None, worker_index=0)
        except Exception:
            return
    policies = list(config.policies)
    unknown = {a: p for a, p in mapped.items() if not isinstance(p, str) or p not in policies}
    if unknown:
        returned = sorted({repr(p)[:60] for p in mapped.values()})
        raise CheckpointError(
            f"{meta_file}: the policy mapping function maps the agents {agents[:20]} to "
            f"{', '.join(returned[:20])}, but the checkpoint's policies are {policies[:20]} "
            f"(agent {next(iter(unknown))!r} gets {next(iter(unknown.values()))!r}); pass the "
            "run's own policy_mapping_fn"
        )


def _checked_load(
    cls: type[Algorithm],
    path: str | os.PathLike,
    *,
    inference: bool,
    allow_imports: Iterable[str] | None,
    env: Any = None,
    policy_mapping_fn: Any = None,
    module_class: Any = None,
    callbacks: Any = None,
) -> _LoadedCheckpoint:
    """The one check of a checkpoint before anything of it is built, for every loader
    (``Algorithm.from_checkpoint``, ``RLModule.from_checkpoint``, ``rljax export``): the
    metadata's fields, the described spaces (bounded), the config from its data (code only
    by the caller's opt-in), every setting validated, the policies against the mapping
    function. The memory estimate follows in ``Algorithm.__init__``, for every build.

    ``inference``: for a policy loaded for inference, where callbacks are left out and, when
    the checkpoint describes its spaces, the env and the mapping function too (never built:
    the settings are validated without the env).
    """
    LoadPolicy.make(allow_imports)  # a bad prefix is the caller's error: ConfigError, first
    meta, version_dir = ckpt.load_metadata(path)
    meta_file = version_dir / ckpt.META_FILE
    saved = checked_metadata(meta, meta_file)
    config_cls = algorithm_registry.config_class(saved.algo)
    if cls is not Algorithm and getattr(cls, "config_class", None) not in (None, config_cls):
        raise CheckpointError(
            f"{str(path)!r} holds a {saved.algo} checkpoint; {cls.__name__} cannot load it "
            "(Algorithm.from_checkpoint loads any)"
        )
    spaces = _saved_spaces(meta, meta_file)
    data = dict(saved.config)
    without_env = inference and spaces is not None and env is None
    if inference:
        data = {
            k: v
            for k, v in data.items()
            if not (k == "callbacks_class" or k.startswith("callbacks_on_"))
        }
    if without_env:
        # Code that only builds envs or maps agents is not needed, so it is not loaded.
        if isinstance(data.get("env"), dict):
            data["env"] = None
        if data.get("policy_mapping_fn") is not None:
            data["policy_mapping_fn"] = None
    try:
        if inference:
            config = config_cls.from_dict(
                data, allow_imports=allow_imports, env=env, module_class=module_class
            )
        else:
            config = config_cls.from_dict(
                data,
                allow_imports=allow_imports,
                env=env,
                policy_mapping_fn=policy_mapping_fn,
                module_class=module_class,
                callbacks=callbacks,
            )
        _in_saved_policy_order(config, saved, meta_file)
        distributed.launch_settings_cleared(config)  # the loading launch's processes decide
        if without_env:
            config.validate_without_env()
        else:
            config.validate()
    except ConfigError as e:
        raise CheckpointError(f"{meta_file}: config: {e}") from None
    agents = spaces["possible_agents"] if spaces is not None else None
    if agents:
        _check_policy_mapping(config, agents, meta_file)
    algo_class = config.algo_class
    if config.is_multi_agent and algo_class is not None:
        algo_class = algo_class.multi_agent_class()
    if algo_class is None:
        raise CheckpointError(
            f"{meta_file}: config: {saved.algo} does not train multi-agent envs "
            "(.multi_agent(...) configs are PPO's), but the config names policies"
        )
    return _LoadedCheckpoint(
        config, saved, version_dir, spaces if without_env else None, algo_class
    )


def _in_saved_policy_order(config: AlgorithmConfig, saved: Any, meta_file: Any) -> None:
    """Puts a loaded multi-agent config's policies in the order the run had: the state
    stacks policies in that order, and the metadata's JSON sorts the config's keys."""
    policies = config.policies
    if policies is None:
        return
    if set(policies) != set(saved.policy_ids):
        raise CheckpointError(
            f"{meta_file}: the config's policies {sorted(policies)[:20]} are not the "
            f"checkpoint's {saved.policy_ids[:20]}"
        )
    config.policies = {pid: policies[pid] for pid in saved.policy_ids}


class _Background:
    """A call in a thread of its own; ``result()`` waits for it and returns (or raises) what
    it did."""

    def __init__(self, fn: Callable[..., Any], *args: Any):
        self._out: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            self._out = fn(*args)
        except BaseException as e:  # raised in the caller's thread by result()
            self._error = e

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._out


_COUNTERS = (
    "training_iteration",
    "num_env_steps_sampled_lifetime",
    "num_env_steps_trained_lifetime",
    "num_episodes_lifetime",
    "num_evaluations",
)
_MAX_COUNTER = 2**62


@dataclasses.dataclass(frozen=True)
class SavedMetadata:
    """A checkpoint's metadata, every field checked (``checked_metadata``)."""

    algo: str
    config: dict[str, Any]
    policy_ids: list[str]
    counters: dict[str, Any]
    includes_replay_buffer: bool


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def checked_metadata(meta: dict[str, Any], path: Any) -> SavedMetadata:
    """Checks every field of a checkpoint's metadata; raises ``CheckpointError`` naming the
    file, the field and what was expected. Nothing of the file is trusted before this."""

    def bad(field: str, expected: str, value: Any) -> CheckpointError:
        got = type(value).__name__ if not _is_int(value) else f"{value}"
        return CheckpointError(f"{path}: field {field!r}: expected {expected}; got {got[:40]}")

    algo = meta.get("algo")
    names = algorithm_registry.algorithm_names()
    if algo not in names:
        shown = repr(algo[:40]) if isinstance(algo, str) else type(algo).__name__
        raise CheckpointError(f"{path}: field 'algo' is {shown}; expected one of {names}")
    config = meta.get("config")
    if not isinstance(config, dict):
        raise bad("config", "a JSON object of settings", config)
    policy_ids = meta.get("policy_ids", [DEFAULT_POLICY])
    if (
        not isinstance(policy_ids, list)
        or not policy_ids
        or len(policy_ids) > 10_000
        or not all(isinstance(p, str) and 0 < len(p) <= 200 for p in policy_ids)
    ):
        raise bad("policy_ids", "a non-empty list of policy id strings", policy_ids)
    raw = meta.get("counters", {})
    if not isinstance(raw, dict):
        raise bad("counters", "a JSON object of counters", raw)
    counters: dict[str, Any] = {}
    for name in _COUNTERS:
        value = raw.get(name, 0)
        if not _is_int(value) or not 0 <= value <= _MAX_COUNTER:
            raise bad(f"counters.{name}", "an int in [0, 2**62]", value)
        counters[name] = value
    t = raw.get("time_total_s", 0.0)
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not (math.isfinite(t) and t >= 0):
        raise bad("counters.time_total_s", "a finite number >= 0", t)
    counters["time_total_s"] = float(t)
    include = meta.get("includes_replay_buffer", False)
    if not isinstance(include, bool):
        raise bad("includes_replay_buffer", "true or false", include)
    for field in ("rljax_version", "env_state_missing_because", "config_module"):
        if field in meta and not isinstance(meta[field], str):
            raise bad(field, "a string", meta[field])
    if "seed" in meta and not (_is_int(meta["seed"]) and meta["seed"] >= 0):
        raise bad("seed", "an int >= 0", meta["seed"])
    return SavedMetadata(algo, config, list(policy_ids), counters, include)


def check_runner_state_schema(runners: Any, path: Any) -> None:
    """Checks the form of a checkpoint's saved env-runner state (``runners.json``); raises
    ``CheckpointError`` naming the file and the field. Whether it fits this run's runners is
    checked separately (a state that does not fit only means fresh episodes)."""
    if runners is None:
        return

    def bad(field: str, expected: str) -> CheckpointError:
        return CheckpointError(f"{path}: field {field!r}: expected {expected}")

    if not isinstance(runners, dict):
        raise bad("/", "a JSON object with runners, dropped and num_restarts")
    unknown = set(runners) - {"runners", "dropped", "num_restarts"}
    if unknown:
        raise bad("/", f"only runners, dropped and num_restarts (found {sorted(unknown)[:5]})")
    dropped = runners.get("dropped", {})
    if not isinstance(dropped, dict) or not all(
        k.isdigit() and len(k) < 7 and isinstance(v, str) for k, v in dropped.items()
    ):
        raise bad("dropped", "an object runner index -> reason string")
    restarts = runners.get("num_restarts", 0)
    if not _is_int(restarts) or not 0 <= restarts <= _MAX_COUNTER:
        raise bad("num_restarts", "an int in [0, 2**62]")
    states = runners.get("runners")
    if states is None:
        return
    if not isinstance(states, list) or len(states) > 100_000:
        raise bad("runners", "null or a list of runner states")
    for i, state in enumerate(states):
        if state is None:
            continue
        if not isinstance(state, dict) or set(state) != {"env", "arrays", "num_sub_env_restarts"}:
            raise bad(f"runners[{i}]", "null or an object with env, arrays, num_sub_env_restarts")
        if not isinstance(state["arrays"], list) or not all(
            isinstance(a, dict) and "__ndarray__" in a for a in state["arrays"]
        ):
            raise bad(f"runners[{i}].arrays", "a list of saved arrays")
        n = state["num_sub_env_restarts"]
        if not _is_int(n) or not 0 <= n <= _MAX_COUNTER:
            raise bad(f"runners[{i}].num_sub_env_restarts", "an int in [0, 2**62]")


class RecurrentActor:
    """A recurrent policy acting in evaluation envs: one state per sub-env, reset where an
    episode starts (the row after an episode end, as the runners' act step does). Called with
    each whole ``StepResult`` (``takes_result``)."""

    takes_result = True

    def __init__(self, algo: Algorithm, explore: bool, params: Any = None):
        assert algo.parts.recurrent_inference is not None
        self._algo = algo
        self._spec = recurrent_spec(algo.parts.act)
        self._infer = algo._recurrent_infer_fn(explore)
        self._params = (
            params if params is not None else algo.parts.inference_params(algo.state, None)
        )
        self._state: dict[str, Any] = {}

    def __call__(self, result: Any) -> np.ndarray:
        spec = self._spec
        assert spec is not None
        ids = np.asarray(result.env_id)
        n = int(ids.max()) + 1
        if not self._state or len(self._state["valid"]) < n:
            self._state = {
                "memory": spec.initial_state(n),
                "action": spec.action_zeros(n),
                "valid": np.zeros(n, bool),
            }
        st = self._state
        first = jnp.asarray(~st["valid"][ids])
        rin = recurrent_input(
            spec,
            jax.tree.map(jnp.asarray, result.obs),
            jax.tree.map(lambda m: m[ids], st["memory"]),
            first,
            st["action"][ids],
            jnp.asarray(result.reward, jnp.float32),
        )
        algo = self._algo
        algo._action_key, key = jax.random.split(algo._action_key)
        _, action, state_out = self._infer(self._params, rin, key)
        st["memory"] = jax.tree.map(lambda m, o: m.at[ids].set(o), st["memory"], state_out)
        st["action"] = st["action"].at[ids].set(action)
        st["valid"][ids] = ~(np.asarray(result.terminated) | np.asarray(result.truncated))
        return algo.parts.to_env_action_host(jax.tree.map(np.asarray, action))


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


def check_weights_fit(policy_id: str, given: Any, current: Any) -> None:
    """``set_weights``' check: ``given`` has ``current``'s structure and shapes; the
    ``ValueError`` names both."""
    expected, shapes = jax.tree.map(np.shape, current), jax.tree.map(np.shape, given)
    structures = jax.tree.structure(shapes), jax.tree.structure(expected)
    # jaxlib ships no stub for its pytree module, so mypy cannot see that PyTreeDefs compare.
    if structures[0] != structures[1] or shapes != expected:  # type: ignore[operator]
        raise ValueError(
            f"set_weights: the parameters given for {policy_id!r} have shapes {shapes}; this "
            f"policy has {expected}"
        )


def _replace_leaves(tree: Any, new: dict[str, Any]) -> Any:
    """``tree`` with the leaves at the key paths of ``new`` (``jax.tree_util.keystr``) replaced."""
    return jax.tree_util.tree_map_with_path(
        lambda path, x: new.get(jax.tree_util.keystr(path), x), tree
    )


def rllib_module_path(path: str | os.PathLike) -> tuple[str | os.PathLike, str | None]:
    """RLlib's module path inside a checkpoint, ``<checkpoint>/learner_group/learner/rl_module``
    with an optional ``/<policy_id>``, as ``(<checkpoint>, policy_id or None)``; any other path
    as ``(path, None)``. The part after ``rl_module`` must be one policy id: ``..``, ``.`` or
    further parts are a ``CheckpointError`` (RLlib's directories do not exist here, so a path
    is never resolved through them)."""
    if not isinstance(path, (str, os.PathLike)):
        return path, None
    parts = Path(os.fspath(path)).parts
    n = len(RL_MODULE_PATH)
    for i in range(len(parts) - n, -1, -1):
        if parts[i : i + n] != RL_MODULE_PATH:
            continue
        tail = parts[i + n :]
        if len(tail) > 1 or (tail and tail[0] in (".", "..")):
            raise CheckpointError(
                f"{str(path)[:300]!r}: after {'/'.join(RL_MODULE_PATH)} RLlib's module path "
                f"takes one policy id (<checkpoint>/{'/'.join(RL_MODULE_PATH)}/<policy_id>); "
                f"got {'/'.join(tail)[:200]!r}"
            )
        root = Path(*parts[:i]) if i else Path(".")
        return root, tail[0] if tail else None
    return path, None


class RLModule(ForwardModuleBase):
    """Jitted inference of a policy: an algorithm's current one (``algo.get_module()``), or a
    checkpoint's (``RLModule.from_checkpoint(path)``).

    As RLlib's ``RLModule``: ``forward_inference({"obs": batch})`` returns a dict with
    ``action_dist_inputs`` (and, here, the greedy ``actions``); ``forward_exploration`` samples.
    """

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike,
        *,
        policy_id: str | None = None,
        allow_imports: Iterable[str] | None = None,
        env: Any = None,
        module_class: Any = None,
    ) -> RLModule:
        """A checkpoint's policy ``policy_id`` (its networks and weights), for inference.

        Builds no env, runner, learner program or replay buffer: the checkpoint describes the
        spaces. RLlib's module path inside a checkpoint
        (``<checkpoint>/learner_group/learner/rl_module/<policy_id>``) is accepted too and
        names the policy. Code the checkpoint names loads only as ``Algorithm.from_checkpoint``
        allows (a user Flax module must be trusted: ``module_class=``, registered, or
        ``allow_imports``).
        """
        path, named = rllib_module_path(path)
        if named is not None and policy_id is not None and named != policy_id:
            raise CheckpointError(
                f"{str(path)!r}: the path names policy {named!r} and policy_id={policy_id!r}; "
                "give one"
            )
        policy_id = policy_id if policy_id is not None else named
        algo = Algorithm._for_inference(
            path, allow_imports=allow_imports, env=env, module_class=module_class
        )
        if policy_id is None and algo._policy_ids() == [DEFAULT_POLICY]:
            policy_id = None
        if policy_id is not None and policy_id not in algo._policy_ids():
            raise CheckpointError(
                f"{str(path)!r} has no policy {policy_id[:200]!r}; its policies are "
                f"{algo._policy_ids()[:20]}"
            )
        return algo.get_module(policy_id)

    def __init__(self, algo: Algorithm | None = None, policy_id: str | None = None, **kwargs: Any):
        """An algorithm's policy (``algo``, ``policy_id``), or, built by RLlib's keywords
        (``observation_space``, ``action_space``, ``model_config``), a module of a user's own:
        a subclass that overrides ``_forward`` (or ``_forward_inference`` /
        ``_forward_exploration``) acts without learning (see ``ForwardModuleBase``)."""
        # A user module has no algorithm (``self._algo is None`` guards every use).
        self._algo = cast(Algorithm, algo)
        self._policy_id = policy_id
        if algo is None:
            super().__init__(**kwargs)

    @property
    def params(self) -> Any:
        return self._algo.parts.inference_params(self._algo.state, self._policy_id)

    def _obs(self, batch: Any) -> np.ndarray:
        obs = batch["obs"] if isinstance(batch, dict) and "obs" in batch else batch
        return self._algo._check_obs(obs, batched=True)

    def forward_inference(self, batch: Any) -> dict[str, Any]:
        """Greedy pass over ``{"obs": [B, *obs_shape]}`` (or the array itself).

        A recurrent policy (``use_lstm``) also takes ``"state_in"`` (the last call's
        ``"state_out"``; absent: the initial state, an episode's first step) and, with
        ``lstm_use_prev_action`` / ``lstm_use_prev_reward``, ``"prev_actions"`` /
        ``"prev_rewards"``; it returns ``"state_out"``.
        """
        if self._algo is None:
            return self._user_forward(batch, False)
        if self._algo.parts.recurrent_inference is not None:
            return self._recurrent(batch, False)
        inputs, actions = self._algo._forward(self._obs(batch), False, self._policy_id)
        return {"action_dist_inputs": inputs, "actions": actions}

    def forward_exploration(self, batch: Any) -> dict[str, Any]:
        """Sampling pass over ``{"obs": [B, *obs_shape]}`` (or the array itself); a recurrent
        policy's as ``forward_inference``."""
        if self._algo is None:
            return self._user_forward(batch, True)
        if self._algo.parts.recurrent_inference is not None:
            return self._recurrent(batch, True)
        inputs, actions = self._algo._forward(self._obs(batch), True, self._policy_id)
        return {"action_dist_inputs": inputs, "actions": actions}

    def _user_forward(self, batch: Any, explore: bool) -> dict[str, Any]:
        """A user module's forward pass on the host (a fresh key per call)."""
        batch = batch if isinstance(batch, dict) and "obs" in batch else {"obs": batch}
        obs = jax.tree.map(jnp.asarray, batch["obs"])
        seed = int(np.random.randint(2**31 - 1))
        out = forward_module_outputs(self, obs, jax.random.PRNGKey(seed), explore)
        return jax.tree.map(np.asarray, out)

    def get_initial_state(self) -> Any:
        """A recurrent policy's state for one row (RLlib's ``get_initial_state``)."""
        if self._algo is None:
            return {}
        spec = recurrent_spec(self._algo.parts.act)
        if spec is None:
            return {}
        return jax.tree.map(lambda x: np.asarray(x[0]), spec.initial_state(1))

    def _recurrent(self, batch: Any, explore: bool) -> dict[str, Any]:
        algo = self._algo
        spec = recurrent_spec(algo.parts.act)
        assert spec is not None and algo.parts.recurrent_inference is not None
        batch = batch if isinstance(batch, dict) and "obs" in batch else {"obs": batch}
        obs = self._obs(batch)
        n = len(jax.tree.leaves(obs)[0])
        state_in = batch.get("state_in")
        first = jnp.full((n,), state_in is None)
        memory = spec.initial_state(n) if state_in is None else jax.tree.map(jnp.asarray, state_in)
        prev_a = batch.get("prev_actions")
        prev_r = batch.get("prev_rewards")
        rin = recurrent_input(
            spec,
            jax.tree.map(jnp.asarray, obs),
            memory,
            first,
            spec.action_zeros(n) if prev_a is None else jnp.asarray(prev_a),
            jnp.zeros((n,), jnp.float32) if prev_r is None else jnp.asarray(prev_r, jnp.float32),
        )
        infer = algo._recurrent_infer_fn(explore)
        algo._action_key, key = jax.random.split(algo._action_key)
        inputs, action, state_out = infer(self.params, rin, key)
        return {
            "action_dist_inputs": np.asarray(inputs),
            "actions": algo.parts.to_env_action_host(jax.tree.map(np.asarray, action)),
            "state_out": jax.tree.map(np.asarray, state_out),
        }
