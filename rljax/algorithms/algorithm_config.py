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
from typing import Any, ClassVar, TypeVar

from rljax.algorithms import config_io, config_memory, config_validation
from rljax.algorithms.config_checks import (
    EVALUATION_KEYS,
    MAX_EVALUATION_DURATION,
    MAX_EVALUATION_EPISODES,
    MAX_ROLLOUT_FRAGMENT_LENGTH,
    SPACE_MARK,
)
from rljax.algorithms.config_compat import ConfigCompat, translate_special_keys
from rljax.algorithms.config_io import (
    MAX_CONFIG_FILE_BYTES,
    check_loaded_env_settings,
    read_config_file,
)
from rljax.algorithms.config_names import (
    DEPRECATED,
    RENAMED,
    deprecated_names,
    old_api_hint,
    unknown_key_hint,
    warn_once,
)
from rljax.algorithms.config_settings import CommonSettings
from rljax.algorithms.old_model_dict import check_old_model_dict
from rljax.algorithms.rllib_only import EXPERIMENTAL, check_rllib_only
from rljax.algorithms.settings import Setting, declared_settings, setter_doc
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.policy.policy import PolicySpec
from rljax.utils.checks import Check, StrKeyDict
from rljax.utils.errors import ConfigError, closest
from rljax.utils.references import LoadPolicy, user_overrides
from rljax.utils.search_space import Domain, as_domain, check_search_spaces, find_search_spaces
from rljax.utils.torch_classes import MAML_INSTEAD, TorchClass, check_not_torch

logger = logging.getLogger("rljax")


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()

# .training()'s settings RLlib 2.60's .learners() takes as well.
_MOVED_TO_LEARNERS = (
    "learner_class",
    "learner_connector",
    "learner_config_dict",
    "add_default_connectors_to_learner_pipeline",
)

# RLlib 2.60's .resources() names it still takes and sets elsewhere: name -> (setter, name).
_MOVED_FROM_RESOURCES = {
    "num_cpus_per_worker": ("env_runners", "num_cpus_per_env_runner"),
    "num_gpus_per_worker": ("env_runners", "num_gpus_per_env_runner"),
    "custom_resources_per_worker": ("env_runners", "custom_resources_per_env_runner"),
    "num_learner_workers": ("learners", "num_learners"),
    "num_cpus_per_learner_worker": ("learners", "num_cpus_per_learner"),
    "num_gpus_per_learner_worker": ("learners", "num_gpus_per_learner"),
    "local_gpu_idx": ("learners", "local_gpu_idx"),
    "num_cpus_for_local_worker": ("resources", "num_cpus_for_main_process"),
}

# Keywords RLlib 2.60 takes in a second setter, for the same setting: (setter, keyword) ->
# the setter that owns it.
_FORWARDED = {("training", "clip_actions"): "environment"}

_C = TypeVar("_C", bound="AlgorithmConfig")


def trained_policies(fn: Callable[..., Any], policies: Any) -> list[str]:
    """The policies RLlib's ``policies_to_train`` function ``(policy_id, batch) -> bool``
    trains, asked once per policy of ``policies`` (a dict, list or set of ids) with
    ``batch=None``.

    Raises:
      ConfigError: there are no policies yet, or the function raises for one.
    """
    if policies is None:
        raise ConfigError(
            "policies_to_train as a function needs the policies: give "
            ".multi_agent(policies=[...], policies_to_train=fn)"
        )
    out = []
    for pid in list(policies):
        try:
            if fn(pid, None):
                out.append(str(pid))
        except Exception as e:
            raise ConfigError(
                f"policies_to_train={getattr(fn, '__name__', fn)!r} raised {type(e).__name__}: "
                f"{e} for policy {pid!r}; rljax asks it once per policy, with batch=None"
            ) from e
    return out


