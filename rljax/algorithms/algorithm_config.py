"""``AlgorithmConfig``: RLlib's chained-setter config, as a thin shell with one validation pass.

Setters record values and return the config; ``validate()`` checks every value and combination
before anything is built or compiled; ``build_algo()`` validates, copies the config, and hands it
to the algorithm, which turns it into frozen hyper-parameters. Nothing reads the config inside
traced code.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import gymnasium as gym

from rljax.algorithms.old_model_dict import check_old_model_dict
from rljax.algorithms.rllib_only import check_rllib_only
from rljax.algorithms.settings import Setting, declared_settings, setter_doc
from rljax.callbacks.dispatch import check_callbacks_class, check_hook_function
from rljax.connectors.env_to_module import check_env_to_module_connector
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.distributed import check_coordinator_address
from rljax.env.spaces import space_from_data, space_to_data
from rljax.env.vector import normalize_vectorize_mode
from rljax.policy.policy import PolicySpec
from rljax.runners.faults import REPEATS_OF_A_BUG
from rljax.tune.sample import Domain, as_domain
from rljax.tune.variants import check_search_spaces, find_search_spaces, key_path
from rljax.utils import memory, safe_io, xla_options
from rljax.utils.checks import (
    Bool,
    Check,
    Choice,
    Int,
    Number,
    StrKeyDict,
    checked_elsewhere,
    describe,
    refuse,
)
from rljax.utils.errors import ConfigError, best_match, closest
from rljax.utils.references import LoadPolicy, qualified_name, resolve
from rljax.utils.seeding import MAX_SEED
from rljax.utils.torch_classes import check_not_torch

# Config files are small (the tuned examples are under 2 KB): a cap well above any real one
# that keeps PyYAML's pure-Python parse of the worst such file near a second.
MAX_CONFIG_FILE_BYTES = 64 << 10
# Upper bounds of settings that size the work of an iteration or an evaluation, so that a file
# cannot make a run effectively hang (num_epochs 10**9 is a loop of a billion updates inside one
# jitted call). Each is far above what RLlib's defaults and tuned examples set.
# Env steps per sub-env per iteration: "auto" gives 4,000 for RLlib's default PPO batch on one
# sub-env.
MAX_ROLLOUT_FRAGMENT_LENGTH = 1_000_000
# Episodes or env steps of one evaluation: the default, as RLlib's, is 10 episodes.
MAX_EVALUATION_DURATION = 1_000_000
# With evaluation_duration_unit="episodes", each episode may itself run thousands of steps.
MAX_EVALUATION_EPISODES = 10_000


logger = logging.getLogger("rljax")


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()

# Old-API-stack names that RLlib users still type, and what they are called now.
_WARNED_ONCE: set[str] = set()  # RLlib settings that have said, once, they change nothing

# RLlib's deprecated names it still accepts: the same setting, with a one-time warning.
DEPRECATED = {
    "model_config_dict": "model_config",
    "mini_batch_size_per_learner": "minibatch_size",
}

RENAMED = {
    "num_workers": "num_env_runners",
    "num_rollout_workers": "num_env_runners",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "num_sgd_iter": "num_epochs",
    "sgd_minibatch_size": "minibatch_size",
    "lambda": "lambda_",
    "learning_rate": "lr",
    "num_gpus": "num_gpus_per_learner",
    "model": "model_config",  # in .training(), RLlib's old model dict (old_model_dict.py)
    "rollouts": "env_runners",
    "buffer_size": "replay_buffer_config={'capacity': ...}",
    "learning_starts": "num_steps_sampled_before_learning_starts",
    "exploration_fraction": "epsilon (a schedule [(timestep, value), ...])",
    "exploration_final_eps": "epsilon (a schedule [(timestep, value), ...])",
    "exploration_config": "epsilon (DQN: a schedule [(timestep, value), ...]) or exploration_noise (TD3)",
    "timesteps_per_iteration": "min_sample_timesteps_per_iteration",
    "q_model_config": "model_config",
    "policy_model_config": "model_config",
    "optimization": "actor_lr, critic_lr and alpha_lr",
    "prioritized_replay": "replay_buffer_config={'type': 'PrioritizedEpisodeReplayBuffer'}",
}


def _env_config(name: str, value: Any) -> dict[str, Any]:
    # None is the setter's "no settings", as RLlib's env_config=None is.
    if value is None:
        return {}
    out = StrKeyDict()(name, value) or {}  # never None: StrKeyDict() is not optional
    # gymnasium spaces (RLlib's example envs take them: RandomEnv's action_space) are stored
    # as data, {"__gym_space__": ...}, and come back as spaces.
    for key, v in out.items():
        if isinstance(v, dict) and set(v) == {SPACE_MARK}:
            out[key] = space_from_data(v[SPACE_MARK], f"{name}[{key!r}]")
    return out


SPACE_MARK = "__gym_space__"


def _env_config_data(env_config: dict[str, Any]) -> dict[str, Any]:
    """``env_config`` for JSON: gymnasium spaces as their data."""
    return {
        k: {SPACE_MARK: space_to_data(v)} if isinstance(v, gym.Space) else v
        for k, v in env_config.items()
    }


def _model_config(name: str, value: Any) -> DefaultModelConfig:
    return DefaultModelConfig.from_any(value)  # its fields check themselves


EVALUATION_KEYS = (
    "explore",
    "env",
    "env_config",
    "num_envs_per_env_runner",
    "metrics_num_episodes_for_smoothing",
)


def _evaluation_overrides(name: str, value: Any) -> dict[str, Any] | None:
    """The settings evaluation honours, checked; others are refused, naming them."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{name}={value!r}: expected a dict of settings, e.g. "
            "AlgorithmConfig.overrides(explore=True)"
        )
    out = dict(value)
    for key in out:
        if key not in EVALUATION_KEYS:
            raise ConfigError(
                f"{name}[{key!r}]: evaluation honours {', '.join(EVALUATION_KEYS)} only (it runs "
                "in the driver with the training weights); remove the key"
            )
    if "explore" in out:
        out["explore"] = Bool()(f"{name}['explore']", out["explore"])
    if "env_config" in out:
        out["env_config"] = _env_config(f"{name}['env_config']", out["env_config"])
    if "metrics_num_episodes_for_smoothing" in out:
        key = "metrics_num_episodes_for_smoothing"
        out[key] = Int(1)(f"{name}[{key!r}]", out[key])
    if "num_envs_per_env_runner" in out:
        out["num_envs_per_env_runner"] = Int(1)(
            f"{name}['num_envs_per_env_runner']", out["num_envs_per_env_runner"]
        )
    return out


def _vectorize_mode(name: str, value: Any) -> str:
    return normalize_vectorize_mode(value)


def _rl_module_spec(name: str, value: Any) -> RLModuleSpec | MultiRLModuleSpec | None:
    if value is None:
        return None
    if isinstance(value, MultiRLModuleSpec):
        specs = value.rl_module_specs
        for pid, spec in specs.items() if isinstance(specs, dict) else [("*", specs)]:
            StrKeyDict()(f"{name}.rl_module_specs[{pid!r}].model_config", spec.model_config)
        return value
    if not isinstance(value, RLModuleSpec):
        refuse(
            name,
            value,
            "None, RLModuleSpec(module_class=..., model_config={...}) or "
            "MultiRLModuleSpec(rl_module_specs={policy_id: RLModuleSpec(...)})",
        )
    if value.is_forward_only:
        refuse(
            name,
            value,
            "a learning module: an RLModule with a forward pass only acts, so it belongs in a "
            "multi-agent config's MultiRLModuleSpec, outside policies_to_train",
        )
    StrKeyDict()(f"{name}.model_config", value.model_config)  # they become keyword arguments
    return value


