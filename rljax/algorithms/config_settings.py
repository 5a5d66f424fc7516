"""The settings every algorithm's config has, each declared once as a ``Setting``.

``CommonSettings`` holds only declarations: ``AlgorithmConfig`` (which derives from it) reads
them through ``rljax.algorithms.settings.declared_settings`` to build its setters' keys, the
checks of ``validate()``, ``to_dict`` / ``from_dict`` and its defaults, and a subclass
redeclares one to change it (``lr = AlgorithmConfig.lr.replace(default=5e-5)``).
"""

from __future__ import annotations

from typing import Any

from rljax.algorithms.config_checks import (
    MAX_EVALUATION_DURATION,
    MAX_ROLLOUT_FRAGMENT_LENGTH,
    check_env_config,
    check_evaluation_config,
    check_key_name,
    check_learner_class,
    check_learner_config_dict,
    check_model_config,
    check_overrides_per_module,
    check_policies,
    check_policies_to_train,
    check_rl_module_spec,
    check_space,
    check_vectorize_mode,
)
from rljax.algorithms.settings import Setting
from rljax.callbacks.dispatch import check_callbacks_class, check_hook_function
from rljax.connectors.env_to_module import check_env_to_module_connector
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.distributed import check_coordinator_address
from rljax.learners.update import GRAD_CLIP_BY
from rljax.offline.data import local_path
from rljax.policy.policy import PolicySpec
from rljax.runners.faults import REPEATS_OF_A_BUG
from rljax.utils import memory, xla_options
from rljax.utils.checks import Bool, Choice, Int, Number, checked_elsewhere
from rljax.utils.errors import ConfigError
from rljax.utils.seeding import MAX_SEED


def check_offline_input(name: str, value: Any) -> Any:
    """None / ``"sampler"`` (sample the env), or a path or non-empty list of paths."""
    if value is None or value == "sampler":
        return None
    paths = value if isinstance(value, list | tuple) else [value]
    if not paths:
        raise ConfigError(f"{name}=[]: name at least one Parquet file or folder, or None")
    for p in paths:
        local_path(name, p)  # a str path or local:// URI; other schemes refused
    return list(paths) if isinstance(value, list | tuple) else value


def check_offline_output(name: str, value: Any) -> Any:
    """None, or a local folder path (``local://`` URIs too)."""
    if value is None:
        return None
    local_path(name, value)
    return value


def check_compress_columns(name: str, value: Any) -> Any:
    """None or a list of column names (strings)."""
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(c, str) for c in value):
        raise ConfigError(f"{name}={value!r}: expected a list of column names (str) or None")
    return list(value)


def check_clip_rewards(name: str, value: Any) -> bool | float | None:
    """``clip_rewards``: None, a bool, or a positive finite number."""
    if value is None or isinstance(value, bool):
        return value
    checked = Number(0, low_open=True)(name, value)
    assert isinstance(checked, int | float)  # no literals, not optional
    return float(checked)