def multi_agent_trainer(algo_class: Any, algo_name: str) -> type:
    """The class that trains ``algo_class``'s ``.multi_agent(...)`` configs: its
    ``multi_agent_class()``.

    Raises:
      ConfigError: the algorithm trains no multi-agent configs, or ``algo_class`` is a user's
        subclass whose own methods that class would not run (and which does not name its
        multi-agent class itself).
    """
    multi = algo_class.multi_agent_class()
    if multi is None:
        raise ConfigError(
            f"{algo_name} does not train multi-agent envs; use PPO, IMPALA, "
            "APPO, DQN, SAC or TD3 for .multi_agent(...) configs"
        )
    chosen = "multi_agent_class" in user_overrides(algo_class, class_level=True)
    if not (chosen or issubclass(multi, algo_class)) and (own := user_overrides(algo_class)):
        raise ConfigError(
            f"{algo_class.__name__} defines {own}, but its .multi_agent(...) configs train with "
            f"{multi.__name__} ({multi.__module__}), which would not run them: subclass "
            f"{multi.__name__} with those methods and return that class from "
            f"{algo_class.__name__}.multi_agent_class() (a classmethod)"
        )
    return multi


class AlgorithmConfig(CommonSettings, ConfigCompat):
    """Settings common to every algorithm; subclasses add ``training()`` keys.

    Each setting is declared once, as a ``Setting`` class attribute (name, default, check, doc,
    setter): those every algorithm has in ``CommonSettings`` (``config_settings``), an
    algorithm's own in its config class. The setters' keys, ``validate()``'s checks,
    ``to_dict`` / ``from_dict`` and the defaults of ``__init__`` are derived from the
    declarations (``rljax.algorithms.settings``). The jobs beyond the setters are functions of
    their own modules, which the methods here call: validation (``config_validation``), the
    config as data (``config_io``), memory estimates (``config_memory``) and RLlib's names
    (``config_names``).

    A setter's keywords default to ``UNSET``: a keyword left out keeps the setting's current
    value (in a new config, its default), so ``.training(lr=3e-4)`` changes ``lr`` alone. The
    defaults are the declarations' (the site's settings tables list them).

    Any setter also takes a search space (``rljax.tune``) for any setting and keeps it as given:
    ``search_space()`` lists them, ``validate()`` refuses the config until each is resolved, and
    ``copy().update_from_dict(variant)`` resolves them for one trial.

    Example:
        ```python
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_envs_per_env_runner=16)
            .training(lr=3e-4, num_epochs=6)
        )
        algo = config.build_algo()
        result = algo.train()
        ```
    """

    algo_name: ClassVar[str] = "Algorithm"
    # Whether the algorithm applies env_to_module_connector's connectors (single-agent).
    takes_env_to_module_connector: ClassVar[bool] = False
    # Whether the algorithm builds recurrent policies (model_config use_lstm=True).
    has_recurrent_policies: ClassVar[bool] = False
    # Whether the algorithm learns from offline_data(input_=...) (BC, MARWIL) instead of
    # sampling its env.
    learns_offline: ClassVar[bool] = False
    # ``evaluation(offline_evaluation_interval=...)``: the loss on the offline data (BC, MARWIL).
    evaluates_offline_loss: ClassVar[bool] = False
    # Whether batch_mode="complete_episodes" trains it (PPO).
    samples_complete_episodes: ClassVar[bool] = False
    # RLlib's ``_model_config_auto_includes``: model_config keys that are the algorithm's own
    # settings (DQN's "epsilon", ...), by model_config key; a model_config that gives one sets
    # that setting, as RLlib's module reads it from there.
    MODEL_CONFIG_SETTINGS: ClassVar[dict[str, str]] = {}
    # Derived from the declarations (CommonSettings' and a subclass's) by _derive_tables():
    # every setting by name, grouped by section; each setter's keys; each setting's check; the
    # settings a policy may override; the settings whose check also runs in the setters.
    SETTINGS: ClassVar[dict[str, Setting[Any]]]
    _SECTIONS: ClassVar[dict[str, tuple[str, ...]]]
    _CHECKS: ClassVar[dict[str, Check]]
    _PER_MODULE_KEYS: ClassVar[tuple[str, ...]]
    _CHECKED_ON_SET: ClassVar[tuple[str, ...]]

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
        extra = deprecated_names(f".{section}()", values.pop("kwargs", {}), self._all_keys())
        for key, value in [*values.items(), *extra.items()]:  # a PyTorch class of a script
            check_not_torch(value, f".{section}({key}=...)")
        if section == "training" and "model" in extra:  # RLlib's old-stack model dict
            self._take_old_model(".training()", extra.pop("model"))
        for key in [k for k in extra if k in values]:
            if values[key] is not UNSET:
                raise ConfigError(f".{section}() got {key!r} twice (also by its deprecated name)")
            values[key] = extra.pop(key)  # a deprecated name of this section's setting
        forwarded = {k: extra.pop(k) for k in list(extra) if (section, k) in _FORWARDED}
        unknown = {
            k: v
            for k, v in extra.items()
            if not check_rllib_only(f".{section}()", k, v)  # RLlib's, with no effect here
        }
        if unknown:
            name = next(iter(unknown))
            allowed = [self.SETTINGS[k].setter_keyword for k in self._SECTIONS[section]]
            owner = next((s for s, keys in self._SECTIONS.items() if name in keys), None)
            hint = (
                f"; it is set by .{owner}({name}=...)"
                if owner is not None
                else unknown_key_hint(name, allowed) or unknown_key_hint(name, self._all_keys())
            )
            raise ConfigError(
                f".{section}() got an unknown keyword {name!r}{hint}; valid keywords: {', '.join(allowed)}"
            )
        for key, value in forwarded.items():  # RLlib's SAC takes clip_actions in .training()
            getattr(self, _FORWARDED[(section, key)])(**{key: value})
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
        if key == "model_config" and isinstance(value, dict) and self.MODEL_CONFIG_SETTINGS:
            value = config_validation.take_algorithm_keys(self, value)  # DQN's "epsilon", ...
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
        observation_space: Any = UNSET,
        action_space: Any = UNSET,
        clip_actions: bool = UNSET,
        clip_rewards: bool | float | None = UNSET,
        action_mask_key: str = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the env (or, for offline learning without one, its spaces) and how actions
        reach it."""
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
        batch_mode: str = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the sampling knobs."""
        return self._set("env_runners", locals())

    def training(
        self: _C,
        *,
        lr: Any = UNSET,
        gamma: Any = UNSET,
        train_batch_size_per_learner: Any = UNSET,
        train_batch_size: Any = UNSET,
        grad_clip: Any = UNSET,
        grad_clip_by: Any = UNSET,
        learner_class: Any = UNSET,
        learner_config_dict: Any = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the training settings every algorithm has (RLlib's base ``training()``):
        ``lr``, ``gamma``, ``train_batch_size_per_learner``, ``train_batch_size``,
        ``grad_clip``, ``grad_clip_by``, ``learner_class``, ``learner_config_dict``. Each
        algorithm's config adds its own keywords (and types them)."""
        return self._set("training", locals())

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
        across ``num_processes`` JAX processes (``rljax.distributed``). RLlib 2.60's
        ``learner_class``, ``learner_connector``, ``learner_config_dict`` and
        ``add_default_connectors_to_learner_pipeline`` here are ``.training()``'s."""
        moved = {k: kwargs.pop(k) for k in _MOVED_TO_LEARNERS if k in kwargs}
        for k, v in moved.items():  # a refusal names the call the user wrote
            check_rllib_only(".learners()", k, v)
        if moved:  # RLlib 2.60 moved them from .training() to .learners()
            self.training(**moved)
        values = dict(locals())
        values.pop("moved")
        return self._set("learners", values)

    def rl_module(
        self: _C,
        *,
        model_config: DefaultModelConfig | dict[str, Any] | None = UNSET,
        rl_module_spec: RLModuleSpec | MultiRLModuleSpec | None = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets the default model's settings, or a user Flax module through ``RLModuleSpec``;
        ``algorithm_config_overrides_per_module=...`` here is RLlib 2.60's place for that
        multi-agent setting (``.multi_agent(algorithm_config_overrides_per_module=...)``)."""
        overrides = kwargs.pop("algorithm_config_overrides_per_module", UNSET)
        if overrides is not UNSET:
            self.multi_agent(algorithm_config_overrides_per_module=overrides)
        values = {"model_config": model_config, "rl_module_spec": rl_module_spec}
        return self._set("rl_module", {**values, "kwargs": kwargs})

    def evaluation(
        self: _C,
        *,
        evaluation_interval: int | None = UNSET,
        evaluation_duration: int = UNSET,
        evaluation_duration_unit: str = UNSET,
        evaluation_config: dict[str, Any] | None = UNSET,
        evaluation_num_env_runners: int = UNSET,
        evaluation_parallel_to_training: bool = UNSET,
        evaluation_auto_duration_min_env_steps_per_sample: int = UNSET,
        evaluation_auto_duration_max_env_steps_per_sample: int = UNSET,
        evaluation_sample_timeout_s: float | None = UNSET,
        custom_evaluation_function: Callable[..., Any] | None = UNSET,
        offline_evaluation_interval: int | None = UNSET,
        offline_evaluation_type: str = UNSET,
        offline_eval_batch_size_per_runner: int = UNSET,
        dataset_num_iters_per_offline_eval_runner: int = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Evaluates every ``evaluation_interval`` iterations for ``evaluation_duration`` units
        (and BC and MARWIL on their offline data every ``offline_evaluation_interval``)."""
        values = dict(locals())  # RLlib's attribute for its keyword:
        values["dataset_num_iters_per_eval_runner"] = values.pop(
            "dataset_num_iters_per_offline_eval_runner"
        )
        return self._set("evaluation", values)

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
        self: _C,
        *,
        metrics_num_episodes_for_smoothing: int = UNSET,
        min_sample_timesteps_per_iteration: int = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Sets how results are reported, and how many env steps an iteration samples."""
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
        """Several policies on a ``MultiAgentEnv``.

        ``policies_to_train`` may be RLlib's function ``(policy_id, batch) -> bool``: it is
        asked once per policy here, with ``batch=None``, and its answer kept as the list.
        ``count_steps_by`` is RLlib's ``"env_steps"`` (batches count env steps); its
        ``"agent_steps"`` is refused.
        """
        count = kwargs.pop("count_steps_by", "env_steps")
        if count != "env_steps":
            raise ConfigError(
                f".multi_agent(count_steps_by={count!r}): rljax's multi-agent batches count env "
                "steps ('env_steps'); set train_batch_size_per_learner in env steps"
            )
        if callable(policies_to_train):
            given = policies if policies is not UNSET else self.policies
            policies_to_train = trained_policies(policies_to_train, given)
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

    def offline_data(
        self: _C,
        *,
        input_: Any = UNSET,
        dataset_num_iters_per_learner: int | None = UNSET,
        output: Any = UNSET,
        output_compress_columns: list[str] | None = UNSET,
        output_max_rows_per_file: int | None = UNSET,
        output_write_remaining_data: bool = UNSET,
        output_write_episodes: bool = UNSET,
        **kwargs: Any,
    ) -> _C:
        """Offline data: what BC, MARWIL and CQL learn from (``input_``), and where sampled episodes
        are recorded (``output``), as Parquet files of env steps (``rljax.offline``)."""
        return self._set("offline_data", locals())

    def experimental(self: _C, **kwargs: Any) -> _C:
        """RLlib's experimental settings: those that change nothing here are accepted (a
        one-time warning says so), the PyTorch ones are refused with what to do instead.

        Raises:
          ConfigError: A setting rljax refuses, or one RLlib does not have.
        """
        for key, value in kwargs.items():
            check_not_torch(value, f".experimental({key}=...)")
            if not check_rllib_only(".experimental()", key, value):
                raise ConfigError(
                    f".experimental() got {key!r}, which is not one of RLlib's experimental "
                    f"settings; rljax knows {', '.join(EXPERIMENTAL)}"
                )
        return self

    def callbacks(
        self: _C,
        callbacks_class: Any = UNSET,
        *,
        on_algorithm_init: Callable[..., Any] | None = UNSET,
        on_train_result: Callable[..., Any] | None = UNSET,
        on_evaluate_start: Callable[..., Any] | None = UNSET,
        on_evaluate_end: Callable[..., Any] | None = UNSET,
        on_evaluate_offline_start: Callable[..., Any] | None = UNSET,
        on_evaluate_offline_end: Callable[..., Any] | None = UNSET,
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
        """A dict of settings for ``algorithm_config_overrides_per_module`` (names checked).
        RLlib's old setter name ``exploration`` with a bool is taken as ``explore``."""
        keys = set(cls._all_keys())
        if isinstance(kwargs.get("exploration"), bool):  # RLlib's deprecated .exploration()
            kwargs["explore"] = kwargs.pop("exploration")
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
        if framework not in (None, "jax"):
            warn_once(
                "framework",
                "framework(%r): rljax's models run in JAX (with XLA); the setting has no effect",
                framework,
            )
        return self

    def api_stack(
        self: _C,
        enable_rl_module_and_learner: bool | None = None,
        enable_env_runner_and_connector_v2: bool | None = None,
    ) -> _C:
        """RLlib's API-stack switches. rljax's algorithms are RLlib's new API stack (RLModules,
        Learners, EnvRunners and connectors). Either switch set to False asks for RLlib's old
        stack, as RLlib's scripts do: ``build_algo()`` then builds RLlib 1.x's trainer of this
        algorithm (``rljax.agents``), on which the old ``model`` dict
        (``.training(model={...})``, ``ModelCatalog`` custom models included) configures the
        networks and results carry the old keys beside the new ones. Both True turn the new
        stack back on (RLlib's ``config.copy().api_stack(True, True)`` migration).

        Raises:
          ConfigError: a switch that is not a bool, or the old stack for an algorithm RLlib
            1.x had no trainer of here (the trainers are PPO, APPO, IMPALA, DQN, SAC and TD3).
        """
        from rljax.utils.old_api_trainers import TRAINERS

        given = dict(
            zip(
                config_io.STACK_SWITCHES,
                (enable_rl_module_and_learner, enable_env_runner_and_connector_v2),
                strict=True,
            )
        )
        for name, value in given.items():
            if value is not None and not isinstance(value, bool):
                raise ConfigError(f"api_stack({name}={value!r}): expected True or False")
        if any(v is False for v in given.values()) and self.algo_name not in TRAINERS:
            raise ConfigError(
                f"api_stack({', '.join(f'{k}=False' for k, v in given.items() if v is False)}): "
                f"RLlib's old API stack is RLlib 1.x's trainers here ({', '.join(TRAINERS)}); "
                f"{self.algo_name} has none: use the new stack (drop the call)"
            )
        for name, value in given.items():
            if value is not None:
                setattr(self, f"_{name}", value)  # a frozen config refuses, as for any setting
        return self

    @property
    def enable_rl_module_and_learner(self) -> bool:
        """RLlib's switch: False where ``api_stack()`` turned it off (the old stack)."""
        return bool(self.__dict__.get("_enable_rl_module_and_learner", True))

    @property
    def enable_env_runner_and_connector_v2(self) -> bool:
        """RLlib's switch: False where ``api_stack()`` turned it off (the old stack)."""
        return bool(self.__dict__.get("_enable_env_runner_and_connector_v2", True))

    @property
    def is_old_api_stack(self) -> bool:
        """Whether ``api_stack()`` asked for RLlib's old stack (either switch False):
        ``build_algo()`` builds RLlib 1.x's trainer (``rljax.agents``) then."""
        return not (self.enable_rl_module_and_learner and self.enable_env_runner_and_connector_v2)

    @property
    def model(self) -> dict[str, Any]:
        """RLlib's old-stack ``model`` dict as ``.training(model={...})`` gave it (a copy; empty
        if none was given). It configures the networks on the old stack only
        (``api_stack()``); on the new one ``rl_module(model_config=...)`` does."""
        return dict(self.__dict__.get("_old_model", {}))

    def _take_old_model(self, where: str, model: Any) -> None:
        """Keeps RLlib's old ``model`` dict (merged over one given before, as RLlib's
        ``config.model.update``): checked as RLlib's new stack checks it unless the old stack
        is on, where custom models are the point of it."""
        if not self.is_old_api_stack:
            check_old_model_dict(where, model)
        elif not isinstance(model, Mapping):
            raise ConfigError(f"{where}: model={model!r}: use a dict (RLlib's old model settings)")
        for key, value in model.items():
            if isinstance(value, dict) and set(value) == {"import"}:  # to_dict()'s reference
                raise ConfigError(
                    f"{where}: model[{key!r}]={value!r} names code by its import path; load "
                    f"the dict with {type(self).__name__}.from_dict(d, module_class=<the class>) "
                    "or from_dict(d, allow_imports=[<its module>]), or give the class itself"
                )
        self._old_model = {**self.model, **dict(model)}

    def resources(self: _C, **kwargs: Any) -> _C:
        """RLlib 2.60's ``.resources()``: old-stack ``num_gpus`` maps to
        ``num_gpus_per_learner``; the names it moved to ``.env_runners()`` and ``.learners()``
        (``num_cpus_per_worker``, ``num_learner_workers``, ...) are set there, with a one-time
        warning, as RLlib does; its Ray settings (``num_cpus_for_main_process``, ...) are
        checked as the other setters check RLlib's settings."""
        own = {k: v for k, v in kwargs.items() if k not in _MOVED_FROM_RESOURCES}
        own.pop("num_gpus", None)
        for name, value in own.items():  # all checked before anything is set
            if not check_rllib_only(".resources()", name, value):
                raise ConfigError(
                    f".resources() got an unknown keyword {name!r}; RLlib 2.60's are num_gpus, "
                    "num_cpus_for_main_process, placement_strategy, "
                    "custom_resources_for_main_process, _fake_gpus and the names moved to "
                    f"env_runners() and learners(): {', '.join(_MOVED_FROM_RESOURCES)}"
                )
        moved: dict[str, dict[str, Any]] = {}
        for old, (section, new) in _MOVED_FROM_RESOURCES.items():
            if old in kwargs:
                warn_once(
                    old,
                    ".resources(%s) is deprecated (as in RLlib); use .%s(%s)",
                    old,
                    section,
                    new,
                )
                moved.setdefault(section, {})[new] = kwargs[old]
        if "num_gpus" in kwargs:
            moved.setdefault("learners", {})["num_gpus_per_learner"] = kwargs["num_gpus"]
        trial = self.copy(copy_frozen=False)  # a bad value raises before this config changes
        for section, values in moved.items():
            getattr(trial, section)(**values)
        for section, values in moved.items():
            getattr(self, section)(**values)
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
        return config_memory.memory_terms(self, observation_space, action_space)

    def inference_memory_terms(
        self, observation_space: Any, action_space: Any
    ) -> list[tuple[str, int]]:
        """``memory_terms`` of a policy loaded for inference: its networks and their learner
        state, which such a load builds (no env, batch or replay buffer)."""
        return [self._networks_term(observation_space, action_space)]

    def _networks_term(self, observation_space: Any, action_space: Any) -> tuple[str, int]:
        """The networks' parameters with their gradients, optimizer moments and copies."""
        return config_memory.networks_term(self, observation_space, action_space)

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
        unshared), then a policy and a value head of ``head_fcnet_hiddens`` (when empty 512
        units, 128 below 36x36) on its output.
        """
        return config_memory.default_network_params(self, observation_space, action_space)

    # ------------------------------------------------------------------ search spaces
    def search_space(self) -> dict[str, Any]:
        """The settings set to a search space (``.training(lr=tune.grid_search([...]))``), or
        whose dict holds some (``env_config={"size": tune.grid_search([3, 6])}``: the whole
        dict), by name, in the order of the settings.

        ``tune.generate_variants(config.search_space(), num_samples, seed)`` gives one dict per
        trial; ``config.copy().update_from_dict(variant)`` is that trial's config.
        """
        out: dict[str, Any] = {}
        for key in self._all_keys():
            value = getattr(self, key)
            if isinstance(value, Domain):
                out[key] = value
            elif isinstance(value, dict) and find_search_spaces(value):
                # A dict setting holding search spaces (env_config={"size": grid_search(...)}):
                # the whole dict, which a variant gives back resolved, as Tune's dict spaces.
                out[key] = value
        return out

    def _refuse_search_spaces(self) -> None:
        """Raises ``ConfigError`` when a setting is, or holds, a search space: such a config
        stands for several trials, and only one of them can be validated or built."""
        config_validation.refuse_search_spaces(self)

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
        config_dict = dict(config_dict)
        # ``to_dict()``'s "algo" entry (RLlib's dict round-trips through update_from_dict):
        # this algorithm's name is no setting; another's is refused.
        if "algo" in config_dict and "algo" not in keys:
            algo = config_dict.pop("algo")
            if algo != self.algo_name:
                raise ConfigError(
                    f"update_from_dict(): this dict is a {str(algo)[:40]!r} config, not "
                    f"{self.algo_name}"
                )
        config_dict = deprecated_names("update_from_dict()", config_dict, keys)
        config_dict = translate_special_keys(config_dict, self)  # "lambda", "num_workers", ...
        switches = {k: config_dict.pop(k) for k in config_io.STACK_SWITCHES if k in config_dict}
        if switches:  # RLlib's API-stack switches (to_dict() of an old-stack config has them)
            self.api_stack(**switches)
        if "model" in config_dict and "model" not in keys:  # RLlib's old-stack model dict
            self._take_old_model("update_from_dict()", config_dict.pop("model"))
        # RLlib's .resources() keywords (local_gpu_idx is .learners()'s own now), set once the
        # rest is checked.
        resources = {
            k: config_dict.pop(k)
            for k in ("num_gpus", *_MOVED_FROM_RESOURCES)
            if k != "local_gpu_idx" and k in config_dict and k not in keys
        }
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
            hints = [(k, unknown_key_hint(k, keys) if isinstance(k, str) else "") for k in unknown]
            if len(hints) == 1:
                shown = f"key {hints[0][0]!r}{hints[0][1]}"
            else:  # each one's hint in brackets
                shown = "keys " + ", ".join(
                    f"{k!r} ({h.removeprefix('; ')})" if h else repr(k) for k, h in hints
                )
            raise ConfigError(
                f"update_from_dict() got unknown {shown}; a key must be a setting of "
                f"{type(self).__name__}{old_api_hint(self.algo_name, unknown)}"
            )
        if resources:
            self.resources(**resources)
        for key, value in config_dict.items():
            setattr(self, key, self._store(key, value))
        return self

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Checks every value and combination; raises ``ConfigError`` naming what to change.

        A config holding search spaces is refused, naming them (``search_space()``).
        """
        config_validation.validate(self)

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
        config_validation.check_settings(self)

    def _validate_multi_agent(self) -> None:
        """The multi-agent settings, alone and together (``config_validation``)."""
        config_validation.validate_multi_agent(self)

    def _check_batch_division(self) -> None:
        """The sampled batch is split across learners (on-policy); off-policy overrides this."""
        config_validation.check_batch_division(self)

    # ------------------------------------------------------------------ build / copy / serialize
    def copy(self: _C, copy_frozen: bool | None = False) -> _C:
        """A deep copy; ``copy_frozen``: True freezes it, None keeps this config's state,
        False (the default here) leaves it unfrozen (``freeze()``)."""
        config = copy.deepcopy(self)
        frozen = self.__dict__.get("_is_frozen", False) if copy_frozen is None else copy_frozen
        config.__dict__.pop("_is_frozen", None)
        if frozen:
            config.freeze()
        return config

    def build_algo(self) -> Any:
        """Validates and builds the algorithm (RLlib's ``build_algo``); a frozen config is
        validated as a copy, which it cannot be changed into."""
        source = self.copy() if self.__dict__.get("_is_frozen", False) else self
        if self.is_old_api_stack:  # RLlib 1.x's trainer serves the old stack
            from rljax.utils.old_api_trainers import load_trainer

            return load_trainer(self.algo_name)(config=source.copy())
        return source.checked_algo_class()(source.copy())

    def build(self, env: Any = None, logger_creator: Any = None, use_copy: bool = True) -> Any:
        """RLlib's deprecated name of ``build_algo()``; ``env`` sets the env first (as RLlib's
        ``build(env=...)``). ``logger_creator`` and ``use_copy`` are accepted and unused (rljax
        always builds from a copy)."""
        warn_once("build", "config.build() is deprecated (as in RLlib); use build_algo()")
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
        if self.is_multi_agent:
            return multi_agent_trainer(self.algo_class, self.algo_name)
        return self.algo_class

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict; classes and creators are stored by import path."""
        return config_io.config_to_dict(self)

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
        learner_class: Any = None,
    ) -> AlgorithmConfig:
        """Builds a config from ``to_dict()`` output or a flat dict of config keys (RLlib names).
        ``AlgorithmConfig.from_dict`` of a dict naming its algorithm (``"algo": "PPO"``, as
        ``to_dict()`` writes) builds that algorithm's config.

        A dict may come from a file anyone wrote, so code it names (``{"import":
        "module:Name"}`` for ``env``, ``policy_mapping_fn`` and ``rl_module_spec``'s
        ``module_class``) is never imported unless the caller opts in: ``env`` /
        ``policy_mapping_fn`` / ``module_class`` objects passed here replace what the dict
        names; objects registered in this process (``rljax.register_env``,
        ``register_module_class``, ``register_policy_mapping_fn``) resolve by name or import
        path; ``allow_imports`` lists module prefixes that may be imported. rljax's own example
        envs and mapping functions need no opt-in. Anything else raises ``ConfigError`` naming
        the field and the import path. A ``learner_class`` is trusted the same way (passed
        here, or its module allowed).
        """
        policy = LoadPolicy.make(
            allow_imports,
            env=env,
            policy_mapping_fn=policy_mapping_fn,
            module_class=module_class,
            callbacks=callbacks,
            learner_class=learner_class,
        )
        return cls._from_dict(d, policy)

    @classmethod
    def _from_dict(cls, d: Any, policy: LoadPolicy) -> AlgorithmConfig:
        return config_io.config_from_dict(cls, d, policy)

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


# Names that lived here before the config was split by job, kept importable from this module.


class DifferentiableAlgorithmConfig(TorchClass):
    """RLlib's config of meta-learning algorithms (differentiable learners, PyTorch): making
    one raises ``TorchClassError``, which says that rljax has no such API."""

    rllib_path = "ray.rllib.algorithms.algorithm_config.DifferentiableAlgorithmConfig"
    instead = MAML_INSTEAD


__all__ = [
    "DEPRECATED",
    "EVALUATION_KEYS",
    "MAX_CONFIG_FILE_BYTES",
    "MAX_EVALUATION_DURATION",
    "MAX_EVALUATION_EPISODES",
    "MAX_ROLLOUT_FRAGMENT_LENGTH",
    "RENAMED",
    "SPACE_MARK",
    "UNSET",
    "AlgorithmConfig",
    "DifferentiableAlgorithmConfig",
    "check_loaded_env_settings",
    "read_config_file",
]
