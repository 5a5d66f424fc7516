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
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.rl_module import RLModuleSpec
from rljax.env.vector import normalize_vectorize_mode
from rljax.policy.policy import PolicySpec
from rljax.utils import memory, safe_io
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


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()

# Old-API-stack names that RLlib users still type, and what they are called now.
RENAMED = {
    "num_workers": "num_env_runners",
    "num_rollout_workers": "num_env_runners",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "num_sgd_iter": "num_epochs",
    "sgd_minibatch_size": "minibatch_size",
    "lambda": "lambda_",
    "learning_rate": "lr",
    "num_gpus": "num_gpus_per_learner",
    "model": "model_config",
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
    return {} if value is None else StrKeyDict()(name, value)


def _model_config(name: str, value: Any) -> DefaultModelConfig:
    return DefaultModelConfig.from_any(value)  # its fields check themselves


def _vectorize_mode(name: str, value: Any) -> str:
    return normalize_vectorize_mode(value)


def _rl_module_spec(name: str, value: Any) -> RLModuleSpec | None:
    if value is None:
        return None
    if not isinstance(value, RLModuleSpec):
        refuse(name, value, "None or RLModuleSpec(module_class=..., model_config={...})")
    StrKeyDict()(f"{name}.model_config", value.model_config)  # they become keyword arguments
    return value


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


class AlgorithmConfig:
    """Settings common to every algorithm; subclasses add ``training()`` keys.

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
    # Keys of each setter; a key's default is its attribute value after __init__.
    _SECTIONS: ClassVar[dict[str, tuple[str, ...]]] = {
        "environment": ("env", "env_config", "clip_actions"),
        "env_runners": (
            "num_env_runners",
            "num_envs_per_env_runner",
            "gym_env_vectorize_mode",
            "rollout_fragment_length",
            "num_gpus_per_env_runner",
            "num_cpus_per_env_runner",
            "async_batch_size",
            "sample_async",
            "sample_timeout_s",
        ),
        "learners": ("num_learners", "num_gpus_per_learner", "num_cpus_per_learner"),
        "training": (
            "lr",
            "gamma",
            "train_batch_size_per_learner",
            "train_batch_size",
            "grad_clip",
            "grad_clip_by",
        ),
        "rl_module": ("model_config", "rl_module_spec"),
        "evaluation": ("evaluation_interval", "evaluation_duration", "evaluation_duration_unit"),
        "debugging": ("seed", "log_level"),
        "reporting": ("metrics_num_episodes_for_smoothing",),
        "fault_tolerance": (
            "restart_failed_env_runners",
            "max_num_env_runner_restarts",
            "restart_failed_sub_environments",
            "ignore_env_runner_failures",
            "env_runner_health_probe_timeout_s",
            "on_non_finite_update",
        ),
        "multi_agent": (
            "policies",
            "policy_mapping_fn",
            "policies_to_train",
            "algorithm_config_overrides_per_module",
        ),
    }
    # Settings a policy may override in a multi-agent config (the algorithm's learner settings;
    # sampling settings such as gamma are shared by every policy of a run).
    _PER_MODULE_KEYS: ClassVar[tuple[str, ...]] = ()
    # What each setting may be, on its own (validate() checks combinations after these). Every
    # key of _SECTIONS has an entry; subclasses extend the table with their keys.
    _CHECKS: ClassVar[dict[str, Check]] = {
        # environment
        "env": checked_elsewhere,  # resolve_env() in validate() names what is wrong
        "env_config": _env_config,
        "clip_actions": Bool(),
        # env_runners
        "num_env_runners": Int(0, memory.MAX_ENV_RUNNERS),
        "num_envs_per_env_runner": Int(1),
        "gym_env_vectorize_mode": _vectorize_mode,
        "rollout_fragment_length": Int(1, MAX_ROLLOUT_FRAGMENT_LENGTH, literals=("auto",)),
        "num_gpus_per_env_runner": Number(0),
        "num_cpus_per_env_runner": Number(0),
        "async_batch_size": Int(1, optional=True),
        "sample_async": Bool(),
        "sample_timeout_s": Number(0, low_open=True, optional=True),
        # learners
        "num_learners": Int(0),
        "num_gpus_per_learner": Number(0),
        "num_cpus_per_learner": Number(0, literals=("auto",)),
        # training
        "lr": Number(0, low_open=True),
        "gamma": Number(0, 1),
        "train_batch_size_per_learner": Int(1),
        "train_batch_size": Int(1, optional=True),
        "grad_clip": Number(0, low_open=True, optional=True),
        "grad_clip_by": Choice(("global_norm",)),
        # rl_module
        "model_config": _model_config,
        "rl_module_spec": _rl_module_spec,
        # evaluation
        "evaluation_interval": Int(1, optional=True),
        "evaluation_duration": Int(1, MAX_EVALUATION_DURATION),
        "evaluation_duration_unit": Choice(("episodes", "timesteps")),
        # debugging
        "seed": Int(0, MAX_SEED, optional=True),
        "log_level": Choice(("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL")),
        # reporting
        "metrics_num_episodes_for_smoothing": Int(1),
        # fault_tolerance
        "restart_failed_env_runners": Bool(),
        "max_num_env_runner_restarts": Int(0),
        "restart_failed_sub_environments": Bool(),
        "ignore_env_runner_failures": Bool(),
        "env_runner_health_probe_timeout_s": Number(0, low_open=True),
        "on_non_finite_update": Choice(("skip", "raise")),
        # multi_agent
        "policies": _policies,
        "policy_mapping_fn": checked_elsewhere,  # validate() tries the signature it is called with
        "policies_to_train": _policies_to_train,
        "algorithm_config_overrides_per_module": _overrides_per_module,
    }
    # Settings whose check also runs in the setters: the config reads them in their normal form
    # before validate() (a model dict becomes a DefaultModelConfig, policy ids a dict of specs).
    _CHECKED_ON_SET: ClassVar[tuple[str, ...]] = (
        "env_config",
        "gym_env_vectorize_mode",
        "model_config",
        "policies",
        "policies_to_train",
        "algorithm_config_overrides_per_module",
    )

    def __init__(self, algo_class: type | None = None):
        self.algo_class = algo_class
        # environment
        self.env: Any = None
        self.env_config: dict[str, Any] = {}
        self.clip_actions: bool = True
        # env_runners
        self.num_env_runners: int = 0
        self.num_envs_per_env_runner: int = 1
        self.gym_env_vectorize_mode: str = "SYNC"
        self.rollout_fragment_length: int | str = "auto"
        self.num_gpus_per_env_runner: float = 0
        self.num_cpus_per_env_runner: float = 1
        self.async_batch_size: int | None = None
        self.sample_async: bool = False
        self.sample_timeout_s: float | None = 60.0  # RLlib's default
        # learners
        self.num_learners: int = 0
        self.num_gpus_per_learner: float = 0
        self.num_cpus_per_learner: float = 1
        # training
        self.lr: float = 1e-3
        self.gamma: float = 0.99
        self.train_batch_size_per_learner: int = 4000
        self.train_batch_size: int | None = None
        self.grad_clip: float | None = None
        self.grad_clip_by: str = "global_norm"
        # rl_module
        self.model_config: DefaultModelConfig = DefaultModelConfig()
        self.rl_module_spec: RLModuleSpec | None = None
        # evaluation
        self.evaluation_interval: int | None = None
        self.evaluation_duration: int = 10
        self.evaluation_duration_unit: str = "episodes"
        # debugging
        self.seed: int | None = None
        self.log_level: str = "WARN"
        # reporting
        self.metrics_num_episodes_for_smoothing: int = 100
        # multi_agent
        self.policies: dict[str, Any] | None = None
        self.policy_mapping_fn: Any = None
        self.policies_to_train: list[str] | None = None
        self.algorithm_config_overrides_per_module: dict[str, dict[str, Any]] = {}
        # fault_tolerance (RLlib's defaults)
        self.restart_failed_env_runners: bool = True
        self.max_num_env_runner_restarts: int = 1000
        self.restart_failed_sub_environments: bool = False
        self.ignore_env_runner_failures: bool = False
        self.env_runner_health_probe_timeout_s: float = 30.0
        self.on_non_finite_update: str = "skip"

    # ------------------------------------------------------------------ setters
    def _set(self, section: str, values: dict[str, Any]) -> AlgorithmConfig:
        values = dict(values)
        values.pop("self", None)
        unknown = values.pop("kwargs", {})
        if unknown:
            name = next(iter(unknown))
            allowed = self._SECTIONS[section]
            hint = _unknown_key_hint(name, allowed) or _unknown_key_hint(name, self._all_keys())
            raise ConfigError(
                f".{section}() got an unknown keyword {name!r}{hint}; valid keywords: {', '.join(allowed)}"
            )
        for key, value in values.items():
            if value is not UNSET:
                setattr(self, key, self._coerce(key, value))
        return self

    def _coerce(self, key: str, value: Any) -> Any:
        if key in self._CHECKED_ON_SET:
            return self._CHECKS[key](key, value)
        return value

    @classmethod
    def _all_keys(cls) -> list[str]:
        return [k for keys in cls._SECTIONS.values() for k in keys]

    def environment(
        self,
        env: Any = UNSET,
        *,
        env_config: dict | None = UNSET,
        clip_actions: bool = UNSET,
        **kwargs,
    ) -> AlgorithmConfig:
        """Sets the env: an EnvPool task id, a gymnasium id, a registered name, a class or a creator."""
        return self._set("environment", locals())

    def env_runners(
        self,
        *,
        num_env_runners: int = UNSET,
        num_envs_per_env_runner: int = UNSET,
        gym_env_vectorize_mode: Any = UNSET,
        rollout_fragment_length: int | str = UNSET,
        num_gpus_per_env_runner: float = UNSET,
        num_cpus_per_env_runner: float = UNSET,
        async_batch_size: int | None = UNSET,
        sample_async: bool = UNSET,
        sample_timeout_s: float | None = UNSET,
        **kwargs,
    ) -> AlgorithmConfig:
        """Sets the sampling knobs.

        Args:
          num_env_runners: 0 samples in the driver (fused with the update for EnvPool envs);
            n > 0 runs n runner threads, each with its own vector env (at most 1024).
          num_envs_per_env_runner: Sub-envs per runner.
          gym_env_vectorize_mode: "SYNC" or "ASYNC" (or ``gymnasium.VectorizeMode``).
          rollout_fragment_length: Env steps per sub-env per iteration (at most 1,000,000), or
            "auto" (from the batch).
          num_gpus_per_env_runner: > 0 puts runner inference on a GPU.
          num_cpus_per_env_runner: Accepted for compatibility; threads share the host's cores.
          async_batch_size: ASYNC mode: how many ready sub-envs form a batch. EnvPool defaults
            to half of ``num_envs_per_env_runner``; for gymnasium envs, setting it switches from
            ``AsyncVectorEnv`` (lock-step) to first-ready batches.
          sample_async: With runner threads, let them sample the next fragment while the learner
            updates (samples at most one policy version old; the lag is reported). False: every
            update uses samples of the current policy.
          sample_timeout_s: A runner that delivers no fragment within this many seconds counts
            as hung: it is replaced (``restart_failed_env_runners``) or the run stops with
            ``EnvRunnerError``. Default 60, as RLlib; None waits for ever. A runner that fails
            is handled at once either way.
        """
        return self._set("env_runners", locals())

    def learners(
        self,
        *,
        num_learners: int = UNSET,
        num_gpus_per_learner: float = UNSET,
        num_cpus_per_learner: float = UNSET,
        **kwargs,
    ) -> AlgorithmConfig:
        """Sets the learner mesh: ``num_learners`` local devices (0 = one on the default device)."""
        return self._set("learners", locals())

    def rl_module(
        self,
        *,
        model_config: DefaultModelConfig | dict | None = UNSET,
        rl_module_spec: RLModuleSpec | None = UNSET,
        **kwargs,
    ) -> AlgorithmConfig:
        """Sets the default model's settings, or a user Flax module through ``RLModuleSpec``."""
        return self._set("rl_module", locals())

    def evaluation(
        self,
        *,
        evaluation_interval: int | None = UNSET,
        evaluation_duration: int = UNSET,
        evaluation_duration_unit: str = UNSET,
        **kwargs,
    ) -> AlgorithmConfig:
        """Evaluates every ``evaluation_interval`` iterations for ``evaluation_duration`` units
        (at most 1,000,000 env steps, or 10,000 episodes)."""
        return self._set("evaluation", locals())

    def debugging(
        self, *, seed: int | None = UNSET, log_level: str = UNSET, **kwargs
    ) -> AlgorithmConfig:
        """Sets the seed and RLlib's log level.

        Args:
          seed: None (a random one) or an int in ``[0, 2**31 - 1]``; the seeds of runners,
            restarted runners, evaluations and env copies derive from it and wrap inside the
            same range.
          log_level: Accepted for compatibility ("DEBUG", "INFO", "WARN", "WARNING", "ERROR"
            or "CRITICAL"); rljax logs through the ``rljax`` logger.
        """
        return self._set("debugging", locals())

    def reporting(
        self, *, metrics_num_episodes_for_smoothing: int = UNSET, **kwargs
    ) -> AlgorithmConfig:
        return self._set("reporting", locals())

    def multi_agent(
        self,
        *,
        policies: Any = UNSET,
        policy_mapping_fn: Any = UNSET,
        policies_to_train: Any = UNSET,
        algorithm_config_overrides_per_module: dict[str, dict[str, Any]] = UNSET,
        **kwargs,
    ) -> AlgorithmConfig:
        """Several policies on a ``MultiAgentEnv``.

        Args:
          policies: Policy ids, or a dict id -> None / ``PolicySpec`` / RLlib's tuple
            ``(None, obs_space, act_space, config_dict)``; a spec's config overrides settings for
            that policy (as ``algorithm_config_overrides_per_module`` does).
          policy_mapping_fn: ``(agent_id, episode, **kwargs) -> policy id``, called once per
            agent per episode (a one-argument ``agent_id -> policy id`` works too).
          policies_to_train: The policies that learn (default: all); the rest stay fixed.
          algorithm_config_overrides_per_module: policy id -> settings for that policy only,
            e.g. ``{"p1": PPOConfig.overrides(lr=1e-4, model_config={"fcnet_hiddens": [32]})}``.
        """
        return self._set("multi_agent", locals())

    def fault_tolerance(
        self,
        *,
        restart_failed_env_runners: bool = UNSET,
        max_num_env_runner_restarts: int = UNSET,
        restart_failed_sub_environments: bool = UNSET,
        ignore_env_runner_failures: bool = UNSET,
        env_runner_health_probe_timeout_s: float = UNSET,
        on_non_finite_update: str = UNSET,
        **kwargs,
    ) -> AlgorithmConfig:
        """What a run does about faults.

        Args:
          restart_failed_env_runners: A runner whose env raises (without sub-env restarts) or
            delivers nothing within ``sample_timeout_s`` (a hung env) is replaced by a new one
            with fresh envs. When its env raised in ``step``, the transitions it collected are
            kept (its unfinished episodes are cut there as by a time limit, and not reported)
            and the replacement writes the rest of the fragment; a hung runner's fragment is
            lost. A runner whose replacements fail 10 times in a row without delivering one env
            step is given up on (the env fails every time); one that delivered steps since its
            last restart starts that count again, so an env that fails now and then is
            restarted each time. False: the first error stops ``train()``.
          max_num_env_runner_restarts: Runner replacements allowed over the run. Every
            replacement counts: an env that raises on 1% of its steps uses about one per 100
            env steps (1000 last about 100,000 steps). For long runs of such an env raise it,
            or use ``restart_failed_sub_environments``, which costs no runner restart.
          restart_failed_sub_environments: A gymnasium sub-env that raises in ``step`` or
            ``reset`` is rebuilt and reset in place; its broken episode is dropped from the batch
            and the metrics, and the runner goes on.
          ignore_env_runner_failures: A runner that failed and is not restarted (restarts off,
            used up, or its env failing every time) is dropped and training goes on with the
            others (with the transitions it collected before its env raised); its columns of
            each later batch are empty (masked) rows, so nothing recompiles.
            The run stops only when every runner has failed. False: such a failure stops
            ``train()`` with ``EnvRunnerError``.
          env_runner_health_probe_timeout_s: Seconds a replacement runner may take to build and
            reset its envs (its health probe); a slower one counts as a failed restart and is
            abandoned, so a hanging ``reset`` cannot hang the run.
          on_non_finite_update: An update step whose gradients hold NaN or inf is always
            skipped inside the jitted update (parameters never become NaN) and counted in
            ``learners/__all_modules__/num_non_finite_updates``. ``"skip"`` (default) trains on;
            ``"raise"`` stops ``train()`` with ``NonFiniteUpdateError`` after that iteration.
        """
        return self._set("fault_tolerance", locals())

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

    def module_config(self, policy_id: str) -> AlgorithmConfig:
        """This config with ``policy_id``'s overrides applied (its model settings merged over
        the config's), for building and training that policy."""
        overrides = self.module_overrides(policy_id)
        config = self.copy()
        config.algorithm_config_overrides_per_module = {}
        config.policies = {p: PolicySpec() for p in self.policies or {}} or None
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

    def framework(self, framework: str = "jax", **kwargs) -> AlgorithmConfig:
        """Accepted for RLlib compatibility; rljax always runs on JAX."""
        return self

    def api_stack(self, **kwargs) -> AlgorithmConfig:
        """Accepted for RLlib compatibility; rljax has one API stack (RLlib's new one)."""
        return self

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
    def total_train_batch_size(self) -> int:
        return self.train_batch_size_per_learner * max(1, self.num_learners)

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
        return per_runner * max(1, self.num_env_runners)

    def _uses_envpool(self) -> bool:
        from rljax.env.vector import resolve_env

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
        runners = max(1, self.num_env_runners)
        envs = self.num_envs_per_env_runner * runners
        sampled = self.sampled_batch_size
        mc = self.model_config
        networks = f"model_config.fcnet_hiddens={list(mc.fcnet_hiddens)}"
        if memory.is_image(observation_space):
            networks = f"model_config.conv_filters={_filters_shown(mc.conv_filters)}"
        if mc.head_fcnet_hiddens:
            networks += f", head_fcnet_hiddens={list(mc.head_fcnet_hiddens)}"
        terms = [
            (
                f"num_envs_per_env_runner={self.num_envs_per_env_runner} x {runners} runner(s)",
                envs * (memory.PER_ENV_BYTES + 2 * obs),
            ),
            (
                f"the sampled batch of {sampled:,} env steps (rollout_fragment_length x envs)",
                sampled * (obs + 64) * 4,
            ),
            (
                f"the networks ({networks})",
                self.network_params(observation_space, action_space)
                * 4
                * memory.PARAM_COPIES
                * max(1, len(self.policies or ())),
            ),
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

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Checks every value and combination; raises ``ConfigError`` naming what to change."""
        from rljax.env.vector import envpool_config, resolve_env

        self._check_settings()
        spec = resolve_env(self.env, self.env_config)
        if spec.backend == "envpool":
            envpool_config(spec.name, spec.env_config)  # before anything reads the env_config
        if self.async_batch_size is not None and (
            self.async_batch_size > self.num_envs_per_env_runner
        ):
            raise ConfigError(
                f"async_batch_size={self.async_batch_size} exceeds num_envs_per_env_runner="
                f"{self.num_envs_per_env_runner}"
            )
        if (
            spec.backend == "envpool"
            and self.gym_env_vectorize_mode == "ASYNC"
            and self.envs_per_step == self.num_envs_per_env_runner * max(1, self.num_env_runners)
        ):
            raise ConfigError(
                f"EnvPool ASYNC needs a batch smaller than num_envs_per_env_runner="
                f"{self.num_envs_per_env_runner}; raise num_envs_per_env_runner to 2 or more, or set async_batch_size"
            )
        if (
            self.evaluation_duration_unit == "episodes"
            and self.evaluation_duration > MAX_EVALUATION_EPISODES
        ):
            raise ConfigError(
                f"evaluation_duration={self.evaluation_duration} episodes is more than "
                f"{MAX_EVALUATION_EPISODES:,}; lower it, or evaluate for a number of env steps "
                "(evaluation_duration_unit='timesteps')"
            )
        if self.sample_async and self.num_env_runners == 0:
            raise ConfigError(
                "sample_async=True needs runner threads (num_env_runners >= 1); with "
                "num_env_runners=0 sampling and learning alternate in the driver"
            )
        self._check_batch_division()
        self._validate_multi_agent()

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
            return
        if self.restart_failed_sub_environments:
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
            if len(self.policies) > 1:
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
        n_shards = max(1, self.num_learners)
        if self.sampled_batch_size % n_shards:
            raise ConfigError(
                f"the sampled batch of {self.sampled_batch_size} env steps (rollout_fragment_length="
                f"{self.get_rollout_fragment_length()} x {self.envs_per_step} sub-envs per step) does not "
                f"divide across num_learners={self.num_learners}; pick train_batch_size_per_learner, "
                "num_envs_per_env_runner or rollout_fragment_length so that it does"
            )

    # ------------------------------------------------------------------ build / copy / serialize
    def copy(self) -> AlgorithmConfig:
        return copy.deepcopy(self)

    def build_algo(self) -> Any:
        """Validates and builds the algorithm (RLlib's ``build_algo``)."""
        self._check_settings()  # the batch arithmetic below needs checked ints
        if self.train_batch_size is not None:
            self.train_batch_size_per_learner = max(
                1, self.train_batch_size // max(1, self.num_learners)
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
        return algo_class(self.copy())

    build = build_algo

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict; classes and creators are stored by import path."""
        out: dict[str, Any] = {"algo": self.algo_name}
        for key in self._all_keys():
            value = getattr(self, key)
            if key == "model_config":
                value = value.to_dict()
            elif key == "rl_module_spec" and value is not None:
                value = {
                    "module_class": qualified_name(value.module_class)
                    if value.module_class
                    else None,
                    "model_config": value.model_config,
                }
            elif key == "policies" and value is not None:
                value = {p: spec.to_dict() for p, spec in value.items()}
            elif key in ("env", "policy_mapping_fn") and (
                inspect.isclass(value) or callable(value)
            ):
                value = {"import": qualified_name(value)}
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
            allow_imports, env=env, policy_mapping_fn=policy_mapping_fn, module_class=module_class
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
        if policy.objects.get("env") is not None:
            d["env"] = policy.objects["env"]
        elif isinstance(d.get("env"), dict):
            d["env"] = resolve("env", d["env"], policy, ConfigError)
        elif isinstance(d.get("env"), str) and isinstance(d.get("env_config"), dict):
            _check_file_env_config(d["env_config"])
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
            elif key == "rl_module_spec" and isinstance(value, dict):
                unknown = set(value) - {"module_class", "model_config"}
                if unknown:
                    raise ConfigError(
                        f"rl_module_spec has unknown keys {sorted(map(str, unknown))[:5]}; "
                        "allowed: module_class, model_config"
                    )
                mc = value.get("module_class")
                if policy.objects.get("module_class") is not None:
                    mc = policy.objects["module_class"]
                elif mc is not None:
                    mc = resolve("module_class", mc, policy, ConfigError)
                value = RLModuleSpec(mc, value.get("model_config") or {})
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


# What a gymnasium env's constructor may be told by a file: rendering only off-screen, and no
# paths (gymnasium's MuJoCo envs read xml_file; a file must not point an env at other files).
_FILE_RENDER_MODES = (None, "rgb_array", "rgb_array_list", "ansi")


def _check_file_env_config(env_config: dict[str, Any]) -> None:
    """Refuses env_config entries that a file could use to reach outside the env: a render mode
    that opens a window (and imports a GUI library), and path-like strings."""
    if env_config.get("render_mode") not in _FILE_RENDER_MODES:
        raise ConfigError(
            f"env_config render_mode={str(env_config['render_mode'])[:40]!r} in a loaded config; "
            f"a config file may ask for {list(_FILE_RENDER_MODES)} (set other modes in code)"
        )
    for key, value in env_config.items():
        if isinstance(value, str) and ("/" in value or "\\" in value or value.startswith(".")):
            raise ConfigError(
                f"env_config {str(key)[:40]!r} is a path in a loaded config; a config file may "
                "not point an env at files (pass env_config in code, or env=... to the loader)"
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


def _filters_shown(filters: Any) -> str:
    """``conv_filters`` as a config file writes them (the Nature CNN's when None)."""
    if filters is None:
        return "None (the Nature CNN's)"
    return str([[o, list(k), s] for o, k, s in filters])


def _check_int(name: str, value: Any, minimum: int) -> int:
    """One int setting checked by hand: ``Int(minimum)``."""
    return Int(minimum)(name, value)


def _check_positive_float(name: str, value: Any) -> float:
    """One number setting checked by hand: finite and > 0."""
    return Number(0, low_open=True)(name, value)


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