class CommonSettings:
    """The declarations of the settings every ``AlgorithmConfig`` has, by setter (section)."""

    # ------------------------------------------------------------------ environment
    env = Setting[Any](
        None,
        checked_elsewhere,  # resolve_env() in validate() names what is wrong
        "An EnvPool task id, a gymnasium id, a name registered with rljax.register_env, an "
        "env class or a creator env_config -> env.",
        section="environment",
    )
    env_config = Setting[dict[str, Any]](
        {},
        check_env_config,
        "Keyword arguments of the env (its EnvContext); None: none.",
        section="environment",
        checked_on_set=True,
    )
    observation_space = Setting[Any](
        None,
        check_space,
        "The (one agent's) observation space when no env is given: BC, MARWIL, CQL and IQL "
        "learn from offline data with these spaces alone (evaluate() needs an env). With an "
        "env it must be the env's. None: the env's.",
        section="environment",
        checked_on_set=True,
    )
    action_space = Setting[Any](
        None,
        check_space,
        "The (one agent's) action space when no env is given (see observation_space). None: "
        "the env's.",
        section="environment",
        checked_on_set=True,
    )
    clip_actions = Setting(
        True,
        Bool(),
        "Clip continuous actions to the action space's bounds before the env steps.",
        section="environment",
    )
    clip_rewards = Setting[Any](
        None,
        check_clip_rewards,
        "RLlib's reward clipping for training: True clips each reward to its sign, a number c to "
        "[-c, c]; None or False leaves rewards as they are (EnvPool's Atari tasks clip to the "
        "sign already: env_config reward_clip). Episode returns in results stay unclipped.",
        section="environment",
    )
    action_mask_key = Setting(
        "action_mask",
        check_key_name,
        "The key of a Dict observation that holds the valid actions (1 valid, 0 not): the "
        "default networks mask the actions of a Dict observation of this key and "
        "'observations' (RLlib's convention).",
        section="environment",
        checked_on_set=True,
    )
    # ------------------------------------------------------------------ env_runners
    num_env_runners = Setting(
        0,
        Int(0, memory.MAX_ENV_RUNNERS),
        "0 samples in the driver (fused with the update for EnvPool envs); n > 0 runs n "
        "runner threads, each with its own vector env (at most 1024).",
        section="env_runners",
    )
    num_envs_per_env_runner = Setting(1, Int(1), "Sub-envs per runner.", section="env_runners")
    explore = Setting(
        True,
        Bool(),
        "Training samples from the policy (True, the only choice here); evaluation acts "
        "greedily unless evaluation_config sets explore=True.",
        section="env_runners",
    )
    gym_env_vectorize_mode = Setting(
        "SYNC",
        check_vectorize_mode,
        '"SYNC" or "ASYNC" (or gymnasium.VectorizeMode).',
        section="env_runners",
        checked_on_set=True,
    )
    rollout_fragment_length = Setting[int | str](
        "auto",
        Int(1, MAX_ROLLOUT_FRAGMENT_LENGTH, literals=("auto",)),
        'Env steps per sub-env per iteration (at most 1,000,000), or "auto" (from the batch); '
        "RLlib's PPO samples rounds of it until it has the train batch, rljax one round "
        "(a warning says so).",
        section="env_runners",
    )
    num_gpus_per_env_runner = Setting[float](
        0, Number(0), "> 0 puts runner inference on a GPU.", section="env_runners"
    )
    num_cpus_per_env_runner = Setting[float](
        1,
        Number(0),
        "Accepted for compatibility; threads share the host's cores.",
        section="env_runners",
    )
    async_batch_size = Setting[int | None](
        None,
        Int(1, optional=True),
        "ASYNC mode: how many ready sub-envs form a batch. EnvPool defaults to half of "
        "num_envs_per_env_runner; for gymnasium envs, setting it switches from AsyncVectorEnv "
        "(lock-step) to first-ready batches.",
        section="env_runners",
    )
    sample_async = Setting(
        False,
        Bool(),
        "With runner threads, let them sample the next fragment while the learner updates "
        "(samples at most one policy version old; the lag is reported). False: every update "
        "uses samples of the current policy.",
        section="env_runners",
    )
    sample_timeout_s = Setting[float | None](
        60.0,  # RLlib's default
        Number(0, low_open=True, optional=True),
        "A runner that delivers no fragment within this many seconds counts as hung: it is "
        "replaced (restart_failed_env_runners) or the run stops with EnvRunnerError. Default "
        "60, as RLlib; None waits for ever. A runner that fails is handled at once either way.",
        section="env_runners",
    )
    env_to_module_connector = Setting[Any](
        None,
        check_env_to_module_connector,
        "Observation connectors between the env and the module (rljax.connectors.env_to_module, "
        "e.g. MeanStdFilter): RLlib's function (env, spaces, device) -> connector or list of "
        "connectors, a connector, a list of them or their config dicts; None: none. PPO, "
        "IMPALA and APPO (single-agent) take them.",
        section="env_runners",
    )
    batch_mode = Setting(
        "truncate_episodes",
        Choice(("truncate_episodes", "complete_episodes")),
        "'truncate_episodes': batches of fixed-length fragments, episodes cut at "
        "rollout_fragment_length and bootstrapped. 'complete_episodes' (single-agent PPO on one "
        "learner): a batch is every episode finished, whole, once they hold train_batch_size "
        "env steps or more; episodes go on across fragments, so the runners sample on runner "
        "threads (rljax.execution.complete_episodes).",
        section="env_runners",
    )
    # ------------------------------------------------------------------ learners
    num_learners = Setting(
        0,
        Int(0),
        "Devices the update runs on, data-parallel (0: one learner on the default device); "
        "across processes (num_processes), of every process, an equal number each.",
        section="learners",
    )
    num_gpus_per_learner = Setting[float](
        0,
        Number(0),
        "> 0 puts the learners on GPUs (a fraction lets several learners share one); asking "
        "for GPUs JAX does not see fails at once.",
        section="learners",
    )
    num_cpus_per_learner = Setting[float | str](
        1,
        Number(0, literals=("auto",)),
        'Accepted for compatibility (a number or "auto").',
        section="learners",
    )
    num_processes = Setting[int | None](
        None,
        Int(1, optional=True),
        "JAX processes the learners span (jax.distributed; rljax.distributed): each samples its "
        "share of the envs and the learner mesh covers every process's devices. None: JAX's "
        "own detection (JAX_NUM_PROCESSES, SLURM, Open MPI), else one process.",
        section="learners",
    )
    process_id = Setting[int | None](
        None,
        Int(0, optional=True),
        "This process's index among num_processes; None: from JAX_PROCESS_ID or the cluster.",
        section="learners",
    )
    coordinator_address = Setting[str | None](
        None,
        check_coordinator_address,
        "'host:port' of process 0's coordinator; None: JAX_COORDINATOR_ADDRESS or the cluster's.",
        section="learners",
    )
    process_timeout_s = Setting[float](
        60.0,
        Number(1),
        "Seconds a multi-process run waits for a process to join or answer (heartbeats) "
        "before it ends with an error instead of hanging.",
        section="learners",
    )
    same_actions_as_one_process = Setting(
        False,
        Bool(),
        "Across processes: sample each process's actions exactly as one process would the same "
        "sub-envs' (acting costs num_processes times more); for checking a run against one "
        "process.",
        section="learners",
    )
    # ------------------------------------------------------------------ training
    lr = Setting(1e-3, Number(0), "Adam's learning rate (0, as RLlib allows: no change).")
    gamma = Setting(0.99, Number(0, 1), "The discount factor.")
    train_batch_size_per_learner = Setting(
        4000, Int(1), "Env steps (rows) of each learner's train batch."
    )
    train_batch_size = Setting[int | None](
        None,
        Int(1, optional=True),
        "RLlib's total train batch; when set, build_algo() divides it across the learners into "
        "train_batch_size_per_learner.",
    )
    grad_clip = Setting[float | None](
        None,
        Number(0, low_open=True, optional=True),
        "Clip the gradients to this (a global norm, a norm per array or a value: "
        "grad_clip_by); None: no clipping.",
    )
    grad_clip_by = Setting(
        "global_norm",
        Choice(GRAD_CLIP_BY),
        'What grad_clip bounds: "global_norm" (all gradients scaled together), "norm" (each '
        'parameter array\'s norm on its own) or "value" (each element to [-grad_clip, '
        "grad_clip]), as RLlib's.",
    )
    learner_class = Setting[Any](
        None,
        check_learner_class,
        "A subclass of rljax's JAX PPOLearner (rljax.algorithms.ppo.ppo_learner) whose "
        "compute_loss_for_module gives the loss of PPO's minibatch steps; None: the "
        "algorithm's own loss. Single-agent, non-recurrent PPO.",
    )
    learner_config_dict = Setting[dict[str, Any]](
        {},
        check_learner_config_dict,
        "Settings a learner class reads (config.learner_config_dict[...]): data a config file "
        "can hold.",
    )
    # ------------------------------------------------------------------ rl_module
    model_config = Setting(
        DefaultModelConfig(),
        check_model_config,
        "The default networks' settings: a dict of RLlib model keys or a DefaultModelConfig.",
        section="rl_module",
        checked_on_set=True,
    )
    rl_module_spec = Setting[RLModuleSpec | MultiRLModuleSpec | None](
        None,
        check_rl_module_spec,
        "A user Flax module, RLModuleSpec(module_class=..., model_config={...}); None: the "
        "default networks.",
        section="rl_module",
    )
    # ------------------------------------------------------------------ evaluation
    evaluation_interval = Setting[int | None](
        None,
        Int(1, optional=True),
        "Evaluate every this many iterations; None: never.",
        section="evaluation",
    )
    evaluation_duration = Setting[int | str](
        10,
        Int(1, MAX_EVALUATION_DURATION, literals=("auto",)),
        "How long one evaluation runs, in evaluation_duration_unit (at most 1,000,000 env "
        'steps, or 10,000 episodes); a step count is met exactly. "auto" (with '
        "evaluation_parallel_to_training): as long as the iteration trains, at least "
        "evaluation_auto_duration_min_env_steps_per_sample steps and one episode.",
        section="evaluation",
    )
    evaluation_duration_unit = Setting(
        "episodes",
        Choice(("episodes", "timesteps")),
        '"episodes" or "timesteps" (env steps).',
        section="evaluation",
    )
    evaluation_config = Setting[dict[str, Any] | None](
        None,
        check_evaluation_config,
        "Settings that differ in evaluation, e.g. AlgorithmConfig.overrides(explore=True, "
        "env_config={...}); evaluation honours explore (False: the greedy policy, the "
        "default), env and env_config (same spaces as training), num_envs_per_env_runner "
        "and metrics_num_episodes_for_smoothing (the figures of an evaluation's last n "
        "episodes).",
        section="evaluation",
    )
    evaluation_num_env_runners = Setting(
        0,
        Int(0, 1024),
        "Evaluation runs in the driver, stepping its env copies as one vector env: n > 0 "
        "gives it n * num_envs_per_env_runner of them (0: min(evaluation_duration, 8)).",
        section="evaluation",
    )
    evaluation_parallel_to_training = Setting(
        False,
        Bool(),
        "Evaluate in a thread while the iteration trains, with the weights it starts from "
        "(RLlib's semantics); the result is that iteration's evaluation.",
        section="evaluation",
    )
    evaluation_auto_duration_min_env_steps_per_sample = Setting(
        100,  # RLlib's default
        Int(1, MAX_EVALUATION_DURATION),
        'evaluation_duration="auto": the env steps an evaluation takes at least, per '
        "evaluation env runner (one where there are none), however soon the iteration trains.",
        section="evaluation",
    )
    evaluation_auto_duration_max_env_steps_per_sample = Setting(
        2000,  # RLlib's default
        Int(1, MAX_EVALUATION_DURATION),
        "RLlib's bound on each sampling round of an evaluation env runner with "
        'evaluation_duration="auto": rljax evaluates in one loop that goes on while the '
        "iteration trains, as RLlib's rounds do, so it bounds nothing here.",
        section="evaluation",
    )
    evaluation_sample_timeout_s = Setting[float | None](
        120.0,  # RLlib's default
        Number(0, low_open=True, optional=True),
        "An evaluation still running after this many seconds stops there (a warning says so) "
        "and reports the episodes that finished; None: no limit.",
        section="evaluation",
    )
    custom_evaluation_function = Setting[Any](
        None,
        check_hook_function,
        "A function (algorithm, eval_env_runner_group) -> (metrics, env_steps, agent_steps) "
        "(RLlib's new-stack form; a metrics dict alone is taken too) that runs each evaluation "
        "instead; its metrics are reported under evaluation/env_runners.",
        section="evaluation",
    )
    offline_evaluation_interval = Setting[int | None](
        None,
        Int(0, optional=True),
        "BC and MARWIL: every this many iterations, the training loss of the current weights "
        "on batches of the offline data (RLlib's offline_evaluation_type='eval_loss'), "
        "reported under evaluation/offline_eval_runners; None or 0: never.",
        section="evaluation",
    )
    offline_evaluation_type = Setting(
        "eval_loss",
        Choice(("eval_loss",)),
        '"eval_loss": the loss on the offline data (RLlib\'s importance-sampling estimates '
        '"is" and "pdis" are not built).',
        section="evaluation",
    )
    offline_eval_batch_size_per_runner = Setting(
        256,
        Int(1, 10_000_000),
        "Rows of the offline data in each batch an offline evaluation computes the loss on.",
        section="evaluation",
    )
    dataset_num_iters_per_eval_runner = Setting(
        1,
        Int(1, 100_000),
        "Batches one offline evaluation computes the loss on (the last one's is reported, as "
        "RLlib's runner logs it).",
        section="evaluation",
        keyword="dataset_num_iters_per_offline_eval_runner",
    )
    # ------------------------------------------------------------------ debugging
    seed = Setting[int | None](
        None,
        Int(0, MAX_SEED, optional=True),
        "None (a random one) or an int in [0, 2**31 - 1]; the seeds of runners, restarted "
        "runners, evaluations and env copies derive from it and wrap inside the same range.",
        section="debugging",
    )
    log_level = Setting(
        "WARN",
        Choice(("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL")),
        'Accepted for compatibility ("DEBUG", "INFO", "WARN", "WARNING", "ERROR" or '
        '"CRITICAL"); rljax logs through the "rljax" logger.',
        section="debugging",
    )
    xla_cpu_options = Setting[str | dict[str, Any] | None](
        "auto",
        xla_options.check_setting,
        'The XLA compiler options of rljax\'s jitted programs on the CPU backend: "auto" '
        "(options chosen by the size of the networks: rljax.utils.xla_options), None (XLA's "
        "defaults) or a dict given to every program; flags set in XLA_FLAGS always win.",
        section="debugging",
    )
    # ------------------------------------------------------------------ reporting
    metrics_num_episodes_for_smoothing = Setting(
        100,
        Int(1),
        "The reported episode metrics are means over this many recent episodes.",
        section="reporting",
    )
    min_sample_timesteps_per_iteration = Setting(
        0,
        Int(0, 10_000_000),
        "An iteration (train()) runs training steps until it has sampled at least this many "
        "env steps (RLlib's); 0: one step. PPO, IMPALA and APPO sample whole train batches, and "
        "on the fused path run the steps as one program.",
        section="reporting",
    )
    # ------------------------------------------------------------------ fault_tolerance
    # (RLlib's defaults)
    restart_failed_env_runners = Setting(
        True,
        Bool(),
        "A runner whose env raises (without sub-env restarts) or delivers nothing within "
        "sample_timeout_s (a hung env) is replaced by a new one with fresh envs. When its env "
        "raised in step, the transitions it collected are kept (its unfinished episodes are "
        "cut there as by a time limit, and not reported) and the replacement writes the rest "
        "of the fragment; a hung runner's fragment is lost. A runner whose replacements fail 10 "
        "times in a row without delivering one env step is given up on (the env fails every "
        "time); one that delivered steps since its last restart starts that count again, so an "
        "env that fails now and then is restarted each time, but one that raises the same "
        "exception from the same place after the same number of env steps "
        f"{REPEATS_OF_A_BUG} times in a row has a bug: train() raises EnvBugError. False: the "
        "first error stops train().",
        section="fault_tolerance",
    )
    max_num_env_runner_restarts = Setting(
        1000,
        Int(0),
        "Runner replacements allowed over the run. Every replacement counts: an env that "
        "raises on 1% of its steps uses about one per 100 env steps (1000 last about 100,000 "
        "steps). For long runs of such an env raise it, or use "
        "restart_failed_sub_environments, which costs no runner restart.",
        section="fault_tolerance",
    )
    # RLlib's default is False: a sub-env that raises fails its whole runner, whose restart
    # cuts every sub-env's episode. "auto" (rljax's default) restarts the sub-env alone when it
    # raises, where that is built (gymnasium single-agent envs) and runners may restart.
    restart_failed_sub_environments = Setting[bool | str](
        "auto",
        Bool(literals=("auto",)),
        "True: a gymnasium sub-env that raises in step or reset is rebuilt and reset in place; "
        "its broken episode is dropped from the batch and the metrics, and the runner and its "
        "other sub-envs' episodes go on. False (RLlib's default): a sub-env that raises fails "
        'its runner (restart_failed_env_runners decides what follows). "auto" (the default): '
        "True for single-agent gymnasium envs while restart_failed_env_runners is on, else "
        "False (multi-agent envs: their runner is replaced whole). Either way, an env that "
        "raises the same exception from the same place after the same number of steps "
        f"{REPEATS_OF_A_BUG} times in a row, rebuilt each time, has a bug: train() raises "
        "EnvBugError with it. Hangs and dead env processes always fail the runner.",
        section="fault_tolerance",
    )
    ignore_env_runner_failures = Setting(
        False,
        Bool(),
        "A runner that failed and is not restarted (restarts off, used up, or its env failing "
        "every time) is dropped and training goes on with the others (with the transitions it "
        "collected before its env raised); its columns of each later batch are empty (masked) "
        "rows, so nothing recompiles. The run stops only when every runner has failed. False: "
        "such a failure stops train() with EnvRunnerError.",
        section="fault_tolerance",
    )
    env_runner_health_probe_timeout_s = Setting(
        30.0,
        Number(0, low_open=True),
        "Seconds a replacement runner may take to build and reset its envs (its health "
        "probe); a slower one counts as a failed restart and is abandoned, so a hanging reset "
        "cannot hang the run.",
        section="fault_tolerance",
    )
    on_non_finite_update = Setting(
        "skip",
        Choice(("skip", "raise")),
        "An update step whose gradients hold NaN or inf is always skipped inside the jitted "
        "update (parameters never become NaN) and counted in "
        'learners/__all_modules__/num_non_finite_updates. "skip" (default) trains on; "raise" '
        "stops train() with NonFiniteUpdateError after that iteration.",
        section="fault_tolerance",
    )
    # ------------------------------------------------------------------ callbacks
    callbacks_class = Setting[Any](
        None,
        check_callbacks_class,
        "An RLlibCallback subclass (rljax.callbacks.callbacks), a list of them, or None; each "
        "is built once with no arguments and its hooks run at RLlib's points of the run.",
        section="callbacks",
    )
    callbacks_on_algorithm_init = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_algorithm_init hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_algorithm_init",
    )
    callbacks_on_train_result = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_train_result hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_train_result",
    )
    callbacks_on_evaluate_start = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_evaluate_start hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_evaluate_start",
    )
    callbacks_on_evaluate_end = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_evaluate_end hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_evaluate_end",
    )
    callbacks_on_evaluate_offline_start = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_evaluate_offline_start hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_evaluate_offline_start",
    )
    callbacks_on_evaluate_offline_end = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_evaluate_offline_end hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_evaluate_offline_end",
    )
    callbacks_on_checkpoint_loaded = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_checkpoint_loaded hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_checkpoint_loaded",
    )
    callbacks_on_env_runners_recreated = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_env_runners_recreated hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_env_runners_recreated",
    )
    callbacks_on_environment_created = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_environment_created hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_environment_created",
    )
    callbacks_on_episode_created = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_episode_created hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_episode_created",
    )
    callbacks_on_episode_start = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_episode_start hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_episode_start",
    )
    callbacks_on_episode_step = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_episode_step hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_episode_step",
    )
    callbacks_on_episode_end = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_episode_end hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_episode_end",
    )
    callbacks_on_sample_end = Setting[Any](
        None,
        check_hook_function,
        "A function called as the on_sample_end hook (with its keyword arguments), or None.",
        section="callbacks",
        keyword="on_sample_end",
    )
    # ------------------------------------------------------------------ multi_agent
    policies = Setting[dict[str, PolicySpec] | None](
        None,
        check_policies,
        "Policy ids, or a dict id -> None / PolicySpec / RLlib's tuple (None, obs_space, "
        "act_space, config_dict); a spec's config overrides settings for that policy (as "
        "algorithm_config_overrides_per_module does).",
        section="multi_agent",
        checked_on_set=True,
    )
    policy_mapping_fn = Setting[Any](
        None,
        checked_elsewhere,  # validate() tries the signature it is called with
        "(agent_id, episode, **kwargs) -> policy id, called once per agent per episode (a "
        "one-argument agent_id -> policy id works too).",
        section="multi_agent",
    )
    policies_to_train = Setting[list[str] | None](
        None,
        check_policies_to_train,
        "The policies that learn (default: all); the rest stay fixed.",
        section="multi_agent",
        checked_on_set=True,
    )
    algorithm_config_overrides_per_module = Setting[dict[str, dict[str, Any]]](
        {},
        check_overrides_per_module,
        "Policy id -> settings for that policy only, e.g. {'p1': PPOConfig.overrides(lr=1e-4, "
        "model_config={'fcnet_hiddens': [32]})}.",
        section="multi_agent",
        checked_on_set=True,
    )

    # ------------------------------------------------------------------ offline_data
    input_ = Setting[Any](
        None,
        check_offline_input,
        "Offline data to learn from (BC, MARWIL, CQL): a path to a Parquet file or a folder of "
        "them (RLlib's local:///path too), or a list of such paths; rows of env steps or "
        "recorded episodes, as offline_data(output=...) and RLlib write them "
        "(rljax.offline.data). None or 'sampler': the algorithm samples its env.",
        section="offline_data",
    )
    dataset_num_iters_per_learner = Setting[int | None](
        None,
        Int(1, 1_000_000, optional=True),
        "Gradient steps on batches of the offline data per train() (BC, MARWIL, CQL); None: one "
        "pass over the data.",
        section="offline_data",
    )
    output = Setting[Any](
        None,
        check_offline_output,
        "A folder to record the sampled episodes in, as Parquet files of env steps "
        "(rljax.offline.recording): the training env runners' finished episodes and "
        "evaluate()'s. Single-agent runs with Box or Discrete spaces, without env-to-module "
        "connectors.",
        section="offline_data",
    )
    output_compress_columns = Setting[Any](
        None,
        check_compress_columns,
        "RLlib's columns to compress: accepted; every column of rljax's Parquet files is "
        "compressed (zstd).",
        section="offline_data",
    )
    output_max_rows_per_file = Setting[int | None](
        None,
        Int(1, optional=True),
        "Rows per recorded file (episodes with output_write_episodes=True, RLlib's default; "
        "env steps without); None: one file per train() or evaluate().",
        section="offline_data",
    )
    output_write_remaining_data = Setting(
        False,
        Bool(),
        "Whether stop() writes the recorded rows that did not fill a file (RLlib's default: "
        "False).",
        section="offline_data",
    )
    output_write_episodes = Setting(
        True,
        Bool(),
        "True (RLlib's default): each row of a recorded file is one episode as RLlib writes "
        "it (an 'item' column: the episode's get_state(), msgpack'd, arrays as msgpack-numpy "
        "encodes them), which RLlib reads with input_read_episodes=True; False: rows of env "
        "steps (eps_id, t, obs, actions, rewards, new_obs, terminateds, truncateds). "
        "offline_data(input_=...) reads both.",
        section="offline_data",
    )


__all__ = ["CommonSettings"]
