"""RLlib settings rljax does not have, in one table: what each one is, and what to do instead.

A setter or ``update_from_dict`` that meets one of these names says so with the advice below,
instead of guessing at an unrelated name. (Settings RLlib renamed are in
``algorithm_config.RENAMED``, which names the new one.) Settings marked ``no_effect`` are
accepted (they change nothing on one host: a one-time warning says so); the others are refused.
"""

from __future__ import annotations

import logging
from typing import Any

from rljax.connectors.learner.frame_stacking import only_frame_stacking
from rljax.utils import once
from rljax.utils.errors import ConfigError

logger = logging.getLogger("rljax")

_OLD_STACK = (
    "a setting of RLlib's old API stack, or of its actors' queues and timeouts; nothing in "
    "rljax reads it"
)

# name -> (no_effect, advice)
RLLIB_ONLY: dict[str, tuple[bool, str]] = {
    "observation_filter": (
        False,
        "RLlib's old-stack filter; use .env_runners(env_to_module_connector=lambda env, spaces, "
        "device: MeanStdFilter()) (rljax.connectors.env_to_module)",
    ),
    "normalize_actions": (
        False,
        "continuous actions are sampled unbounded and clipped to the space's bounds before "
        "the env steps (clip_actions=True, the default); remove the setting",
    ),
    "preprocessor_pref": (
        False,
        "RLlib's old-stack preprocessors; Atari frames are preprocessed by EnvPool (or "
        "rljax.env.atari), other observations go to the model as they are",
    ),
    # RLlib 2.60's env_runners() keeps these old-stack settings, which its new stack ignores;
    # at RLlib's defaults (ACCEPTED_VALUES) they change nothing here either.
    "sample_collector": (
        False,
        "RLlib's old-stack sample collectors; rljax's runners write fixed-shape arrays",
    ),
    "remote_env_batch_wait_ms": (
        False,
        "RLlib's old-stack remote envs; use gym_env_vectorize_mode='ASYNC' with "
        "async_batch_size for first-ready batches",
    ),
    "enable_tf1_exec_eagerly": (True, "rljax has no TensorFlow"),
    "sampler_perf_stats_ema_coef": (True, "RLlib's old-stack sampler statistics"),
    "exploration_config": (
        False,
        "RLlib's old-stack exploration objects are gone: acting samples from the policy's "
        "distribution (RLlib's StochasticSampling) unless explore=False; use epsilon (DQN: a "
        "schedule [(timestep, value), ...]) or exploration_noise (TD3)",
    ),
    # RLlib's offline-data reading through Ray Data: rljax reads its Parquet rows itself.
    "input_read_method": (
        False,
        "rljax reads Parquet files of env steps ('read_parquet', accepted); see rljax.offline.data",
    ),
    "input_read_method_kwargs": (True, "rljax reads the files with pyarrow, not Ray Data"),
    "input_read_schema": (True, "rljax's files have one schema (rljax.offline.data)"),
    "input_read_episodes": (
        False,
        "rljax reads what each file holds: rows of env steps, or RLlib's recorded episodes "
        "(an 'item' column of msgpack'd episode states), whatever the setting",
    ),
    "input_read_sample_batches": (
        False,
        "rljax reads rows of env steps, not old-stack SampleBatches (False, accepted)",
    ),
    "input_read_batch_size": (True, "rljax reads the whole dataset into memory"),
    "input_compress_columns": (True, "Parquet's own compression is undone by pyarrow"),
    "input_filesystem": (True, "rljax reads the local filesystem (paths, local://)"),
    "input_filesystem_kwargs": (True, "rljax reads the local filesystem (paths, local://)"),
    "input_config": (True, "offline_data(input_=...) names the files"),
    "materialize_data": (True, "rljax reads the whole dataset into memory"),
    "materialize_mapped_data": (True, "rljax reads the whole dataset into memory"),
    "map_batches_kwargs": (True, "rljax has no Ray Data pipeline"),
    "iter_batches_kwargs": (True, "rljax has no Ray Data pipeline"),
    "shuffle_buffer_size": (True, "batches are drawn at random from the whole dataset"),
    "prelearner_class": (False, "rljax's learners read the rows directly; remove the setting"),
    "prelearner_buffer_class": (True, "rljax has no pre-learner"),
    "prelearner_buffer_kwargs": (True, "rljax has no pre-learner"),
    "prelearner_module_synch_period": (True, "rljax has no pre-learner"),
    "ignore_final_observation": (True, "rljax's rows keep each step's new_obs"),
    "actions_in_input_normalized": (
        False,
        "rljax learns the actions as the files hold them; RLlib 2.60's new stack reads the "
        "setting nowhere either (only its old-stack JSON reader did)",
    ),
    "postprocess_inputs": (True, "MARWIL computes its value targets from the rows itself"),
    "output_config": (True, "rljax writes Parquet files (rljax.offline.data)"),
    "output_max_file_size": (True, "files are cut by output_max_rows_per_file"),
    "output_write_method": (
        False,
        "rljax writes Parquet files ('write_parquet', accepted)",
    ),
    "output_write_method_kwargs": (True, "rljax writes with pyarrow, not Ray Data"),
    "output_filesystem": (True, "rljax writes the local filesystem (paths, local://)"),
    "output_filesystem_kwargs": (True, "rljax writes the local filesystem (paths, local://)"),
    "offline_sampling": (True, "rljax's learners draw batches from the dataset in memory"),
    "env_task_fn": (
        False,
        "change the task between iterations with algo.env_runner_group.foreach_env_runner("
        "lambda r: r.foreach_env(lambda env: env.set_task(...)))",
    ),
    "remote_worker_envs": (
        False,
        "use gym_env_vectorize_mode='ASYNC' (a process per sub-env) instead",
    ),
    # RLlib's offline evaluation runs on Ray actors; rljax computes the loss in the learner.
    "num_offline_eval_runners": (
        True,
        "offline evaluation computes the loss in the learner's process, on its device",
    ),
    "num_cpus_per_offline_eval_runner": (True, "offline evaluation runs in the learner's process"),
    "num_gpus_per_offline_eval_runner": (
        False,
        "offline evaluation runs on the learner's device; 0 is accepted",
    ),
    "custom_resources_per_offline_eval_runner": (True, "rljax has no Ray resources here"),
    "offline_evaluation_timeout_s": (True, "the loss is one jitted call, in the learner"),
    "offline_evaluation_parallel_to_training": (
        False,
        "offline evaluation runs after the iteration's update (False, accepted)",
    ),
    "offline_evaluation_duration": (
        True,
        "dataset_num_iters_per_offline_eval_runner says how long",
    ),
    "max_requests_in_flight_per_offline_eval_runner": (True, "there are no offline eval actors"),
    "broadcast_offline_eval_runner_states": (True, "there are no offline eval actors"),
    "validate_offline_eval_runners_after_construction": (True, "there are no offline eval actors"),
    "restart_failed_offline_eval_runners": (True, "there are no offline eval actors"),
    "ignore_offline_eval_runner_failures": (True, "there are no offline eval actors"),
    "max_num_offline_eval_runner_restarts": (True, "there are no offline eval actors"),
    "offline_eval_runner_health_probe_timeout_s": (True, "there are no offline eval actors"),
    "offline_eval_runner_restore_timeout_s": (True, "there are no offline eval actors"),
    "offline_eval_rl_module_inference_only": (
        True,
        "the loss uses the learner's own weights (the whole module)",
    ),
    "offline_eval_runner_class": (
        False,
        "RLlib's PyTorch OfflineEvaluationRunner classes do not run here; the loss is the "
        "algorithm's training loss (offline_evaluation_type='eval_loss')",
    ),
    "offline_loss_for_module_fn": (
        False,
        "a PyTorch loss does not run here; the offline evaluation loss is the algorithm's "
        "training loss",
    ),
    "min_time_s_per_iteration": (
        True,
        "an iteration is sized in env steps here (min_sample_timesteps_per_iteration), not in "
        "seconds; set that for longer iterations",
    ),
    "evaluation_force_reset_envs_before_iteration": (
        True,
        "every evaluation starts on new env copies and new episodes",
    ),
    "create_env_on_local_worker": (
        True,
        "with num_env_runners=0 the driver samples from its own envs; with runners it keeps none",
    ),
    "num_consecutive_env_runner_failures_tolerance": (
        True,
        "a failed runner is replaced within the training step that saw it fail, so no step "
        "goes without samples; a runner replaced 10 times in a row without delivering an env "
        "step is given up on, max_num_env_runner_restarts bounds the replacements over the "
        "run, and ignore_env_runner_failures decides whether training goes on without it",
    ),
    "delay_between_env_runner_restarts_s": (
        True,
        "a failed runner is replaced at once (env_runner_health_probe_timeout_s bounds its start)",
    ),
    "env_runner_restore_timeout_s": (
        True,
        "a replacement runner's start is bounded by env_runner_health_probe_timeout_s",
    ),
    "num_cpus_for_main_process": (True, "runner threads and the learner share the host's cores"),
    "num_cpus_per_learner": (True, "the learner's update is one jitted program"),
    "compress_observations": (True, "observations stay on the host or device uncompressed"),
    "enable_connectors": (True, "rljax has only RLlib's new API stack"),
    "enable_rl_module_and_learner": (True, "rljax has only RLlib's new API stack"),
    "enable_env_runner_and_connector_v2": (True, "rljax has only RLlib's new API stack"),
    "validate_env_runners_after_construction": (True, "runners are checked when they are built"),
    "add_default_connectors_to_learner_pipeline": (
        True,
        "rljax's learner pipeline (GAE, value bootstrapping, frame stacking) is built into each "
        "algorithm's jitted update and cannot be left out: drop the setting",
    ),
    "custom_resources_per_learner": (True, "learners are devices of this process, not Ray actors"),
    "max_requests_in_flight_per_learner": (
        True,
        "the learner is a program (or a thread) of this process; nothing queues requests to it",
    ),
    "local_gpu_idx": (
        True,
        "the local learner takes the first GPU JAX sees; choose another with "
        "CUDA_VISIBLE_DEVICES before the process starts",
    ),
    "learner_connector": (
        False,
        "rljax's learner connectors are built into each algorithm's jitted update (GAE, "
        "value bootstrapping, frame stacking); a ConnectorV2 piece of Python cannot run there: "
        "drop learner_connector",
    ),
    "num_aggregator_actors_per_learner": (
        True,
        "the learner's batches are put together inside its jitted update, with no aggregator "
        "actors",
    ),
    "max_requests_in_flight_per_aggregator_actor": (
        True,
        "the learner's batches are put together inside its jitted update, with no aggregator "
        "actors",
    ),
    "_torch_lr_scheduler_classes": (
        False,
        "PyTorch's learning-rate schedulers cannot drive rljax's optax optimizers; give the "
        "schedule as lr=[[timestep, value], ...] (piecewise linear, RLlib's format)",
    ),
    "_validate_config": (True, "rljax always validates the config when it builds"),
    "_use_msgpack_checkpoints": (True, "rljax's checkpoints never hold pickles"),
    "_disable_preprocessor_api": (True, "rljax has only RLlib's new API stack"),
    "_disable_action_flattening": (True, "rljax has only RLlib's new API stack"),
    "_disable_initialize_loss_from_dummy_batch": (True, "rljax has only RLlib's new API stack"),
    "_tf_policy_handles_more_than_one_loss": (True, "rljax has only RLlib's new API stack"),
    "_torch_grad_scaler_class": (
        False,
        "PyTorch's gradient scalers cannot drive rljax's optax optimizers; rljax computes in "
        "float32 and needs none",
    ),
    "episodes_to_numpy": (
        True,
        "rljax's runners hand the learner arrays already: there are no episode objects to convert",
    ),
    "_separate_vf_optimizer": (
        False,
        "RLlib's old API stack's IMPALA/APPO option; rljax has one optimizer for both "
        "networks here (PPO's learner classes give the value network a rate of its own)",
    ),
    "_lr_vf": (
        True,
        "RLlib's old API stack's IMPALA/APPO option, read only with _separate_vf_optimizer=True "
        "(which rljax refuses): one optimizer trains both networks here",
    ),
    "_evaluation_parallel_to_training_wo_thread": (
        True,
        "a parallel evaluation runs in a thread of the driver; its results are the same",
    ),
    # The rest of RLlib 2.60's setter keywords. Settings nothing in rljax reads are accepted
    # (a warning says so); the others are refused where the value asks for something rljax
    # does not do (ACCEPTED_VALUES: the values that do not).
    **{
        name: (True, _OLD_STACK)
        for name in (
            "keep_per_episode_custom_metrics",
            "metrics_episode_collection_timeout_s",
            "policy_map_capacity",
            "policy_states_are_swappable",
            "ope_split_batch_by_episode",
            "learner_queue_timeout",
            "timeout_s_sampler_manager",
            "timeout_s_aggregator_manager",
            "adam_epsilon",
            "hiddens",
            "_deterministic_loss",
            "_use_beta_distribution",
            "simple_queue_size",
        )
    },
    **{
        name: (
            True,
            "RLlib's old API stack reads it; its new stack, and rljax, build both networks from "
            ".rl_module(model_config=...)",
        )
        for name in ("q_model_config", "policy_model_config")
    },
    "optimization_config": (
        True,
        "RLlib's old API stack reads it; its new stack, and rljax, take actor_lr, critic_lr "
        "and alpha_lr",
    ),
    # Replay and learner-side buffering of RLlib's old IMPALA and APPO: accepted at their
    # defaults (RLlib's new stack refuses most other values too).
    **{
        name: (False, "no batches are replayed here (IMPALA, APPO); 0 is accepted")
        for name in ("replay_proportion", "replay_buffer_num_slots")
    },
    "minibatch_buffer_size": (
        False,
        "IMPALA's and APPO's learner passes over a batch with num_epochs and minibatch_size "
        "here; 1 is accepted",
    ),
    "num_multi_gpu_tower_stacks": (
        False,
        "the learner's batch is sharded over its devices inside one program; 1 is accepted",
    ),
    "vf_share_layers": (
        True,
        "RLlib 2.60's .training() ignores it too; share or separate the value network with "
        ".rl_module(model_config={'vf_share_layers': ...})",
    ),
    "fake_sampler": (False, "RLlib's old-stack test sampler; rljax samples the env"),
    **{
        name: (
            False,
            "RLlib's debugging switch that runs env runners without learners; every rljax "
            "iteration samples and updates",
        )
        for name in ("_env_runners_only", "_skip_learners")
    },
    "log_sys_usage": (True, "rljax's results carry no system-usage figures (RLlib's perf/)"),
    "log_gradients": (
        True,
        "rljax's learner results carry the gradients' global norm where the algorithm has one "
        "(gradients_default_optimizer_global_norm), whatever this says",
    ),
    "custom_stats_cls_lookup": (
        False,
        "rljax's MetricsLogger reduces with its own statistics (reduce='mean', 'sum', 'min', "
        "'max', window, ema_coeff); Stats classes of RLlib's do not plug in",
    ),
    "min_train_timesteps_per_iteration": (
        True,
        "an iteration trains at least one batch, sized by min_sample_timesteps_per_iteration "
        "(algorithms that sample) or dataset_num_iters_per_learner (offline ones); set those",
    ),
    "add_default_connectors_to_env_to_module_pipeline": (
        False,
        "rljax's env-to-module steps (batching, recurrent states, agent-to-module mapping) are "
        "built into the jitted act step and cannot be left out: drop the setting",
    ),
    "add_default_connectors_to_module_to_env_pipeline": (
        False,
        "rljax's module-to-env steps (sampling, clipping, un-batching) are built into the "
        "jitted act step and cannot be left out: drop the setting",
    ),
    "module_to_env_connector": (
        False,
        "actions are sampled and clipped inside the jitted act step (clip_actions); a "
        "ConnectorV2 piece of Python cannot run there: drop module_to_env_connector",
    ),
    "env_runner_cls": (
        False,
        "rljax's env runners (threads stepping EnvPool, gymnasium vector envs or JAX envs) are "
        "built in; register custom envs with register_env and put custom acting in an RLModule",
    ),
    "episode_lookback_horizon": (
        False,
        "rljax's env-to-module connectors keep the history they need (stacked frames, the "
        "recurrent state) in the runner's state; 1 is accepted",
    ),
    "broadcast_env_runner_states": (
        False,
        "runner threads share the connectors' state (a MeanStdFilter's statistics come from "
        "the learner's batches), so every runner always has it",
    ),
    "merge_env_runner_states": (
        False,
        "the connectors' statistics come from the training batches; an evaluation acts on a "
        "frozen copy (RLlib's 'training_only', accepted)",
    ),
    "use_worker_filter_stats": (
        False,
        "the filter's statistics come from every runner's training rows; True is accepted",
    ),
    "update_worker_filter_stats": (
        False,
        "runner threads share the filter's statistics (an evaluation acts on a frozen copy); "
        "True is accepted",
    ),
    **{
        name: (True, "runner threads read the weights and connector states in this process")
        for name in ("use_env_runner_state_server", "env_runner_state_server_max_concurrency")
    },
    "max_requests_in_flight_per_env_runner": (
        True,
        "runners are threads of this process; nothing queues requests to them",
    ),
    "custom_resources_per_env_runner": (True, "runners are threads of this process"),
    "create_local_env_runner": (
        True,
        "with num_env_runners=0 the driver samples; beside runner threads its local runner "
        "has no envs either way",
    ),
    "render_env": (
        False,
        "record an evaluation instead: algo.evaluate(record_video='videos/') writes an MP4 per "
        "episode (single-agent runs)",
    ),
    "disable_env_checking": (
        True,
        "rljax runs no env checker that resets and steps the env before training",
    ),
    "is_atari": (
        True,
        "Atari envs are told by their id (EnvPool's or ale-py's) and preprocessed by EnvPool "
        "or rljax.env.atari",
    ),
    **{
        name: (
            True,
            "an evaluation is never skipped here: its env copies are built for each evaluation",
        )
        for name in (
            "evaluation_error_after_n_consecutive_skips",
            "evaluation_unhealthy_workers_timeout_s",
        )
    },
    "off_policy_estimation_methods": (
        False,
        "RLlib's old-stack off-policy estimators; offline evaluation here is the training "
        "loss on the evaluation data (offline_evaluation_type='eval_loss')",
    ),
    "observation_fn": (
        False,
        "RLlib's old-stack observation functions; put what the agents see in the env's "
        "observations, or add it with an env-to-module connector",
    ),
    "offline_data_class": (
        False,
        "rljax reads Parquet rows of env steps itself (rljax.offline.data); an OfflineData "
        "class of Ray Data does not run here",
    ),
    "prelearner_use_recorded_module_states": (
        False,
        "rljax's offline learners do not read recorded module states",
    ),
    "on_offline_eval_runners_recreated": (
        True,
        "rljax's offline evaluation runs in the learner, with no runners to recreate: the "
        "callback is never called",
    ),
    "_fake_gpus": (
        False,
        "simulate devices on the CPU with XLA_FLAGS=--xla_force_host_platform_device_count=N "
        "(set before JAX starts) and .learners(num_learners=N)",
    ),
    "placement_strategy": (
        False,
        "a trial's bundles go to Ray as one placement group packed on a node ('PACK', accepted)",
    ),
    "custom_resources_for_main_process": (True, "rljax asks Ray for no custom resources"),
    "before_learn_on_batch": (
        False,
        "RLlib's old-stack hook; change a batch in a learner class (.training(learner_class="
        "...)) or act on results in a callback",
    ),
    "burnin_len": (
        False,
        "recurrent offline learning (a burn-in over stored sequences) is not built here; 0 is "
        "accepted",
    ),
    "burn_in_len": (
        False,
        "R2D2's burn-in: recurrent DQN (sequences from replay) is not built here",
    ),
    "categorical_distribution_temperature": (
        False,
        "DQN acts epsilon-greedily in training and greedily in evaluation here; 1.0 is accepted",
    ),
    # RLlib 2.60's new stack refuses these (but None) when it validates.
    "lr_schedule": (
        False,
        "give the schedule as the setting itself: lr=[[timestep, value], ...], as RLlib's new "
        "stack asks",
    ),
    "entropy_coeff_schedule": (
        False,
        "give the schedule as the setting itself: entropy_coeff=[[timestep, value], ...], as "
        "RLlib's new stack asks",
    ),
    "use_gae": (
        False,
        "APPO's advantages are V-trace's here, as on RLlib's new stack; True is accepted",
    ),
}

