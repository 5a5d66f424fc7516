"""The parts of RLlib's ``AlgorithmConfig`` that scripts reach for beside the setters: the dict
interface (``config["lr"]``, ``config.get(...)``, ``items()``), ``freeze()``,
``get_state()`` / ``from_state()``, ``serialize()``, ``is_atari``, ``is_online`` /
``is_offline``, ``get_evaluation_config_object()``, ``get_config_for_module()``, the setters
``checkpointing()`` and ``python_environment()``, the older setters ``rollouts()`` and
``exploration()`` (translated, with a warning), and RLlib's error for its removed attribute
names (``config.num_rollout_workers``).

``AlgorithmConfig`` inherits them (``ConfigCompat``); nothing here knows an algorithm.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from collections.abc import ItemsView, KeysView, ValuesView
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from rljax.algorithms.config_names import RENAMED, unknown_key_hint, warn_once
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.utils.errors import ConfigError
from rljax.utils.ids import DEFAULT_MODULE_ID

_C = TypeVar("_C", bound="ConfigCompat")

# RLlib's special keys of the dict interface (``AlgorithmConfig._translate_special_keys``).
SPECIAL_KEYS = {
    "callbacks": "callbacks_class",
    "create_env_on_driver": "create_env_on_local_worker",
    "custom_eval_function": "custom_evaluation_function",
    "framework": "framework_str",
    "input": "input_",
    "lambda": "lambda_",
    "num_cpus_for_driver": "num_cpus_for_main_process",
    "num_workers": "num_env_runners",
}


def translate_special_keys(values: dict[str, Any], config: Any) -> dict[str, Any]:
    """``values`` with RLlib's special dict keys (``SPECIAL_KEYS``: ``"lambda"``,
    ``"input"``, ``"num_workers"``, ``"callbacks"``, ...) under the settings of ``config``
    they name, as RLlib's ``update_from_dict`` reads them; a key that is itself a setting
    stays. ``"framework"`` goes to ``config.framework()`` (JAX always; it says so once)."""
    keys = config._all_keys()
    out = {
        (SPECIAL_KEYS.get(k, k) if isinstance(k, str) and k not in keys else k): v
        for k, v in values.items()
    }
    if "framework_str" in out and "framework_str" not in keys:
        config.framework(out.pop("framework_str"))
    return out


# Attributes RLlib 2.60 removed (reading one raises there too) and what to read instead.
REMOVED_ATTRIBUTES = {
    "num_rollout_workers": "num_env_runners",
    "num_envs_per_worker": "num_envs_per_env_runner",
    "num_cpus_per_worker": "num_cpus_per_env_runner",
    "num_gpus_per_worker": "num_gpus_per_env_runner",
    "ignore_worker_failures": "ignore_env_runner_failures",
    "recreate_failed_workers": "restart_failed_env_runners",
    "recreate_failed_env_runners": "restart_failed_env_runners",
    "evaluation_num_workers": "evaluation_num_env_runners",
    "num_learner_workers": "num_learners",
    "num_gpus_per_learner_worker": "num_gpus_per_learner",
    "num_cpus_per_learner_worker": "num_cpus_per_learner",
    "uses_new_env_runners": "enable_env_runner_and_connector_v2",
    "max_num_worker_restarts": "max_num_env_runner_restarts",
    "delay_between_worker_restarts_s": "delay_between_env_runner_restarts_s",
    "worker_health_probe_timeout_s": "env_runner_health_probe_timeout_s",
    "worker_restore_timeout_s": "env_runner_restore_timeout_s",
    "num_consecutive_worker_failures_tolerance": "num_consecutive_env_runner_failures_tolerance",
}

# ``.rollouts()``'s old keywords, as ``.env_runners()`` names them (``config_names.RENAMED``).
_ROLLOUTS_RENAMED = {k: RENAMED[k] for k in ("num_rollout_workers", "num_envs_per_worker")}


def _agent_spaces_by_policy(config: Any, env: Any) -> dict[str, tuple[Any, Any]]:
    """Per policy, the spaces of the first of ``env``'s agents that the config's
    ``policy_mapping_fn`` maps to it (an agent it cannot map without an episode is skipped);
    a single-agent env's spaces for every policy."""
    from rljax.env.multi_agent_vector import mapping_caller

    agents = list(getattr(env, "possible_agents", None) or [])
    if not agents or not hasattr(env, "get_observation_space"):
        pair = (
            getattr(env, "single_observation_space", None) or env.observation_space,
            getattr(env, "single_action_space", None) or env.action_space,
        )
        return {pid: pair for pid in config.policies}
    mapping = mapping_caller(config.policy_mapping_fn)
    found: dict[str, tuple[Any, Any]] = {}
    for agent in agents:
        try:
            pid = mapping(agent, None, worker_index=0)
        except Exception:  # an episode-dependent mapping: the policies' specs must say
            continue
        found.setdefault(pid, (env.get_observation_space(agent), env.get_action_space(agent)))
    return found