def _module_spec_dict(spec: RLModuleSpec) -> dict[str, Any]:
    """An ``RLModuleSpec`` as data (its class by import path; spaces are the env's)."""
    return {
        "module_class": qualified_name(spec.module_class) if spec.module_class else None,
        "model_config": spec.model_config,
    }


def _module_spec_from_dict(name: str, value: Any, policy: LoadPolicy) -> RLModuleSpec:
    """``_module_spec_dict``'s inverse; its class loads only as ``policy`` allows."""
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a dict with module_class, model_config; got {value!r}")
    unknown = set(value) - {"module_class", "model_config"}
    if unknown:
        raise ConfigError(
            f"{name} has unknown keys {sorted(map(str, unknown))[:5]}; "
            "allowed: module_class, model_config"
        )
    mc = value.get("module_class")
    given = policy.objects.get("module_class")
    if given is not None and (name == "rl_module_spec" or qualified_name(given) == mc):
        mc = given
    elif mc is not None:
        mc = resolve("module_class", mc, policy, ConfigError)
    return RLModuleSpec(mc, value.get("model_config") or {})


def _policies(name: str, value: Any) -> dict[str, PolicySpec] | None:
    if value is None:
        return None
    allowed = "a non-empty list of policy ids or a dict policy id -> spec"
    if isinstance(value, str) or not isinstance(value, (dict, list, tuple, set)) or not value:
        refuse(name, value, allowed)
    bad = [p for p in value if not (isinstance(p, str) and p)]
    if bad:
        refuse(name, value, f"{allowed} (the id {describe(bad[0])} is not a non-empty string)")
    if isinstance(value, dict):
        return {p: PolicySpec.from_any(p, v) for p, v in value.items()}
    return {p: PolicySpec() for p in value}