# Settings whose value decides: these values change nothing here (a warning), others are
# refused with the table's advice.
ACCEPTED_VALUES: dict[str, tuple[Any, ...]] = {
    "enable_connectors": (True,),
    "enable_rl_module_and_learner": (True,),
    "enable_env_runner_and_connector_v2": (True,),
    "learner_connector": (None,),
    "add_default_connectors_to_learner_pipeline": (True,),
    "local_gpu_idx": (0,),
    "_torch_lr_scheduler_classes": (None,),
    "_torch_grad_scaler_class": (None,),
    "_separate_vf_optimizer": (False,),
    "sample_collector": (None,),
    "remote_worker_envs": (False,),
    "remote_env_batch_wait_ms": (0,),
    "preprocessor_pref": ("deepmind", None),
    "exploration_config": (None, {}, {"type": "StochasticSampling"}),
    "input_read_method": ("read_parquet",),
    "input_read_episodes": (False, True),
    "input_read_sample_batches": (False,),
    "actions_in_input_normalized": (False, True),
    "num_gpus_per_offline_eval_runner": (0,),
    "offline_evaluation_parallel_to_training": (False,),
    "offline_eval_runner_class": (None,),
    "offline_loss_for_module_fn": (None,),
    "output_write_method": ("write_parquet",),
    "fake_sampler": (False,),
    "_env_runners_only": (False,),
    "_skip_learners": (False,),
    "custom_stats_cls_lookup": (None, {}),
    "replay_proportion": (0, 0.0),
    "replay_buffer_num_slots": (0,),
    "minibatch_buffer_size": (1,),
    "num_multi_gpu_tower_stacks": (1,),
    "add_default_connectors_to_env_to_module_pipeline": (True,),
    "add_default_connectors_to_module_to_env_pipeline": (True,),
    "module_to_env_connector": (None,),
    "env_runner_cls": (None,),
    "episode_lookback_horizon": (1,),
    "broadcast_env_runner_states": (True,),
    "merge_env_runner_states": ("training_only",),
    "use_worker_filter_stats": (True,),
    "update_worker_filter_stats": (True,),
    "render_env": (False,),
    "off_policy_estimation_methods": (None, {}),
    "observation_fn": (None,),
    "offline_data_class": (None,),
    "prelearner_use_recorded_module_states": (False,),
    "_fake_gpus": (False,),
    "placement_strategy": ("PACK",),
    "before_learn_on_batch": (None,),
    "burn_in_len": (0,),
    "burnin_len": (0,),
    "categorical_distribution_temperature": (1.0,),
    "use_gae": (True,),
    "lr_schedule": (None,),
    "entropy_coeff_schedule": (None,),
}