class RemovedAttributeError(ConfigError, AttributeError):
    """An attribute RLlib removed from its configs (RLlib raises for it too), naming the one
    to use. An ``AttributeError`` as well, so ``hasattr`` and ``getattr(..., default)`` treat
    the name as absent."""


class ConfigCompat:
    """RLlib's ``AlgorithmConfig`` methods beside the setters (the module docstring)."""

    # Every setting by name (``AlgorithmConfig`` derives it from the declarations).
    SETTINGS: ClassVar[dict[str, Any]]

    # ------------------------------------------------------------------ removed names
    if not TYPE_CHECKING:  # hidden from mypy, which would otherwise type every attribute Any

        def __getattr__(self, name: str) -> Any:
            # Called only for names not found: settings and methods never come here.
            new = REMOVED_ATTRIBUTES.get(name)
            if new is not None:
                raise RemovedAttributeError(
                    f"config.{name} was removed from RLlib's configs (RLlib 2.60 raises for it "
                    f"too); read config.{new}"
                )
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ------------------------------------------------------------------ the dict interface
    def _setting_name(self, key: Any) -> str:
        """``key`` as the setting it names (RLlib's special keys translated)."""
        if not isinstance(key, str):
            raise KeyError(key)
        return SPECIAL_KEYS.get(key, key)

    def __getitem__(self, key: str) -> Any:
        """``config["lr"]``: the setting ``key`` names (RLlib's old special keys, such as
        ``"lambda"`` or ``"num_workers"``, translated).

        Raises:
          KeyError: no such setting.
        """
        name = self._setting_name(key)
        if name not in self._settings_table():
            raise KeyError(
                f"{key!r}: no such setting{unknown_key_hint(key, self._settings_table())}"
            )
        return getattr(self, name)

    def __setitem__(self, key: str, value: Any) -> None:
        """``config["lr"] = 1e-3``: sets the setting ``key`` names (unchecked until
        ``validate()``, as an attribute set is).

        Raises:
          ConfigError: no such setting, or ``"multiagent"`` (``.multi_agent(...)`` sets it).
        """
        if key == "multiagent":
            raise ConfigError(
                "config['multiagent'] cannot be set; use config.multi_agent(policies=..., "
                "policy_mapping_fn=..., policies_to_train=...)"
            )
        name = self._setting_name(key)
        if name not in self._settings_table():
            raise ConfigError(
                f"config[{key!r}] = ...: no such setting{unknown_key_hint(key, self._settings_table())}"
            )
        setattr(self, name, value)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._setting_name(key) in self._settings_table()

    def get(self, key: str, default: Any = None) -> Any:
        """The setting ``key`` names, or ``default`` when there is none (RLlib's dict shim)."""
        return getattr(self, self._setting_name(key)) if key in self else default

    def pop(self, key: str, default: Any = None) -> Any:
        """``get(key, default)``: as RLlib's, it removes nothing."""
        return self.get(key, default)

    def keys(self) -> KeysView[str]:
        return cast(Any, self).to_dict().keys()

    def items(self) -> ItemsView[str, Any]:
        return cast(Any, self).to_dict().items()

    def values(self) -> ValuesView[Any]:
        return cast(Any, self).to_dict().values()

    def _settings_table(self) -> dict[str, Any]:
        return type(self).SETTINGS

    # ------------------------------------------------------------------ freezing, state
    def freeze(self) -> None:
        """Makes this config read-only (RLlib's ``freeze``): setting an attribute afterwards
        raises ``AttributeError``; ``copy()`` gives a config that is not frozen."""
        object.__setattr__(self, "_is_frozen", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_is_frozen", False):
            raise AttributeError(
                f"Cannot set attribute ({name}) of an already frozen AlgorithmConfig!"
            )
        object.__setattr__(self, name, value)

    def get_state(self) -> dict[str, Any]:
        """The config's attributes and its class (RLlib's ``get_state``), for ``from_state``
        in this process; ``to_dict()`` is the form for files."""
        state = {k: v for k, v in self.__dict__.items() if k != "_is_frozen"}
        state["class"] = type(self)
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Any:
        """The config ``get_state()`` described (of ``state["class"]``).

        Raises:
          ConfigError: ``state`` holds no config class.
        """
        ctor = state.get("class") if isinstance(state, dict) else None
        if not (isinstance(ctor, type) and issubclass(ctor, ConfigCompat)):
            raise ConfigError(
                f"from_state(): the state's 'class' is {ctor!r}; pass what get_state() returned "
                "(for a file, use to_dict() and from_dict())"
            )
        config = ctor()
        for key, value in state.items():
            if key != "class":
                object.__setattr__(config, key, value)
        return config

    def serialize(self) -> dict[str, Any]:
        """A dict of JSON data (RLlib's ``serialize``): ``to_dict()``."""
        return cast(Any, self).to_dict()

    # ------------------------------------------------------------------ what the config is for
    @property
    def is_atari(self) -> bool:
        """Whether the env is one of EnvPool's Atari games (named by id, as RLlib detects)."""
        env = getattr(self, "env", None)
        if not isinstance(env, str):
            return False
        from rljax.env.envpool_settings import is_envpool_atari

        try:
            return is_envpool_atari(env.split(":", 1)[-1].replace("ALE/", ""))
        except Exception:  # not an EnvPool task
            return False

    # RLlib's flag of an evaluation config (``get_evaluation_config_object()`` sets it): what
    # an evaluation env runner's ``config.in_evaluation`` says, False for training.
    in_evaluation: bool = False

    @property
    def is_online(self) -> bool:
        """Whether the algorithm samples its env: no ``offline_data(input_=...)``."""
        return getattr(self, "input_", None) is None

    @property
    def is_offline(self) -> bool:
        """Whether the algorithm learns from ``offline_data(input_=...)`` (BC, MARWIL)."""
        return not self.is_online

    def get_evaluation_config_object(self: _C) -> _C | None:
        """The config evaluation runs with (RLlib's): a copy with ``evaluation_config``'s
        settings applied and ``in_evaluation`` set; None for an evaluation config itself."""
        if getattr(self, "in_evaluation", False):
            return None
        config = cast(Any, self).copy()
        overrides = dict(getattr(self, "evaluation_config", None) or {})
        if overrides:
            config.update_from_dict(overrides)
        object.__setattr__(config, "in_evaluation", True)
        config.evaluation_config = None
        return config

    def get_config_for_module(self: _C, module_id: str) -> _C:
        """The config of policy ``module_id``, its per-module overrides applied (RLlib's)."""
        overrides = cast(Any, self).module_overrides(module_id)
        return cast(Any, self).module_config(module_id) if overrides else self

    @staticmethod
    def DEFAULT_POLICY_MAPPING_FN(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:  # noqa: N802
        """RLlib's default policy mapping: every agent to ``"default_policy"``."""
        return DEFAULT_MODULE_ID

    DEFAULT_AGENT_TO_MODULE_MAPPING_FN = DEFAULT_POLICY_MAPPING_FN

    def get_default_learner_class(self) -> type:
        """The algorithm's learner class (RLlib's). PPO's is ``PPOLearner``, which a
        ``learner_class`` subclasses; DQN's and SAC's are RLlib's PyTorch learners at their
        paths (a subclass of one raises ``TorchClassError`` where used, saying what rljax takes
        instead).

        Raises:
          ConfigError: the algorithm trains with its built-in jitted update and has no
            learner class.
        """
        name = str(getattr(self, "algo_name", type(self).__name__.removesuffix("Config")))
        module = f"rljax.algorithms.{name.lower()}.torch.{name.lower()}_torch_learner"
        try:
            learner: type = getattr(importlib.import_module(module), f"{name}TorchLearner")
        except (ImportError, AttributeError):
            raise ConfigError(
                f"{type(self).__name__}.get_default_learner_class(): rljax's {name} trains with "
                "its built-in jitted update and has no learner class (PPO's learner_class, a "
                "PPOLearner subclass, is the one there is)"
            ) from None
        return learner

    def get_default_rl_module_spec(self) -> Any:
        """The spec of the algorithm's default module (RLlib's): ``RLModuleSpec()`` with no
        module class (the default networks) and this config's ``model_config``; its
        ``build()`` builds this algorithm's networks as this config shapes them."""
        return RLModuleSpec(
            model_config=self._model_config_dict(),
            _algorithm_config=self._config_for_module_build(),
        )

    def get_rl_module_spec(
        self,
        env: Any = None,
        spaces: dict[str, Any] | None = None,
        inference_only: bool | None = None,
    ) -> Any:
        """The module spec the algorithm builds from (RLlib's): ``rl_module_spec`` if set (a
        single-agent one), else ``get_default_rl_module_spec()``; with the spaces of ``env``
        (its single sub-env's) or of ``spaces`` (``{policy_id: (observation_space,
        action_space)}``, the default policy's or the only one) where the spec has none, so
        that ``build()`` builds it."""
        given = getattr(self, "rl_module_spec", None)
        if not isinstance(given, RLModuleSpec):
            spec = self.get_default_rl_module_spec()
        else:  # a copy (changing it leaves the config's); RLlib merges the default networks'
            own = copy.deepcopy(given)
            if own.module_class is None:
                own.model_config = {**self._model_config_dict(), **own.model_config}
            spec = dataclasses.replace(own, _algorithm_config=self._config_for_module_build())
        obs_space = act_space = None
        if env is not None:
            obs_space = getattr(env, "single_observation_space", None) or env.observation_space
            act_space = getattr(env, "single_action_space", None) or env.action_space
        elif spaces:
            pair = spaces.get(DEFAULT_MODULE_ID) or next(iter(spaces.values()))
            obs_space, act_space = pair
        spec.observation_space = spec.observation_space or obs_space
        spec.action_space = spec.action_space or act_space
        if inference_only is not None:
            spec.inference_only = bool(inference_only)
        return spec

    def get_multi_rl_module_spec(
        self,
        *,
        env: Any = None,
        spaces: dict[str, tuple[Any, Any]] | None = None,
        inference_only: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Every policy's module spec as a ``MultiRLModuleSpec`` (RLlib's): the policies of
        ``multi_agent()`` (``default_policy`` alone for a single-agent config), each as
        ``get_rl_module_spec`` gives it with the policy's own settings (its entry in a
        ``MultiRLModuleSpec`` of ``rl_module_spec``, its ``PolicySpec`` config and per-module
        overrides). Spaces, where the policy's spec gives none: its ``PolicySpec``'s, else
        ``spaces[policy_id]``, else those of ``env``'s agents that ``policy_mapping_fn`` maps
        to it (asked once per agent, with no episode; a single-agent env: its spaces).
        ``build()`` then builds the modules with fresh weights.

        Raises:
          TypeError: an unknown keyword (RLlib's ``policy_dict`` and
            ``single_agent_rl_module_spec`` are taken and unused).
        """
        from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec

        unknown = sorted(set(kwargs) - {"policy_dict", "single_agent_rl_module_spec"})
        if unknown:
            raise TypeError(f"get_multi_rl_module_spec() got unexpected keywords {unknown}")
        config: Any = self
        if not config.is_multi_agent:
            spec = self.get_rl_module_spec(env=env, spaces=spaces, inference_only=inference_only)
            return MultiRLModuleSpec(rl_module_specs={DEFAULT_MODULE_ID: spec})
        found = _agent_spaces_by_policy(config, env) if env is not None else {}
        specs = {}
        for pid, policy in config.policies.items():
            pair = (spaces or {}).get(pid) or found.get(pid) or (None, None)
            if policy is not None:
                pair = (policy.observation_space or pair[0], policy.action_space or pair[1])
            specs[pid] = config.module_config(pid).get_rl_module_spec(
                spaces={pid: pair}, inference_only=inference_only
            )
        return MultiRLModuleSpec(rl_module_specs=specs)

    def _model_config_dict(self) -> dict[str, Any]:
        """This config's ``model_config`` as a dict (empty where it has none)."""
        to_dict = getattr(getattr(self, "model_config", None), "to_dict", None)
        return to_dict() if callable(to_dict) else {}

    def _config_for_module_build(self) -> Any:
        """A copy of this config for ``RLModuleSpec.build()``: its settings shape the
        networks; no runners, learners beyond one, GPUs or callbacks (building a module runs
        none of the user's code)."""
        config: Any = cast(Any, self).copy()
        for key in config._SECTIONS.get("callbacks", ()):
            setattr(config, key, config.SETTINGS[key].default)
        config.num_env_runners = 0
        config.num_learners = 0
        config.num_gpus_per_learner = 0
        config.num_gpus_per_env_runner = 0
        config.rl_module_spec = None
        config.policies = None  # one module: a multi-agent config's default one
        config.policies_to_train = None
        config.algorithm_config_overrides_per_module = {}
        return config

    # ------------------------------------------------------------------ setters
    def checkpointing(
        self: _C,
        export_native_model_files: bool | None = None,
        checkpoint_trainable_policies_only: bool | None = None,
    ) -> _C:
        """RLlib's checkpoint options, accepted: an rljax checkpoint always holds every
        policy's parameters as arrays (no pickle); ``Algorithm.export_policy`` writes a
        policy as a StableHLO program. The values are kept as attributes."""
        if export_native_model_files is not None:
            warn_once(
                "export_native_model_files",
                "checkpointing(export_native_model_files=...): rljax checkpoints hold the "
                "parameters as arrays; export a policy with algo.export_policy(dir)",
            )
            object.__setattr__(self, "export_native_model_files", export_native_model_files)
        if checkpoint_trainable_policies_only is not None:
            object.__setattr__(
                self, "checkpoint_trainable_policies_only", checkpoint_trainable_policies_only
            )
        return self

    def python_environment(
        self: _C,
        *,
        extra_python_environs_for_driver: dict[str, str] | None = None,
        extra_python_environs_for_worker: dict[str, str] | None = None,
    ) -> _C:
        """RLlib's environment variables for its processes, accepted and kept: rljax's runners
        are threads of this process, whose environment is already set; set such variables
        before starting Python (``OMP_NUM_THREADS=...``)."""
        for name, given in (
            ("extra_python_environs_for_driver", extra_python_environs_for_driver),
            ("extra_python_environs_for_worker", extra_python_environs_for_worker),
        ):
            if given is None:
                continue
            if not isinstance(given, dict):
                raise ConfigError(f"python_environment({name}={given!r}): use a dict of str")
            warn_once(
                name,
                f"python_environment({name}=...): rljax runs in this process; set the "
                "variables before starting Python",
            )
            object.__setattr__(self, name, dict(given))
        return self

    def rollouts(self: _C, **kwargs: Any) -> _C:
        """RLlib's older name of ``env_runners()`` (RLlib 2.60 raises for it): its keywords
        (``num_rollout_workers``, ``num_envs_per_worker`` under their new names) go to
        ``env_runners()``, with a warning."""
        warn_once("rollouts", "config.rollouts() is RLlib's old name; use env_runners()")
        renamed = {_ROLLOUTS_RENAMED.get(k, k): v for k, v in kwargs.items()}
        return cast(Any, self).env_runners(**renamed)

    def exploration(self: _C, explore: bool | None = None, exploration_config: Any = None) -> _C:
        """RLlib's older exploration setter (RLlib 2.60 raises for it): ``explore`` goes to
        ``env_runners(explore=...)``, with a warning; ``exploration_config`` is refused, naming
        the setting that does its job."""
        if exploration_config is not None:
            raise ConfigError(
                f"exploration(exploration_config=...): RLlib's old exploration objects are "
                f"gone; use {RENAMED['exploration_config']}"
            )
        warn_once(
            "exploration",
            "config.exploration() is RLlib's old setter; use env_runners(explore=...)",
        )
        if explore is not None:
            return cast(Any, self).env_runners(explore=explore)
        return self


__all__ = [
    "REMOVED_ATTRIBUTES",
    "SPECIAL_KEYS",
    "ConfigCompat",
    "RemovedAttributeError",
    "translate_special_keys",
]