def _policies_to_train(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if (
        isinstance(value, str)
        or not isinstance(value, (list, tuple, set))
        or not all(isinstance(p, str) for p in value)
    ):
        refuse(name, value, "None or a list of policy ids (strings)")
    return list(value)


def _overrides_per_module(name: str, value: Any) -> dict[str, dict[str, Any]]:
    ok = isinstance(value, dict) and all(
        isinstance(p, str) and isinstance(v, dict) and all(isinstance(k, str) for k in v)
        for p, v in value.items()
    )
    if not ok:
        refuse(
            name,
            value,
            "a dict policy id -> dict of settings (e.g. PPOConfig.overrides(lr=1e-4))",
        )
    return {p: dict(v) for p, v in value.items()}


_C = TypeVar("_C", bound="AlgorithmConfig")


class AlgorithmConfig:
    """Settings common to every algorithm; subclasses add ``training()`` keys.

    Each setting is declared once, as a ``Setting`` class attribute (name, default, check, doc,
    setter); the setters' keys, ``validate()``'s checks, ``to_dict`` / ``from_dict`` and the
    defaults of ``__init__`` are derived from the declarations (``rljax.algorithms.settings``).

    Any setter also takes a search space (``rljax.tune``) for any setting and keeps it as given:
    ``search_space()`` lists them, ``validate()`` refuses the config until each is resolved, and
    ``copy().update_from_dict(variant)`` resolves them for one trial.

    Example::

        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_envs_per_env_runner=16)
            .training(lr=3e-4, num_epochs=6)
        )
        algo = config.build_algo()
        result = algo.train()
    """

    algo_name: ClassVar[str] = "Algorithm"
    # Whether the algorithm applies env_to_module_connector's connectors (single-agent).
    takes_env_to_module_connector: ClassVar[bool] = False
    # Derived from the declarations below (and a subclass's) by _derive_tables(): every
    # setting by name, grouped by section; each setter's keys; each setting's check; the
    # settings a policy may override; the settings whose check also runs in the setters.
    SETTINGS: ClassVar[dict[str, Setting[Any]]]
    _SECTIONS: ClassVar[dict[str, tuple[str, ...]]]
    _CHECKS: ClassVar[dict[str, Check]]
    _PER_MODULE_KEYS: ClassVar[tuple[str, ...]]
    _CHECKED_ON_SET: ClassVar[tuple[str, ...]]

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
        _env_config,
        "Keyword arguments of the env (its EnvContext); None: none.",
        section="environment",
        checked_on_set=True,
    )
    clip_actions = Setting(
        True,
        Bool(),
        "Clip continuous actions to the action space's bounds before the env steps.",
        section="environment",
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
        _vectorize_mode,
        '"SYNC" or "ASYNC" (or gymnasium.VectorizeMode).',
        section="env_runners",
        checked_on_set=True,
    )
    rollout_fragment_length = Setting[int | str](
        "auto",
        Int(1, MAX_ROLLOUT_FRAGMENT_LENGTH, literals=("auto",)),
        'Env steps per sub-env per iteration (at most 1,000,000), or "auto" (from the batch).',
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
    lr = Setting(1e-3, Number(0, low_open=True), "Adam's learning rate.")
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
        "Clip the gradients to this global norm; None: no clipping.",
    )
    grad_clip_by = Setting(
        "global_norm", Choice(("global_norm",)), 'How grad_clip measures: "global_norm".'
    )
    # ------------------------------------------------------------------ rl_module
    model_config = Setting(
        DefaultModelConfig(),
        _model_config,
        "The default networks' settings: a dict of RLlib model keys or a DefaultModelConfig.",
        section="rl_module",
        checked_on_set=True,
    )
    rl_module_spec = Setting[RLModuleSpec | MultiRLModuleSpec | None](
        None,
        _rl_module_spec,
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
        "evaluation_parallel_to_training): as long as the iteration trains, and at least one "
        "episode.",
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
        _evaluation_overrides,
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
        _policies,
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
        _policies_to_train,
        "The policies that learn (default: all); the rest stay fixed.",
        section="multi_agent",
        checked_on_set=True,
    )
    algorithm_config_overrides_per_module = Setting[dict[str, dict[str, Any]]](
        {},
        _overrides_per_module,
        "Policy id -> settings for that policy only, e.g. {'p1': PPOConfig.overrides(lr=1e-4, "
        "model_config={'fcnet_hiddens': [32]})}.",
        section="multi_agent",
        checked_on_set=True,
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._derive_tables()

    @classmethod
    def _derive_tables(cls) -> None:
        """Builds the class's tables from its settings' declarations, and the ``Args`` of the
        docstrings of the setters it defines from their docs."""
        cls.SETTINGS = declared_settings(cls)
        sections: dict[str, list[str]] = {}
        for name, s in cls.SETTINGS.items():
            sections.setdefault(s.section, []).append(name)
        cls._SECTIONS = {section: tuple(keys) for section, keys in sections.items()}
        cls._CHECKS = {name: s.check for name, s in cls.SETTINGS.items()}
        cls._PER_MODULE_KEYS = tuple(n for n, s in cls.SETTINGS.items() if s.per_module)
        cls._CHECKED_ON_SET = tuple(n for n, s in cls.SETTINGS.items() if s.checked_on_set)
        for section, keys in cls._SECTIONS.items():
            setter = cls.__dict__.get(section)
            if inspect.isfunction(setter):
                summary = inspect.getdoc(setter) or f"Sets the {section} settings."
                setter.__doc__ = setter_doc(summary, [cls.SETTINGS[k] for k in keys])

    def __init__(self, algo_class: type | None = None):
        self.algo_class: Any = algo_class  # an Algorithm subclass (a later import)
        for name, setting in self.SETTINGS.items():
            setattr(self, name, setting.fresh_default())

    # ------------------------------------------------------------------ setters
    def _set(self: _C, section: str, values: dict[str, Any]) -> _C:
        values = dict(values)
        values.pop("self", None)
        extra = _deprecated_names(f".{section}()", values.pop("kwargs", {}), self._all_keys())
        for key, value in [*values.items(), *extra.items()]:  # a PyTorch class of a script
            check_not_torch(value, f".{section}({key}=...)")
        if section == "training" and "model" in extra:  # RLlib's old-stack model dict
            check_old_model_dict(".training()", extra.pop("model"))
        for key in [k for k in extra if k in values]:
            if values[key] is not UNSET:
                raise ConfigError(f".{section}() got {key!r} twice (also by its deprecated name)")
            values[key] = extra.pop(key)  # a deprecated name of this section's setting
        unknown = {
            k: v
            for k, v in extra.items()
            if not check_rllib_only(f".{section}()", k, v)  # RLlib's, with no effect here
        }
        if unknown:
            name = next(iter(unknown))
            allowed = [self.SETTINGS[k].setter_keyword for k in self._SECTIONS[section]]
            hint = _unknown_key_hint(name, allowed) or _unknown_key_hint(name, self._all_keys())
            raise ConfigError(
                f".{section}() got an unknown keyword {name!r}{hint}; valid keywords: {', '.join(allowed)}"
            )
        for key, value in values.items():
            if value is not UNSET:
                setattr(self, key, self._store(key, value))
        return self

    def _store(self, key: str, value: Any) -> Any:
        """What a setter stores for ``key``: a search space (``tune.grid_search([...])``, Tune's
        ``{"grid_search": [...]}``, ...) as given once it is checked (``validate()`` refuses a
        config that still holds one; ``search_space()`` lists them); any other value as
        ``_coerce`` makes it (over the setting's default where it replaces a search space)."""
        domain = as_domain(value)
        if domain is not None:
            check_search_spaces(domain, root=f"{type(self).__name__}.{key}")
            return domain
        if isinstance(self.__dict__.get(key), Domain):
            # A value replacing a search space (a resolved variant) starts from the default, for
            # the settings whose setters merge a dict into the current one.
            setattr(self, key, self.SETTINGS[key].fresh_default())
        return self._coerce(key, value)

    def _coerce(self, key: str, value: Any) -> Any:
        if key in self._CHECKED_ON_SET:
            return self._CHECKS[key](key, value)
        return value

    @classmethod
    def _all_keys(cls) -> list[str]:
        return list(cls.SETTINGS)

    # Each setter's keywords are exactly its section's settings, in declaration order
    # (tests/algorithms/test_settings.py checks); the Args of its docstring come from their docs.
    def environment(
        self: _C,
        env: Any = UNSET,
        *,
        env_config: dict[str, Any] | None = UNSET,
        clip_actions: bool = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the env and how actions reach it."""
        return self._set("environment", locals())

    def env_runners(
        self: _C,
        *,
        num_env_runners: int = UNSET,
        num_envs_per_env_runner: int = UNSET,
        explore: bool = UNSET,
        gym_env_vectorize_mode: Any = UNSET,
        rollout_fragment_length: int | str = UNSET,
        num_gpus_per_env_runner: float = UNSET,
        num_cpus_per_env_runner: float = UNSET,
        async_batch_size: int | None = UNSET,
        sample_async: bool = UNSET,
        sample_timeout_s: float | None = UNSET,
        env_to_module_connector: Any = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the sampling knobs."""
        return self._set("env_runners", locals())

    def learners(
        self: _C,
        *,
        num_learners: int = UNSET,
        num_gpus_per_learner: float = UNSET,
        num_cpus_per_learner: float | str = UNSET,
        num_processes: int | None = UNSET,
        process_id: int | None = UNSET,
        coordinator_address: str | None = UNSET,
        process_timeout_s: float = UNSET,
        same_actions_as_one_process: bool = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the learner mesh: ``num_learners`` devices (0 = one on the default device),
        across ``num_processes`` JAX processes (``rljax.distributed``)."""
        return self._set("learners", locals())

    def rl_module(
        self: _C,
        *,
        model_config: DefaultModelConfig | dict[str, Any] | None = UNSET,
        rl_module_spec: RLModuleSpec | MultiRLModuleSpec | None = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the default model's settings, or a user Flax module through ``RLModuleSpec``."""
        return self._set("rl_module", locals())

    def evaluation(
        self: _C,
        *,
        evaluation_interval: int | None = UNSET,
        evaluation_duration: int = UNSET,
        evaluation_duration_unit: str = UNSET,
        evaluation_config: dict[str, Any] | None = UNSET,
        evaluation_num_env_runners: int = UNSET,
        evaluation_parallel_to_training: bool = UNSET,
        evaluation_sample_timeout_s: float | None = UNSET,
        custom_evaluation_function: Callable[..., Any] | None = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Evaluates every ``evaluation_interval`` iterations for ``evaluation_duration`` units."""
        return self._set("evaluation", locals())

    def debugging(
        self: _C,
        *,
        seed: int | None = UNSET,
        log_level: str = UNSET,
        xla_cpu_options: str | dict[str, Any] | None = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the seed, RLlib's log level and the XLA CPU options of rljax's programs."""
        return self._set("debugging", locals())

    def reporting(
        self: _C, *, metrics_num_episodes_for_smoothing: int = UNSET, **kwargs: Any
    ) -> _C:
        """Sets how results are reported."""
        return self._set("reporting", locals())

    def multi_agent(
        self: _C,
        *,
        policies: Any = UNSET,
        policy_mapping_fn: Any = UNSET,
        policies_to_train: Any = UNSET,
        algorithm_config_overrides_per_module: dict[str, dict[str, Any]] = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Several policies on a ``MultiAgentEnv``."""
        return self._set("multi_agent", locals())

    def fault_tolerance(
        self: _C,
        *,
        restart_failed_env_runners: bool = UNSET,
        max_num_env_runner_restarts: int = UNSET,
        restart_failed_sub_environments: bool | str = UNSET,
        ignore_env_runner_failures: bool = UNSET,
        env_runner_health_probe_timeout_s: float = UNSET,
        on_non_finite_update: str = UNSET,
        **kwargs: Any,
    ) -> _C:
        """What a run does about faults."""
        return self._set("fault_tolerance", locals())

    def callbacks(
        self: _C,
        callbacks_class: Any = UNSET,
        *,
        on_algorithm_init: Callable[..., Any] | None = UNSET,
        on_train_result: Callable[..., Any] | None = UNSET,
        on_evaluate_start: Callable[..., Any] | None = UNSET,
        on_evaluate_end: Callable[..., Any] | None = UNSET,
        on_checkpoint_loaded: Callable[..., Any] | None = UNSET,
        on_env_runners_recreated: Callable[..., Any] | None = UNSET,
        on_environment_created: Callable[..., Any] | None = UNSET,
        on_episode_created: Callable[..., Any] | None = UNSET,
        on_episode_start: Callable[..., Any] | None = UNSET,
        on_episode_step: Callable[..., Any] | None = UNSET,
        on_episode_end: Callable[..., Any] | None = UNSET,
        on_sample_end: Callable[..., Any] | None = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets user callbacks: classes with RLlib's hooks, or single hook functions."""
        values = dict(locals())
        for hook in [k for k in values if k.startswith("on_")]:
            values[f"callbacks_{hook}"] = values.pop(hook)
        return self._set("callbacks", values)

    @classmethod
    def overrides(cls, **kwargs: Any) -> dict[str, Any]:
        """A dict of settings for ``algorithm_config_overrides_per_module`` (names checked)."""
        keys = set(cls._all_keys())
        for key in kwargs:
            if key not in keys:
                raise ConfigError(
                    f"{cls.__name__}.overrides() got unknown key {key!r}{closest(key, keys)}"
                )
        return dict(kwargs)

    def module_overrides(self, policy_id: str) -> dict[str, Any]:
        """The settings ``policy_id`` overrides: its spec's config, then the per-module dict."""
        spec = (self.policies or {}).get(policy_id)
        out = dict(spec.config or {}) if spec is not None else {}
        out.update(self.algorithm_config_overrides_per_module.get(policy_id, {}))
        return out

    def module_config(self: _C, policy_id: str) -> _C:
        """This config with ``policy_id``'s overrides applied (its model settings merged over
        the config's), for building and training that policy."""
        overrides = self.module_overrides(policy_id)
        config = self.copy()
        config.algorithm_config_overrides_per_module = {}
        config.policies = {p: PolicySpec() for p in self.policies or {}} or None
        if isinstance(self.rl_module_spec, MultiRLModuleSpec):
            # The policy's own spec: a module class of its own, or default-model settings.
            spec = self.rl_module_spec.spec_of(policy_id)
            config.rl_module_spec = None
            if spec is not None and spec.module_class is not None:
                config.rl_module_spec = spec
            elif spec is not None and spec.model_config:
                merged = {**self.model_config.to_dict(), **spec.model_config}
                config.model_config = config._coerce("model_config", merged)
        for key, value in overrides.items():
            if key == "model_config":
                if isinstance(value, DefaultModelConfig):
                    value = value.to_dict()
                value = StrKeyDict(optional=True)(key, value) or {}
                value = {**self.model_config.to_dict(), **value}
            setattr(config, key, config._coerce(key, value))
        return config

    @property
    def is_multi_agent(self) -> bool:
        return self.policies is not None

    def framework(self: _C, framework: str | None = "jax", **kwargs: Any) -> _C:
        """RLlib's framework choice: rljax's models always run in JAX, so ``"torch"``, ``"tf2"``
        and the rest say so once (a warning) and change nothing; ``eager_tracing`` and the
        other framework options are accepted for the same reason."""
        if framework not in (None, "jax") and "framework" not in _WARNED_ONCE:
            _WARNED_ONCE.add("framework")
            logger.warning(
                "framework(%r): rljax's models run in JAX (with XLA); the setting has no effect",
                framework,
            )
        return self

    def api_stack(
        self: _C,
        enable_rl_module_and_learner: bool | None = None,
        enable_env_runner_and_connector_v2: bool | None = None,
    ) -> _C:
        """RLlib's API-stack switch: rljax has only the new stack (RLModules, Learners,
        EnvRunners and connectors), so turning either part off is an error."""
        for name, value in (
            ("enable_rl_module_and_learner", enable_rl_module_and_learner),
            ("enable_env_runner_and_connector_v2", enable_env_runner_and_connector_v2),
        ):
            if value is not None and not value:
                raise ConfigError(
                    f"api_stack({name}=False): rljax has only RLlib's new API stack; port the "
                    "script to it (RLModules and Learners: see the README's RLlib section) or "
                    "drop the call"
                )
        return self

    @property
    def enable_rl_module_and_learner(self) -> bool:
        """Always True: rljax has only RLlib's new API stack."""
        return True

    @property
    def enable_env_runner_and_connector_v2(self) -> bool:
        """Always True: rljax has only RLlib's new API stack."""
        return True

    def resources(self, **kwargs) -> AlgorithmConfig:
        """Old-stack ``num_gpus`` maps to ``num_gpus_per_learner``."""
        unknown = set(kwargs) - {"num_gpus", "num_cpus_for_main_process"}
        if unknown:
            raise ConfigError(
                f".resources() got unknown keywords {sorted(unknown)}; use .learners()"
            )
        if "num_gpus" in kwargs:
            self.num_gpus_per_learner = kwargs["num_gpus"]
        return self

    # ------------------------------------------------------------------ derived values
    @property
    def num_learner_shards(self) -> int:
        """Learners the batch is split across: ``num_learners``, or the one default learner
        when it is 0."""
        return max(1, self.num_learners)

    @property
    def num_runners(self) -> int:
        """Runners that sample: ``num_env_runners`` threads, or the driver's one when it is 0."""
        return max(1, self.num_env_runners)

    @property
    def total_num_envs(self) -> int:
        """Sub-envs over all runners."""
        return self.num_envs_per_env_runner * self.num_runners

    @property
    def evaluation_num_envs(self) -> int:
        """Env copies one evaluation steps together (before a timesteps duration trims them to
        a divisor of it): ``evaluation_num_env_runners`` x ``num_envs_per_env_runner`` (the
        ``evaluation_config`` one, else training's), or with no evaluation runners the
        ``evaluation_config``'s ``num_envs_per_env_runner``, else min(evaluation_duration, 8)."""
        overrides = self.evaluation_config or {}
        per_runner = overrides.get("num_envs_per_env_runner", self.num_envs_per_env_runner)
        if self.evaluation_num_env_runners:
            return int(self.evaluation_num_env_runners * per_runner)
        duration = self.evaluation_duration
        default = min(duration, 8) if isinstance(duration, int) else 8
        return int(overrides.get("num_envs_per_env_runner", default))

    @property
    def total_train_batch_size(self) -> int:
        return self.train_batch_size_per_learner * self.num_learner_shards

    @property
    def envs_per_step(self) -> int:
        """Sub-env results per env step, over all runners."""
        from rljax.env.vector import envpool_batch_size

        per_runner = self.num_envs_per_env_runner
        if self.gym_env_vectorize_mode == "ASYNC":
            if self._uses_envpool():
                per_runner = envpool_batch_size(per_runner, "ASYNC", self.async_batch_size)
            elif self.async_batch_size is not None:
                per_runner = self.async_batch_size
        return per_runner * self.num_runners

    def _uses_envpool(self) -> bool:
        from rljax.env.vector import resolve_env

        if self._without_env:  # checked for inference: no env is resolved
            return False
        try:
            return resolve_env(self.env, self.env_config).backend == "envpool"
        except ConfigError:
            return False

    def get_rollout_fragment_length(self) -> int:
        if self.rollout_fragment_length == "auto":
            return math.ceil(self.total_train_batch_size / self.envs_per_step)
        return int(self.rollout_fragment_length)

    @property
    def sampled_batch_size(self) -> int:
        """Env steps sampled per iteration: fragment length x sub-envs per step."""
        return self.get_rollout_fragment_length() * self.envs_per_step

    # ------------------------------------------------------------------ memory
    def memory_terms(self, observation_space: Any, action_space: Any) -> list[tuple[str, int]]:
        """The large allocations this config asks for, as ``(setting, bytes)`` estimates
        (``rljax.utils.memory``); subclasses add their networks and buffers."""
        obs = memory.space_bytes(observation_space)
        runners = self.num_runners
        envs = self.total_num_envs
        sampled = self.sampled_batch_size
        mc = self.model_config
        terms = [
            (
                f"num_envs_per_env_runner={self.num_envs_per_env_runner} x {runners} runner(s)",
                envs * (memory.PER_ENV_BYTES + 2 * obs),
            ),
            (
                f"the sampled batch of {sampled:,} env steps (rollout_fragment_length x envs)",
                sampled * (obs + 64) * 4,
            ),
            self._networks_term(observation_space, action_space),
        ]
        encoders = self._conv_encoders()
        if memory.is_image(observation_space) and encoders:
            # Every layer's output, in float32, for each row an update passes through each conv
            # stack, kept for the backward pass, and its gradient (x 2); acting passes one
            # observation per env of a step.
            _, _, floats = memory.conv_encoder(observation_space, mc.conv_filters)
            rows = self._update_rows()
            terms.append(
                (
                    f"the conv activations of {rows:,} rows (model_config.conv_filters="
                    f"{_filters_shown(mc.conv_filters)})",
                    (2 * rows + self.envs_per_step) * encoders * floats * 4,
                )
            )
        # Evaluation's env copies (SYNC, in the driver) live beside training's while it runs.
        per_runner = (self.evaluation_config or {}).get("num_envs_per_env_runner")
        setting = (
            f"evaluation_num_env_runners={self.evaluation_num_env_runners} x "
            f"num_envs_per_env_runner={per_runner or self.num_envs_per_env_runner}"
            if self.evaluation_num_env_runners
            else f"evaluation_config num_envs_per_env_runner={per_runner}"
            if per_runner is not None
            else "evaluation_duration"
        )
        terms.append(
            (
                f"{setting}: {self.evaluation_num_envs:,} evaluation env copies",
                self.evaluation_num_envs * (memory.PER_ENV_BYTES + 2 * obs),
            )
        )
        if self.num_env_runners:
            terms.append(
                (
                    f"num_env_runners={self.num_env_runners} runner threads",
                    self.num_env_runners * memory.RUNNER_THREAD_BYTES,
                )
            )
        if self.gym_env_vectorize_mode == "ASYNC" and not self._uses_envpool():
            terms.append(
                (
                    f"gym_env_vectorize_mode='ASYNC': {envs:,} env processes "
                    f"(num_envs_per_env_runner={self.num_envs_per_env_runner} x {runners} "
                    "runner(s))",
                    envs * memory.ASYNC_PROCESS_BYTES,
                )
            )
        return terms

    def inference_memory_terms(
        self, observation_space: Any, action_space: Any
    ) -> list[tuple[str, int]]:
        """``memory_terms`` of a policy loaded for inference: its networks and their learner
        state, which such a load builds (no env, batch or replay buffer)."""
        return [self._networks_term(observation_space, action_space)]

    def _networks_term(self, observation_space: Any, action_space: Any) -> tuple[str, int]:
        """The networks' parameters with their gradients, optimizer moments and copies."""
        mc = self.model_config
        networks = f"model_config.fcnet_hiddens={list(mc.fcnet_hiddens)}"
        if memory.is_image(observation_space):
            networks = f"model_config.conv_filters={_filters_shown(mc.conv_filters)}"
        if mc.head_fcnet_hiddens:
            networks += f", head_fcnet_hiddens={list(mc.head_fcnet_hiddens)}"
        return (
            f"the networks ({networks})",
            self.network_params(observation_space, action_space)
            * 4
            * memory.PARAM_COPIES
            * max(1, len(self.policies or ())),
        )

    def _update_rows(self) -> int:
        """Observations one update step passes through the network together: the whole train
        batch here; PPO's minibatch, and three passes of the batch off-policy."""
        return self.total_train_batch_size

    def _conv_encoders(self) -> int:
        """Conv stacks the default networks run per observation (a policy's and, unless the
        encoder is shared, a value network's)."""
        return 1 if self.model_config.vf_share_layers else 2

    def network_params(self, observation_space: Any, action_space: Any) -> int:
        """About how many parameters the default networks have (a policy and, unless the
        encoder is shared, a value network).

        Images as ``rljax.networks.models.ActorCritic`` builds them: the conv stack (one, or two
        unshared), then a policy and a value head of ``head_fcnet_hiddens`` (512 units when
        empty) on its output.
        """
        n = getattr(action_space, "n", None)
        out = int(n) if n is not None else 2 * memory.flat_size(action_space)
        mc = self.model_config
        nets = 1 if mc.vf_share_layers else 2
        if memory.is_image(observation_space):
            conv, features, _ = memory.conv_encoder(observation_space, mc.conv_filters)
            head = list(mc.head_fcnet_hiddens or (512,))
            return (
                nets * conv
                + memory.mlp_params(features, head, out)
                + memory.mlp_params(features, head, 1)
            )
        hiddens = [*mc.fcnet_hiddens, *mc.head_fcnet_hiddens]
        return nets * memory.mlp_params(memory.flat_size(observation_space), hiddens, out)

    # ------------------------------------------------------------------ search spaces
    def search_space(self) -> dict[str, Domain]:
        """The settings set to a search space (``.training(lr=tune.grid_search([...]))``), by
        name, in the order of the settings.

        ``tune.generate_variants(config.search_space(), num_samples, seed)`` gives one dict per
        trial; ``config.copy().update_from_dict(variant)`` is that trial's config.
        """
        out: dict[str, Domain] = {}
        for key in self._all_keys():
            value = getattr(self, key)
            if isinstance(value, Domain):
                out[key] = value
        return out

    def _refuse_search_spaces(self) -> None:
        """Raises ``ConfigError`` when a setting is, or holds, a search space: such a config
        stands for several trials, and only one of them can be validated or built."""
        searched = self.search_space()
        if searched:
            shown = ", ".join(f"{k}={v!r}" for k, v in searched.items())
            raise ConfigError(
                f"{type(self).__name__} searches {', '.join(searched)} ({shown}): a config with "
                "search spaces stands for several trials, not one run; run it through "
                "tune.Tuner(config, tune_config=..., run_config=tune.RunConfig(stop=...)).fit(), "
                "or resolve each trial's config: for variant in "
                "tune.generate_variants(config.search_space(), num_samples, seed): "
                "config.copy().update_from_dict(variant)"
            )
        for key in self._all_keys():
            inner = find_search_spaces(getattr(self, key))
            if inner:
                path, domain = inner[0]
                raise ConfigError(
                    f"{key_path(path, key)}={domain!r}: a search space inside a setting's value "
                    f"is not resolved; search the whole setting instead ({key}="
                    "tune.grid_search([value1, value2]))"
                )

    def update_from_dict(self: _C, config_dict: Mapping[str, Any]) -> _C:
        """Sets the settings ``config_dict`` names, as the setters do (RLlib's
        ``update_from_dict``); returns the config.

        With a variant of ``tune.generate_variants(config.search_space(), ...)``,
        ``config.copy().update_from_dict(variant)`` is that trial's resolved config.

        Raises:
          ConfigError: A key that is not a setting (with the closest one, or RLlib's new name
            for an old one), or a search space that cannot be sampled.
        """
        if not isinstance(config_dict, Mapping):
            raise ConfigError(
                f"update_from_dict() needs a dict of settings; got a {type(config_dict).__name__}"
            )
        keys = self._all_keys()
        config_dict = _deprecated_names("update_from_dict()", dict(config_dict), keys)
        if "model" in config_dict and "model" not in keys:  # RLlib's old-stack model dict
            check_old_model_dict("update_from_dict()", config_dict.pop("model"))
        config_dict = {
            k: v
            for k, v in config_dict.items()
            if not (
                isinstance(k, str)
                and k not in keys
                and check_rllib_only("update_from_dict()", k, v)
            )
        }
        unknown = [k for k in config_dict if not isinstance(k, str) or k not in keys]
        if unknown:
            hints = [(k, _unknown_key_hint(k, keys) if isinstance(k, str) else "") for k in unknown]
            if len(hints) == 1:
                shown = f"key {hints[0][0]!r}{hints[0][1]}"
            else:  # each one's hint in brackets
                shown = "keys " + ", ".join(
                    f"{k!r} ({h.removeprefix('; ')})" if h else repr(k) for k, h in hints
                )
            raise ConfigError(
                f"update_from_dict() got unknown {shown}; a key must be a setting of "
                f"{type(self).__name__}{_old_api_hint(self.algo_name, unknown)}"
            )
        for key, value in config_dict.items():
            setattr(self, key, self._store(key, value))
        return self

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Checks every value and combination; raises ``ConfigError`` naming what to change.

        A config holding search spaces is refused, naming them (``search_space()``).
        """
        from rljax.env.vector import envpool_config, resolve_env

        self._refuse_search_spaces()
        self._check_settings()
        spec = None if self._without_env else resolve_env(self.env, self.env_config)
        if spec is not None and spec.backend == "envpool":
            envpool_config(spec.name, spec.env_config)  # before anything reads the env_config
        if self.model_config.use_lstm and self.algo_name != "PPO":
            raise ConfigError(
                f"model_config use_lstm=True: {self.algo_name} has no recurrent policies yet; "
                "PPO does"
            )
        if self.env_to_module_connector is not None and (
            not self.takes_env_to_module_connector or self.is_multi_agent
        ):
            what = "multi-agent PPO" if self.is_multi_agent else self.algo_name
            raise ConfigError(
                f"env_to_module_connector is set, but {what} takes no connectors yet; "
                "single-agent PPO, IMPALA and APPO do (set env_to_module_connector=None)"
            )
        if self.async_batch_size is not None and (
            self.async_batch_size > self.num_envs_per_env_runner
        ):
            raise ConfigError(
                f"async_batch_size={self.async_batch_size} exceeds num_envs_per_env_runner="
                f"{self.num_envs_per_env_runner}"
            )
        if (
            spec is not None
            and spec.backend == "envpool"
            and self.gym_env_vectorize_mode == "ASYNC"
            and self.envs_per_step == self.total_num_envs
        ):
            raise ConfigError(
                f"EnvPool ASYNC needs a batch smaller than num_envs_per_env_runner="
                f"{self.num_envs_per_env_runner}; raise num_envs_per_env_runner to 2 or more, or set async_batch_size"
            )
        if self.evaluation_duration == "auto" and not self.evaluation_parallel_to_training:
            raise ConfigError(
                "evaluation_duration='auto' evaluates for as long as the iteration trains: it "
                "needs evaluation_parallel_to_training=True (else give a number of "
                "evaluation_duration_unit)"
            )
        if (
            self.evaluation_duration_unit == "episodes"
            and isinstance(self.evaluation_duration, int)
            and self.evaluation_duration > MAX_EVALUATION_EPISODES
        ):
            raise ConfigError(
                f"evaluation_duration={self.evaluation_duration} episodes is more than "
                f"{MAX_EVALUATION_EPISODES:,}; lower it, or evaluate for a number of env steps "
                "(evaluation_duration_unit='timesteps')"
            )
        if not self.explore:
            raise ConfigError(
                "explore=False: training always samples from the policy here (PPO's and the "
                "off-policy algorithms' exploration); for a greedy evaluation leave "
                "evaluation_config's explore False (the default)"
            )
        overrides = self.evaluation_config or {}
        if self.is_multi_agent and (
            overrides.get("explore") or "env" in overrides or "env_config" in overrides
        ):
            raise ConfigError(
                "evaluation_config: a multi-agent evaluation is greedy on the training env; "
                "explore, env and env_config overrides are for single-agent runs"
            )
        if ("env" in overrides or "env_config" in overrides) and not self._without_env:
            resolve_env(
                overrides.get("env", self.env), overrides.get("env_config", self.env_config)
            )
        if self.sample_async and self.num_env_runners == 0:
            raise ConfigError(
                "sample_async=True needs runner threads (num_env_runners >= 1); with "
                "num_env_runners=0 sampling and learning alternate in the driver"
            )
        self._check_batch_division()
        self._validate_multi_agent()

    # Set while ``validate_without_env`` runs: the checks that need the env are left out.
    _without_env = False

    def validate_without_env(self) -> None:
        """``validate()`` less what needs the env (resolving it, EnvPool's settings, an
        evaluation env): for a policy loaded for inference, whose spaces the checkpoint
        describes and whose env is never built. Every setting is still checked on its own and
        in combination; raises ``ConfigError``."""
        self._without_env = True
        try:
            self.validate()
        finally:
            del self._without_env

    def _check_settings(self) -> None:
        """Checks each setting on its own against its ``_CHECKS`` entry and stores it in its
        normal form (numpy scalars as Python ones, a model dict as ``DefaultModelConfig``)."""
        for key in self._all_keys():
            setattr(self, key, self._CHECKS[key](key, getattr(self, key)))

    def _validate_multi_agent(self) -> None:
        if self.policies is None:
            if self.policies_to_train is not None or self.policy_mapping_fn is not None:
                raise ConfigError(
                    "policy_mapping_fn / policies_to_train are set but policies is not; pass "
                    ".multi_agent(policies=[...], policy_mapping_fn=...)"
                )
            if isinstance(self.rl_module_spec, MultiRLModuleSpec):
                named = self.rl_module_spec.rl_module_specs
                raise ConfigError(
                    "rl_module_spec is a MultiRLModuleSpec (policies "
                    f"{list(named) if isinstance(named, dict) else 'all'}) but the config is "
                    "single-agent; add .multi_agent(policies=[...], policy_mapping_fn=...) or "
                    "pass an RLModuleSpec"
                )
            return
        if isinstance(self.rl_module_spec, MultiRLModuleSpec):
            named = self.rl_module_spec.rl_module_specs
            unknown = (
                [p for p in named if p not in self.policies] if isinstance(named, dict) else []
            )
            specs = self.rl_module_spec.specs(list(self.policies))
            if unknown:
                raise ConfigError(
                    f"MultiRLModuleSpec.rl_module_specs names {unknown}, which are not in "
                    f"policies {list(self.policies)}"
                )
            forward_only = [p for p, spec in specs.items() if spec.is_forward_only]
            trained = set(self.policies_to_train or ())
            if trained & set(forward_only):
                raise ConfigError(
                    f"policies_to_train={self.policies_to_train} names "
                    f"{sorted(trained & set(forward_only))}, whose modules only act (an "
                    "RLModule with a forward pass, no parameters); leave them out of "
                    "policies_to_train"
                )
            if forward_only and len(forward_only) == len(self.policies):
                raise ConfigError(
                    f"every policy ({forward_only}) has a module that only acts; at least one "
                    "policy must learn"
                )
        if self.restart_failed_sub_environments is True:
            raise ConfigError(
                "restart_failed_sub_environments=True is not built for multi-agent envs; "
                "restart_failed_env_runners=True (the default) replaces a failed runner whole"
            )
        if self.async_batch_size is not None:
            raise ConfigError(
                f"async_batch_size={self.async_batch_size} does not apply to multi-agent envs: "
                "with gym_env_vectorize_mode='ASYNC' every copy runs in its own process and all "
                "copies step together; leave async_batch_size unset"
            )
        if self.policy_mapping_fn is None:
            # Without the env no agent is mapped (a policy loaded for inference).
            if len(self.policies) > 1 and not self._without_env:
                raise ConfigError(
                    f"{len(self.policies)} policies need a policy_mapping_fn(agent_id, episode, "
                    "**kwargs) -> policy id"
                )
        elif not callable(self.policy_mapping_fn):
            raise ConfigError(f"policy_mapping_fn={self.policy_mapping_fn!r} is not callable")
        else:
            from rljax.env.multi_agent_vector import mapping_caller

            mapping_caller(
                self.policy_mapping_fn
            )  # a signature it cannot be called with fails here
        if self.policies_to_train is not None:
            unknown = [p for p in self.policies_to_train if p not in self.policies]
            if unknown:
                raise ConfigError(
                    f"policies_to_train names {unknown}, which are not in policies "
                    f"{list(self.policies)}"
                )
        unknown = [p for p in self.algorithm_config_overrides_per_module if p not in self.policies]
        if unknown:
            raise ConfigError(
                f"algorithm_config_overrides_per_module names {unknown}, which are not in "
                f"policies {list(self.policies)}"
            )
        all_keys = set(self._all_keys())
        for pid in self.policies:
            overrides = self.module_overrides(pid)
            for key in overrides:
                if key not in all_keys:
                    raise ConfigError(
                        f"policy {pid!r} overrides unknown setting {key!r}{closest(key, all_keys)}"
                    )
                if key not in self._PER_MODULE_KEYS:
                    raise ConfigError(
                        f"policy {pid!r} overrides {key!r}, which every policy of a run shares; "
                        f"a policy may override: {', '.join(self._PER_MODULE_KEYS) or 'nothing'}"
                    )
            if overrides:
                try:
                    self.module_config(pid).validate()
                except ConfigError as e:
                    raise ConfigError(f"policy {pid!r}'s overrides: {e}") from None

    def _check_batch_division(self) -> None:
        """The sampled batch is split across learners (on-policy); off-policy overrides this."""
        n_shards = self.num_learner_shards
        if self.sampled_batch_size % n_shards:
            raise ConfigError(
                f"the sampled batch of {self.sampled_batch_size} env steps (rollout_fragment_length="
                f"{self.get_rollout_fragment_length()} x {self.envs_per_step} sub-envs per step) does not "
                f"divide across num_learners={self.num_learners}; pick train_batch_size_per_learner, "
                "num_envs_per_env_runner or rollout_fragment_length so that it does"
            )

    # ------------------------------------------------------------------ build / copy / serialize
    def copy(self: _C) -> _C:
        return copy.deepcopy(self)

    def build_algo(self) -> Any:
        """Validates and builds the algorithm (RLlib's ``build_algo``)."""
        return self.checked_algo_class()(self.copy())

    def build(self, env: Any = None, logger_creator: Any = None, use_copy: bool = True) -> Any:
        """RLlib's deprecated name of ``build_algo()``; ``env`` sets the env first (as RLlib's
        ``build(env=...)``). ``logger_creator`` and ``use_copy`` are accepted and unused (rljax
        always builds from a copy)."""
        if "build" not in _WARNED_ONCE:
            _WARNED_ONCE.add("build")
            logger.warning("config.build() is deprecated (as in RLlib); use build_algo()")
        if env is not None:
            self.environment(env)
        return self.build_algo()

    def checked_algo_class(self) -> type:
        """Validates this config (resolving ``train_batch_size``) and returns the class that
        trains it: the algorithm's, or its multi-agent class for ``.multi_agent(...)``."""
        self._refuse_search_spaces()
        self._check_settings()  # the batch arithmetic below needs checked ints
        if self.train_batch_size is not None:
            self.train_batch_size_per_learner = max(
                1, self.train_batch_size // self.num_learner_shards
            )
            self.train_batch_size = None
        self.validate()
        if self.algo_class is None:
            raise ConfigError(f"{type(self).__name__} has no algorithm to build")
        algo_class = self.algo_class
        if self.is_multi_agent:
            algo_class = algo_class.multi_agent_class()
            if algo_class is None:
                raise ConfigError(
                    f"{self.algo_name} does not train multi-agent envs yet; use PPO for "
                    ".multi_agent(...) configs"
                )
        return algo_class

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict; classes and creators are stored by import path."""
        out: dict[str, Any] = {"algo": self.algo_name}
        for key in self._all_keys():
            value = getattr(self, key)
            if isinstance(value, Domain):
                pass  # a search space, kept as given
            elif key == "model_config":
                value = value.to_dict()
            elif key == "env_config" and isinstance(value, dict):
                value = _env_config_data(value)
            elif key == "rl_module_spec" and isinstance(value, MultiRLModuleSpec):
                named = value.rl_module_specs
                value = (
                    {"rl_module_specs": {p: _module_spec_dict(s) for p, s in named.items()}}
                    if isinstance(named, dict)
                    else {"every_policy": _module_spec_dict(named)}
                )
            elif key == "rl_module_spec" and value is not None:
                value = _module_spec_dict(value)
            elif key == "policies" and value is not None:
                value = {p: spec.to_dict() for p, spec in value.items()}
            elif key in ("env", "policy_mapping_fn") and (
                inspect.isclass(value) or callable(value)
            ):
                value = {"import": qualified_name(value)}
            elif key == "env_to_module_connector" and value is not None:
                # Connectors are data (their specs); RLlib's function form is code, stored by
                # name (an algorithm stores the connectors it built instead).
                value = (
                    [c if isinstance(c, dict) else c.spec() for c in value]
                    if isinstance(value, list | tuple)
                    else {"import": qualified_name(value)}
                )
            elif _is_callback_key(key) and value is not None:
                value = (
                    [{"import": qualified_name(c)} for c in value]
                    if isinstance(value, list | tuple)
                    else {"import": qualified_name(value)}
                )
            out[key] = value
        return out

    @classmethod
    def from_dict(
        cls,
        d: dict[str, Any],
        *,
        allow_imports: Iterable[str] | None = None,
        env: Any = None,
        policy_mapping_fn: Any = None,
        module_class: Any = None,
        callbacks: Any = None,
    ) -> AlgorithmConfig:
        """Builds a config from ``to_dict()`` output or a flat dict of config keys (RLlib names).

        A dict may come from a file anyone wrote, so code it names (``{"import":
        "module:Name"}`` for ``env``, ``policy_mapping_fn`` and ``rl_module_spec``'s
        ``module_class``) is never imported unless the caller opts in: ``env`` /
        ``policy_mapping_fn`` / ``module_class`` objects passed here replace what the dict
        names; objects registered in this process (``rljax.register_env``,
        ``register_module_class``, ``register_policy_mapping_fn``) resolve by name or import
        path; ``allow_imports`` lists module prefixes that may be imported. rljax's own example
        envs and mapping functions need no opt-in. Anything else raises ``ConfigError`` naming
        the field and the import path.
        """
        policy = LoadPolicy.make(
            allow_imports,
            env=env,
            policy_mapping_fn=policy_mapping_fn,
            module_class=module_class,
            callbacks=callbacks,
        )
        return cls._from_dict(d, policy)

    @classmethod
    def _from_dict(cls, d: Any, policy: LoadPolicy) -> AlgorithmConfig:
        if not isinstance(d, dict):
            raise ConfigError(f"a config must be a dict of settings; got a {type(d).__name__}")
        config = cls()
        d = dict(d)
        bad_keys = [k for k in d if not isinstance(k, str)]
        if bad_keys:
            raise ConfigError(
                f"config keys must be strings; got a key of type {type(bad_keys[0]).__name__}"
            )
        algo = d.pop("algo", None)
        if algo is not None and algo != cls.algo_name:
            shown = repr(algo[:40]) if isinstance(algo, str) else type(algo).__name__
            raise ConfigError(f"this dict is a {shown} config, not {cls.algo_name}")
        keys = set(cls._all_keys())
        for key in d:
            if key not in keys:
                raise ConfigError(
                    f"unknown config key {key[:60]!r}{_unknown_key_hint(key[:60], keys)}"
                )
        for key, value in d.items():
            # A file's search spaces would resolve to values that skip the checks below.
            if as_domain(value) is not None:
                raise ConfigError(
                    f"{key}={as_domain(value)!r}: from_dict() reads one run's settings, not search "
                    "spaces; set them on the config (config.training(lr=tune.grid_search([...])) "
                    "or config.update_from_dict({...}))"
                )
        # Whatever builds the env (the file's id, a flag, an object passed here, code it names).
        check_loaded_env_settings(d)
        if policy.objects.get("env") is not None:
            d["env"] = policy.objects["env"]
        elif isinstance(d.get("env"), dict):
            d["env"] = resolve("env", d["env"], policy, ConfigError)
        for key in [k for k in d if _is_callback_key(k)]:
            d[key] = _loaded_callbacks(key, d[key], policy)
        if policy.objects.get("policy_mapping_fn") is not None:
            d["policy_mapping_fn"] = policy.objects["policy_mapping_fn"]
        elif d.get("policy_mapping_fn") is not None and not callable(d["policy_mapping_fn"]):
            d["policy_mapping_fn"] = resolve(
                "policy_mapping_fn", d["policy_mapping_fn"], policy, ConfigError
            )
        for key, value in d.items():
            if key == "policies" and isinstance(value, dict):
                value = {
                    p: PolicySpec(config=v["config"])
                    if isinstance(v, dict) and set(v) == {"config"}
                    else v
                    for p, v in value.items()
                }
            elif (
                key == "rl_module_spec"
                and isinstance(value, dict)
                and set(value) == {"every_policy"}
            ):
                value = MultiRLModuleSpec(
                    rl_module_specs=_module_spec_from_dict(
                        "rl_module_specs", value["every_policy"], policy
                    )
                )
            elif key == "rl_module_spec" and isinstance(value, dict) and "rl_module_specs" in value:
                unknown = set(value) - {"rl_module_specs"}
                specs = value["rl_module_specs"]
                if unknown or not isinstance(specs, dict):
                    raise ConfigError(
                        "rl_module_spec with rl_module_specs must be {'rl_module_specs': "
                        f"{{policy_id: spec dict}}}}; got keys {sorted(map(str, value))[:5]}"
                    )
                value = MultiRLModuleSpec(
                    rl_module_specs={
                        p: _module_spec_from_dict(f"rl_module_specs[{p!r}]", v, policy)
                        for p, v in specs.items()
                    }
                )
            elif key == "rl_module_spec" and isinstance(value, dict):
                value = _module_spec_from_dict("rl_module_spec", value, policy)
            setattr(config, key, config._coerce(key, value))
        return config

    @classmethod
    def from_yaml(
        cls, path: str | os.PathLike, *, allow_imports: Iterable[str] | None = None
    ) -> AlgorithmConfig:
        """Loads a YAML file of config keys (optionally nested under ``config:`` with ``env:``).

        Code the file names is imported only under ``allow_imports`` (see ``from_dict``).
        """
        return cls.from_dict(read_config_file(path), allow_imports=allow_imports)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()})"


AlgorithmConfig._derive_tables()  # subclasses derive theirs in __init_subclass__


# What a gymnasium env's constructor may be told by a file: rendering only off-screen, and no
# paths (gymnasium's MuJoCo envs read xml_file; a file must not point an env at other files).
_FILE_RENDER_MODES = (None, "rgb_array", "rgb_array_list", "ansi")


def _deprecated_names(where: str, values: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """``values`` with RLlib's deprecated names (``DEPRECATED``) under their current ones,
    each said once in a warning."""
    out = {}
    for key, value in values.items():
        new = DEPRECATED.get(key) if isinstance(key, str) else None
        if new is not None and new in keys:
            if key not in _WARNED_ONCE:
                _WARNED_ONCE.add(key)
                logger.warning("%s: %r is deprecated (as in RLlib); use %r", where, key, new)
            key = new
        out[key] = value
    return out


def _is_callback_key(key: str) -> bool:
    return key in ("callbacks_class", "custom_evaluation_function") or key.startswith(
        "callbacks_on_"
    )


def _loaded_callbacks(key: str, value: Any, policy: LoadPolicy) -> Any:
    """A loaded config's callbacks: those the caller passes (``callbacks=``, for
    ``callbacks_class``), else what the file names, imported only where the caller allows;
    callbacks not allowed are left out with a warning (the run itself loads without them)."""
    if key == "callbacks_class" and policy.objects.get("callbacks") is not None:
        return policy.objects["callbacks"]
    if value is None or callable(value):
        return value
    refs = value if isinstance(value, list) else [value]
    trusted = LoadPolicy(policy.allow_imports)  # a passed class replaces callbacks_class only
    try:
        loaded = [resolve("callbacks", ref, trusted, ConfigError) for ref in refs]
    except ConfigError as e:
        logger.warning("%s is not loaded: %s", key, e)
        return None
    return loaded if isinstance(value, list) else loaded[0]


def check_loaded_env_settings(settings: Mapping[str, Any], where: str = "") -> None:
    """Refuses env settings that a file could use to reach outside the env: in ``env_config``
    and ``evaluation_config``'s ``env_config``, a render mode that opens a window (and imports
    a GUI library) and path-like strings.

    The one check of env settings read from a file (a config file, a checkpoint's config, an
    experiment's saved variants), applied whatever builds the env: the file's env id, a
    command-line ``--env``, or code. Settings typed in code are not checked.

    Args:
      settings: Config keys as a file holds them (``to_dict()`` form, RLlib's names).
      where: Put before the message (``"trial 0: "``).

    Raises:
      ConfigError: naming the setting, what was given (its first 40 characters) and what a
        file may give.
    """
    env_config = settings.get("env_config")
    if isinstance(env_config, Mapping):
        _check_file_env_config(env_config, f"{where}env_config")
    evaluation = settings.get("evaluation_config")
    if isinstance(evaluation, Mapping) and isinstance(evaluation.get("env_config"), Mapping):
        _check_file_env_config(evaluation["env_config"], f"{where}evaluation_config.env_config")


def _check_file_env_config(env_config: Mapping[str, Any], name: str) -> None:
    if env_config.get("render_mode") not in _FILE_RENDER_MODES:
        raise ConfigError(
            f"{name} render_mode={str(env_config['render_mode'])[:40]!r} in a loaded config; "
            f"a config file may ask for {list(_FILE_RENDER_MODES)} (set other modes in code)"
        )
    for key, value in env_config.items():
        if isinstance(value, str) and ("/" in value or "\\" in value or value.startswith(".")):
            raise ConfigError(
                f"{name} {str(key)[:40]!r} is a path in a loaded config; a config file may "
                "not point an env at files (set env_config in code: "
                "config.environment(env_config={...}))"
            )


def _unknown_key_hint(name: str, keys: Any) -> str:
    """What an unknown setting probably meant: an old RLlib name (exact or misspelled), or the
    closest current one."""
    if name in RENAMED:
        return f"; RLlib's new API stack calls it {RENAMED[name]!r}"
    match = best_match(name, [*keys, *RENAMED])
    if match in RENAMED:
        return f"; did you mean {RENAMED[match]!r} (RLlib's old name {match!r})?"
    return f"; did you mean {match!r}?" if match else ""


def _old_api_hint(algo: str, unknown: list[Any]) -> str:
    """Where a dict of RLlib 1.x's keys goes as it is: the algorithm's old-API trainer."""
    old = {"num_workers", "num_envs_per_worker", "sgd_minibatch_size", "num_sgd_iter", "lambda"}
    old.update(("buffer_size", "learning_starts", "exploration_fraction", "multiagent"))
    from rljax.agents import trainer_path

    path = trainer_path(algo)
    if path is None or not any(k in old for k in unknown):
        return ""
    return f" (a whole dict of RLlib 1.x's keys: {path}(config=d) translates them)"


def _filters_shown(filters: Any) -> str:
    """``conv_filters`` as a config file writes them (the Nature CNN's when None)."""
    if filters is None:
        return "None (the Nature CNN's)"
    return str([[o, list(k), s] for o, k, s in filters])


def read_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """A YAML file of config keys as one flat dict (``algo`` and ``env`` included).

    Accepts a flat mapping or RLlib's tuned-example layout ``{env: ..., config: {...}}``. The
    file is read as untrusted data: a regular file of at most 64 KiB, plain YAML without
    aliases, nested at most 64 levels (``rljax.utils.safe_io``); code it names is resolved
    later, by ``from_dict``, only where the caller opts in.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"config file path must be a str or path; got {type(path).__name__}")
    data = safe_io.read_yaml(Path(path), MAX_CONFIG_FILE_BYTES, ConfigError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys, got {type(data).__name__}")
    if "config" in data:
        inner = data["config"] or {}
        if not isinstance(inner, dict):
            raise ConfigError(f"{path}: 'config' must be a mapping; got {type(inner).__name__}")
        inner = dict(inner)
        for key in ("env", "algo"):
            if key in data:
                inner.setdefault(key, data[key])
        data = inner
    return data