# RLlib's ``.experimental()`` keywords.
EXPERIMENTAL = (
    "_validate_config",
    "_use_msgpack_checkpoints",
    "_disable_preprocessor_api",
    "_disable_action_flattening",
    "_disable_initialize_loss_from_dummy_batch",
    "_tf_policy_handles_more_than_one_loss",
    "_torch_grad_scaler_class",
    "_torch_lr_scheduler_classes",
)


def _is_builtin_runner_class(value: Any) -> bool:
    """Whether ``value`` is rljax's ``SingleAgentEnvRunner`` or ``MultiAgentEnvRunner`` (at
    RLlib's paths): naming the default runners, as RLlib's configs do. (Told by the class's
    home, not by importing it: ``rljax.algorithms.rllib_surface`` imports the config.)"""
    return (
        isinstance(value, type)
        and value.__module__ == "rljax.algorithms.rllib_surface"
        and value.__qualname__ in ("SingleAgentEnvRunner", "MultiAgentEnvRunner")
    )


def check_rllib_only(where: str, name: str, value: Any) -> bool:
    """True if ``name`` is an RLlib setting that has no effect here (warned about once);
    raises ``ConfigError`` with the table's advice for one rljax refuses (for the settings of
    ``ACCEPTED_VALUES``: a value not listed there); False for a name not in the table."""
    entry = RLLIB_ONLY.get(name)
    if entry is None:
        return False
    no_effect, advice = entry
    if name in ACCEPTED_VALUES:
        no_effect = any(value is v or value == v for v in ACCEPTED_VALUES[name])
    # RLlib's learner-side frame stacking: the runners' stacked frames are in the batch already.
    if name == "learner_connector" and value is not None and only_frame_stacking(value):
        advice = (
            "FrameStackingEnvToModule stores the stacked observations in the train batch, "
            "and the learner trains on them as they are"
        )
        no_effect = True
    if name == "env_runner_cls" and _is_builtin_runner_class(value):
        advice, no_effect = "rljax's own runners (the default) step the envs", True
    if not no_effect:
        raise ConfigError(f"{where}: {name}={value!r} is RLlib's; rljax does not take it: {advice}")
    if once.first_time("rllib_only", name):
        logger.warning("%s: %s=%r has no effect in rljax: %s", where, name, value, advice)
    return True


__all__ = ["EXPERIMENTAL", "RLLIB_ONLY", "check_rllib_only"]
