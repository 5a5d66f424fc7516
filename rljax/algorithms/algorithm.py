"""``Algorithm``: config + an algorithm's parts + the execution layer, behind RLlib's public
methods; ``train()`` returns RLlib's result dict.

The jobs behind those methods are units of their own, which this class hands what they need:
the build's pieces (``rljax.execution.build``: seed, memory check, devices, connectors,
callbacks), runner building (``rljax.runners.build``) and the algorithm's side of its runners
(``rljax.algorithms.algorithm_runners.RunnerHooks``), an iteration's bookkeeping
(``rljax.execution.iteration``) and result dict (``rljax.execution.results``), evaluation
(``rljax.execution.evaluation``, ``rljax.algorithms.algorithm_evaluation.EvaluationHooks``),
checkpoints (``rljax.execution.checkpoints``, through the state hooks ``_checkpoint_state``,
``_restore_state``, ``_check_loaded_state`` and ``_inference_target``), inference
(``rljax.core.rl_module.inference.Inference``: the jitted inference functions, actions, forward
passes), inference modules (``rljax.core.rl_module.rl_module``) and observation checks
(``rljax.core.rl_module.inputs``); the names that moved there (``RLModule``,
``checked_metadata``, ``EpisodeStats``, ``empty_outputs``, ...) are importable from here as
before.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar

import jax
import numpy as np

from rljax import distributed
from rljax.algorithms.algorithm_config import AlgorithmConfig
from rljax.algorithms.algorithm_evaluation import EvaluationHooks
from rljax.algorithms.algorithm_runners import RunnerHooks
from rljax.algorithms.algorithm_state import StateSurface
from rljax.algorithms.module_surface import ModuleSurface
from rljax.algorithms.rllib_surface import SaveResult, TrainableSurface
from rljax.callbacks.episodes import EpisodeReplay
from rljax.core import DEFAULT_POLICY_ID
from rljax.core.rl_module.inference import Inference
from rljax.core.rl_module.inference import empty_outputs as empty_outputs
from rljax.core.rl_module.inputs import _checked_leaf as _checked_leaf
from rljax.core.rl_module.inputs import _checked_structure as _checked_structure
from rljax.core.rl_module.rl_module import RecurrentActor as RecurrentActor
from rljax.core.rl_module.rl_module import RLModule, pretrained_weights
from rljax.core.rl_module.rl_module import rllib_module_path as rllib_module_path
from rljax.env.vector import EnvSpec
from rljax.execution import build, checkpoints
from rljax.execution import iteration as iteration_book
from rljax.execution.checkpoints import SavedMetadata as SavedMetadata
from rljax.execution.checkpoints import _check_policy_mapping as _check_policy_mapping
from rljax.execution.checkpoints import _checked_load as _checked_load
from rljax.execution.checkpoints import _in_saved_policy_order as _in_saved_policy_order
from rljax.execution.checkpoints import _LoadedCheckpoint as _LoadedCheckpoint
from rljax.execution.checkpoints import _saved_spaces as _saved_spaces
from rljax.execution.checkpoints import check_runner_state_schema as check_runner_state_schema
from rljax.execution.checkpoints import checked_metadata as checked_metadata
from rljax.execution.episode_stats import EpisodeStats
from rljax.execution.loop import IterationResult
from rljax.execution.parts import InferenceFn, Params, PolicyParts, State
from rljax.execution.results import module_learner_figures, result_dict
from rljax.execution.video import check_video_dir
from rljax.execution.weights import _replace_leaves as _replace_leaves
from rljax.execution.weights import check_weights_fit, with_weights
from rljax.learners.devices import data_sharding, replicated
from rljax.offline.recording import close_recorder, recorder_for
from rljax.policy.export import export_policy
from rljax.runners.build import needs_x64 as needs_x64
from rljax.utils.checks import require_bool
from rljax.utils.errors import ConfigError
from rljax.utils.exclusive import ExclusiveUse
from rljax.utils.metrics.metrics_logger import merge_into
from rljax.utils.nonfinite import count_non_finite

logger = logging.getLogger("rljax")

DEFAULT_POLICY = DEFAULT_POLICY_ID


class Algorithm(RunnerHooks, EvaluationHooks, StateSurface, TrainableSurface, ModuleSurface):
    """Config + an algorithm's parts + the execution layer, behind RLlib's public methods.

    The base class resolves the env and the devices (``rljax.execution.build``), runs the
    training loop (its bookkeeping: ``rljax.execution.iteration``) and hands the other jobs
    what they need: inference (``rljax.core.rl_module.inference``), runners and their callbacks
    (``RunnerHooks``: ``rljax.runners.build``, ``rljax.callbacks.runner_hooks``), evaluation
    (``EvaluationHooks``: ``rljax.execution.evaluation``) and checkpoints
    (``rljax.execution.checkpoints``). A subclass's ``_setup()`` builds its learner
    and sets, once, ``parts`` (its policy's pure functions:
    ``rljax.execution.parts.PolicyParts``), ``state`` (its training state) and
    ``_action_key``; it implements ``_training_step()`` and the checkpoint state hooks
    (``_checkpoint_state``, ``_restore_state``, optionally ``_check_loaded_state`` and
    ``_inference_target``: ``checkpoints.StateHooks``). Nothing else of a subclass is read here.
    """

    config_class: type[AlgorithmConfig] = AlgorithmConfig
    connectors_in_env: ClassVar[bool] = False  # True: built in _resolve_env, run on the host
    _env_state_io = property(lambda self: self._runners)  # saves and restores the envs' state
    # Set by the subclass's _setup(), once (a subclass declares its own state's type).
    parts: PolicyParts[Any]
    state: State
    _action_key: jax.Array
    # With a learner mesh: where the train state and the batch live (None on one device).
    _state_sharding: Any = None
    _batch_sharding: jax.sharding.Sharding | None = None
    # A multi-agent run's agents (evaluation reports each one's returns); None: single-agent.
    possible_agents: list[Any] | None = None
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
        _refuse_old_stack(type(self), config)
        config = config.copy()  # the algorithm's own (frozen below); the caller's stays theirs
        build.prepare_process(config, type(self))  # before any JAX call: distributed, CPU threads
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
        self.seed = distributed.common_seed(build.run_seed(config.seed))  # process 0's
        self._resolve_env()
        # Every build, a loaded policy's too: what it allocates, estimated before anything is.
        build.check_memory(
            config, self.env_spec, self.observation_space, self.action_space, inference_only
        )
        devices = build.devices(config)
        self.learner_devices, self.mesh = devices.learner_devices, devices.mesh
        self.runner_device = devices.runner_device
        distributed.check_process_settings(self)
        # Observation connectors (config.env_to_module_connector), stored back as their specs.
        spaces = (self.observation_space, self.action_space, self.runner_device)
        in_env = self.connectors_in_env  # multi-agent PPO's run in its env, on the host
        self._env_to_module = None if in_env else build.env_to_module(config, *spaces)
        self.iteration = 0
        # RLlib's private counters, which example scripts keep their own numbers in (a
        # curriculum's current task); not saved in checkpoints.
        self._counters: collections.defaultdict[str, int] = collections.defaultdict(int)
        # Per runner slot: the config a script sees as env_runner.config (RLlib's runners hold
        # copies), and the env its envs were rebuilt from by env_runner.make_env().
        self._runner_configs: dict[int, AlgorithmConfig] = {}
        self._runner_env_specs: dict[int, EnvSpec] = {}
        self.num_env_steps_sampled_lifetime = self.num_env_steps_trained_lifetime = 0
        self._module_steps_trained: dict[str, int] = {}  # per module, so far (results)
        self.time_total_s = self.time_since_restore = 0.0
        self.iterations_since_restore = 0
        self.episodes = EpisodeStats(config.metrics_num_episodes_for_smoothing)
        # The policy's jitted inference (compute_actions, modules, evaluation), once per function.
        self._inference = Inference(self)
        self._num_evaluations = 0
        self._non_finite_seen = 0
        self._non_finite_weights_loaded = 0  # NaNs and infinities the last checkpoint brought
        self._stopped = False
        # User callbacks (config.callbacks), and offline_data(output=...)'s recorder; with an
        # episode hook the sampled steps reach the host once per iteration (callbacks.episodes).
        self._recorder = recorder_for(self)
        hooks = build.callback_parts(config, population_member, self._recorder)
        self.callbacks, self.metrics = hooks.callbacks, hooks.metrics  # RLlib's algo.metrics
        self._env_runner_metrics = hooks.env_runner_metrics  # episode hooks': under env_runners
        self._record_episodes = hooks.record_episodes
        self._episode_replay: EpisodeReplay | None = None
        self._live_lock, self._live_finished = threading.Lock(), []  # live episode hooks
        self._runner_callbacks = hooks.runner_callbacks
        loaded = {} if inference_only else pretrained_weights(config)  # before compiling
        try:
            self._setup()
            config.freeze()  # as RLlib's: algo.config is read-only (a checkpoint saves it)
            self.set_weights(loaded)  # RLModuleSpec.load_state_path's, if any
            self._start_runner_callbacks(population_member)
            self.setup(config)  # RLlib's hook: on_algorithm_init, then a subclass's own parts
        except BaseException:  # Ctrl-C during a compile too: no runner thread or env outlives it
            self.stop()
            raise
        _stop_at_exit(self)

    # ------------------------------------------------------------------ subclass hooks
    def _resolve_env(self) -> None:
        """Sets ``env_spec`` and the (per-agent) observation and action spaces."""
        self.env_spec, self.observation_space, self.action_space = build.env_and_spaces(
            self.config, self._saved_spaces, self.connectors_in_env
        )

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
        self._batch_sharding = build.batch_placement(self.learner_devices[0], self.runner_device)
        return jax.device_put(state, self.learner_devices[0])

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
        iteration_book.check_running(self._stopped, type(self).__name__)
        start = time.perf_counter()
        iteration_before = self.iteration
        due = iteration_book.evaluation_due(self.config.evaluation_interval, iteration_before)
        parallel = None
        if due and self.config.evaluation_parallel_to_training:
            self.callbacks("on_evaluate_start", algorithm=self, metrics_logger=self.metrics)
            params = self._evaluation_params()
            parallel = functools.partial(self._run_evaluation, None, params)
        out, evaluation = iteration_book.step_beside_evaluation(
            (lambda: ran) if ran is not None else self._iteration_step, parallel
        )
        self._runners_recreated()
        self._replay_episodes(
            {"episode_steps": out.episode_steps, "multi_agent_episodes": out.multi_agent_episodes}
        )
        non_finite_total = out.non_finite_total
        if non_finite_total is None:  # the iteration's program did not count them
            non_finite_total = count_non_finite(self._checkpoint_state(False))
        # A trial of a population: the population's step, shared by its trials, ran before.
        elapsed = time.perf_counter() - start + float(out.shared_s)
        totals = iteration_book.count_iteration(
            self,
            out,
            elapsed,
            non_finite_total,
            self._reduce_runner_metrics(),
            self._fault_tolerance_metrics(),
        )
        result = result_dict(out, totals, self.config.to_dict())
        module_learner_figures(result["learners"], self._module_steps_trained, self.config)
        iteration_book.check_non_finite(totals, self.config.on_non_finite_update)
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
        if (offline := self._offline_evaluation(iteration_before)) is not None:
            result.setdefault("evaluation", {}).update(offline)  # RLlib merges it in
        merge_into(result, self.metrics.reduce(), "")
        self.callbacks(
            "on_train_result", algorithm=self, metrics_logger=self.metrics, result=result
        )
        return result

    # ------------------------------------------------------------------ inference
    # The jobs are ``Inference``'s (``rljax.core.rl_module.inference``); modules and evaluation
    # reach them through these methods (``rl_module.InferenceSource``).
    def _check_obs(self, obs: Any, batched: bool) -> Any:
        """Observations checked against the observation space (``Inference.check_obs``)."""
        return self._inference.check_obs(obs, batched)

    def _infer_fn(self, explore: bool, policy_id: str | None = None) -> InferenceFn:
        """The jitted ``parts.inference(policy_id, explore)`` (``Inference.infer_fn``)."""
        explore = require_bool("explore", explore)  # "no" or 1 must not pick sampling
        return self._inference.infer_fn(explore, policy_id)

    def _recurrent_infer_fn(self, explore: bool) -> Callable[..., Any]:
        """A recurrent policy's jitted ``recurrent_inference(explore)``, compiled once."""
        return self._inference.recurrent_infer_fn(explore)

    def compute_actions(
        self, obs_batch: Any, explore: bool = False, policy_id: str | None = None
    ) -> Any:
        """Actions for a batch of observations ``[B, *obs_shape]`` (or a dict id -> observation).

        An empty batch gives an empty array of the action shape and dtype (``{}`` for ``{}``).
        """
        explore = require_bool("explore", explore)
        return self._inference.compute_actions(obs_batch, explore, policy_id)

    def _forward(
        self,
        obs: np.ndarray,
        explore: bool,
        policy_id: str | None = None,
        params: Params | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One jitted pass over checked observations: (action_dist_inputs, env actions), with
        the current weights or ``params`` (a snapshot)."""
        return self._inference.forward(obs, explore, policy_id, params)

    def _next_action_key(self) -> jax.Array:
        """A new key of the inference key stream (``compute_actions``, modules, evaluation)."""
        return self._inference.next_action_key()

    def compute_single_action(
        self, observation: Any, explore: bool = False, policy_id: str | None = None
    ) -> Any:
        """The action for one observation; ``explore=False`` takes the distribution's mode."""
        explore = require_bool("explore", explore)
        return self._inference.compute_single_action(observation, explore, policy_id)

    def get_module(self, policy_id: str | None = None) -> RLModule | None:
        """The policy's module (RLlib's ``get_module``): jitted inference on this algorithm's
        current weights. As RLlib's, a multi-agent algorithm gives None for a policy id it
        does not have (no id asks for ``"default_policy"``); a single-agent one refuses any id
        but its own."""
        if self.config.is_multi_agent:
            policy_id = policy_id or DEFAULT_POLICY
            if policy_id not in self._policy_ids():
                return None
        return self._module(policy_id)

    def _module(self, policy_id: str | None = None) -> RLModule:
        """``get_module`` for a policy id that must exist (``ValueError`` naming the ids)."""
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
            params = self._module(None if pid == DEFAULT_POLICY else pid).params
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
        if weights and self._runners is not None:  # runner threads act with them next
            self._runners.publish(self._runner_params(), advance=False)

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

    # ------------------------------------------------------------------ checkpoints
    def _spaces_data(self) -> dict[str, Any] | None:
        """The spaces and agents as data in the metadata (None: resolved when loading)."""
        return checkpoints.spaces_data(
            self.observation_space, self.action_space, self.possible_agents
        )

    def _includes_replay_buffer(self, include_replay_buffer: bool | None) -> bool:
        return checkpoints.includes_replay_buffer(self.config, include_replay_buffer)

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
                iteration_book.counter_values(self),
            )
            return checkpoints.save(
                self,
                path,
                metadata,
                include_replay_buffer=self._includes_replay_buffer(include_replay_buffer),
                runners=self._env_state_io,
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

    def restore_from_path(self, path: str | os.PathLike, component: str | None = None) -> None:
        """Loads a checkpoint of the same algorithm and architecture into this algorithm.

        Everything is read and checked first (the metadata's fields, the state's tree, shapes
        and dtypes against this algorithm's, the env runners' saved state), so a checkpoint
        that does not fit raises ``CheckpointError`` and leaves this algorithm as it was.
        ``component``: one part only (RLlib's; ``rljax.algorithms.algorithm_state``).
        """
        if component is not None:
            return self._restore_component(path, component)
        restored = checkpoints.restore(
            self,
            path,
            algo_name=self.config.algo_name,
            policy_ids=self._policy_ids(),
            runners=self._env_state_io,
            agent_ids=iteration_book.agent_ids(self),
        )
        iteration_book.set_counter_values(self, restored.saved.counters)
        self.time_since_restore, self.iterations_since_restore = 0.0, 0  # Tune's restore
        self._non_finite_seen = count_non_finite(self._checkpoint_state(False))
        self._non_finite_weights_loaded = checkpoints.non_finite_weights_loaded(
            restored.state, restored.state_file
        )
        self.callbacks("on_checkpoint_loaded", algorithm=self)

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
        learner_class: Any = None,
        config: AlgorithmConfig | None = None,
    ) -> Algorithm:
        """Builds the algorithm a checkpoint was written by and restores its state.

        ``config``: build from this config instead of the checkpoint's (RLlib's
        ``from_checkpoint(path, config=...)``, which changes settings between runs: a new
        learning rate, more env runners) and restore the checkpoint's state into it; the
        networks must be the checkpoint's (``restore_from_path`` checks them).

        The run's callbacks (``config.callbacks``) are code too: pass them again
        (``callbacks=MyCallbacks``, for the callback classes) or allow their module; callbacks
        that are neither are left out, with a warning.

        A checkpoint may come from anyone: loading it never imports or calls code that it
        names. A config whose env, policy mapping function or module class is code (not an
        env id) loads only when the caller opts in: by passing the object (``env=MyEnv``,
        ``policy_mapping_fn=fn``, ``module_class=MyModule``, ``learner_class=MyLearner``), by
        registering it in this process (``rljax.register_env``, ``register_module_class``,
        ``register_policy_mapping_fn``), or by allowing its module
        (``allow_imports=["mypkg"]``). Every field is checked, and the config's memory
        estimated against the machine's, before anything is built; a checkpoint that does not
        fit raises ``CheckpointError`` naming the file and the field.
        """
        if config is not None:
            return _restored_into(cls, config, path)
        return checkpoints.from_checkpoint(
            path,
            loader=None if cls is Algorithm else cls,
            allow_imports=allow_imports,
            env=env,
            policy_mapping_fn=policy_mapping_fn,
            module_class=module_class,
            callbacks=callbacks,
            learner_class=learner_class,
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
        try:
            self._close_runners()
        finally:  # the rows recorded so far (None: building failed before the recorder)
            close_recorder(getattr(self, "_recorder", None))

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


def _refuse_old_stack(cls: type, config: Any) -> None:
    """An algorithm class given a config that asks for RLlib's old stack: its old model dict
    would be ignored here, so the class says what builds it."""
    if config.is_old_api_stack:
        raise ConfigError(
            f"{cls.__name__}(config): the config asks for RLlib's old API stack "
            "(api_stack(...=False)), which RLlib 1.x's trainer serves: build it with "
            "config.build_algo(), or turn the new stack back on with api_stack(True, True)"
        )


def _restored_into(cls: type[Any], config: Any, path: str | os.PathLike) -> Any:
    """``cls.from_checkpoint(path, config=config)``: the config's algorithm (of ``cls``) with
    the checkpoint's state restored into it."""
    algo: Any = config.build_algo()
    try:
        if not isinstance(algo, cls):
            raise ConfigError(
                f"{cls.__name__}.from_checkpoint(config=...): the config builds "
                f"{type(algo).__name__}, not {cls.__name__}"
            )
        algo.restore_from_path(path)
    except BaseException:
        algo.stop()
        raise
    return algo


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
