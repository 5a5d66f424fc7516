"""A config as data and back: ``to_dict`` / ``from_dict`` of ``AlgorithmConfig``, the checks of
env settings read from a file, and config files (``read_config_file``).

A dict may come from a file anyone wrote: code it names is resolved only as the caller's
``LoadPolicy`` allows (``rljax.utils.references``), and its env settings are checked
(``check_loaded_env_settings``) whatever builds the env. ``rljax.algorithms.algorithm_config``
re-exports ``check_loaded_env_settings``, ``read_config_file`` and ``MAX_CONFIG_FILE_BYTES``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from rljax.algorithms.config_checks import SPACE_MARK
from rljax.algorithms.config_compat import translate_special_keys
from rljax.algorithms.config_names import unknown_key_hint
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.env.spaces import space_to_data
from rljax.policy.policy import PolicySpec
from rljax.utils import safe_io
from rljax.utils.checks import describe
from rljax.utils.errors import ConfigError
from rljax.utils.references import LoadPolicy, qualified_name, resolve
from rljax.utils.search_space import Domain, as_domain

logger = logging.getLogger("rljax")

# Config files are small (the tuned examples are under 2 KB): a cap well above any real one
# that keeps PyYAML's pure-Python parse of the worst such file near a second.
MAX_CONFIG_FILE_BYTES = 64 << 10

# What a gymnasium env's constructor may be told by a file: rendering only off-screen, and no
# paths (gymnasium's MuJoCo envs read xml_file; a file must not point an env at other files).
_FILE_RENDER_MODES = (None, "rgb_array", "rgb_array_list", "ansi")


def env_config_data(env_config: dict[str, Any]) -> dict[str, Any]:
    """``env_config`` for JSON: gymnasium spaces as their data."""
    return {
        k: {SPACE_MARK: space_to_data(v)} if isinstance(v, gym.Space) else v
        for k, v in env_config.items()
    }


def module_spec_dict(spec: RLModuleSpec) -> dict[str, Any]:
    """An ``RLModuleSpec`` as data (its class by import path; spaces are the env's)."""
    return {
        "module_class": qualified_name(spec.module_class) if spec.module_class else None,
        "model_config": spec.model_config,
    }


def module_spec_from_dict(name: str, value: Any, policy: LoadPolicy) -> RLModuleSpec:
    """``module_spec_dict``'s inverse; its class loads only as ``policy`` allows."""
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


def config_to_dict(config: Any) -> dict[str, Any]:
    """``config.to_dict()``: a JSON-serializable dict of an ``AlgorithmConfig``'s settings;
    classes and creators are stored by import path, search spaces kept as given."""
    out: dict[str, Any] = {"algo": config.algo_name}
    for key in config._all_keys():
        value = getattr(config, key)
        if isinstance(value, Domain):
            pass  # a search space, kept as given
        elif key == "model_config":
            value = value.to_dict()
        elif key == "env_config" and isinstance(value, dict):
            value = env_config_data(value)
        elif key in ("observation_space", "action_space") and isinstance(value, gym.Space):
            value = {SPACE_MARK: space_to_data(value)}
        elif key == "rl_module_spec" and isinstance(value, MultiRLModuleSpec):
            named = value.rl_module_specs
            value = (
                {"rl_module_specs": {p: module_spec_dict(s) for p, s in named.items()}}
                if isinstance(named, dict)
                else {"every_policy": module_spec_dict(named)}
            )
        elif key == "rl_module_spec" and value is not None:
            value = module_spec_dict(value)
        elif key == "policies" and value is not None:
            value = {p: spec.to_dict() for p, spec in value.items()}
        elif (key in ("env", "policy_mapping_fn") and callable(value)) or (
            key == "learner_class" and inspect.isclass(value)
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
        elif is_callback_key(key) and value is not None:
            value = (
                [callback_reference(c) for c in value]
                if isinstance(value, list | tuple)
                else callback_reference(value)
            )
        out[key] = value
    if config.is_old_api_stack:  # RLlib's switches, and the old model dict that stack reads
        out.update({k: getattr(config, k) for k in STACK_SWITCHES})
        out["model"] = {
            k: {"import": qualified_name(v)} if inspect.isclass(v) else v
            for k, v in config.model.items()
        }
    return out


# RLlib's API-stack switches (``api_stack()``'s keywords; an old-stack config's to_dict()
# holds them, False asks for the old stack).
STACK_SWITCHES = ("enable_rl_module_and_learner", "enable_env_runner_and_connector_v2")


def config_from_dict(cls: Any, d: Any, policy: LoadPolicy) -> Any:
    """``cls.from_dict(d, ...)``: a config of class ``cls`` (an ``AlgorithmConfig`` subclass) from
    ``to_dict()`` output or a flat dict of its settings, code it names resolved only as
    ``policy`` allows."""
    if not isinstance(d, dict):
        raise ConfigError(f"a config must be a dict of settings; got a {type(d).__name__}")
    named = d.get("algo")
    if cls.algo_name == "Algorithm" and isinstance(named, str):
        # AlgorithmConfig.from_dict of an algorithm's dict (to_dict() names it): its config.
        from rljax.algorithms import registry

        if named in registry.algorithm_names():
            cls = registry.config_class(named)
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
    d = translate_special_keys(d, config)  # RLlib's to_dict() writes "lambda" and "input"
    # An old-stack config's to_dict(): RLlib's API-stack switches and its old model dict.
    switches = {k: d.pop(k) for k in STACK_SWITCHES if k in d}
    old_model = d.pop("model", None) if "model" not in keys else None
    for key in d:
        if key not in keys:
            raise ConfigError(f"unknown config key {key[:60]!r}{unknown_key_hint(key[:60], keys)}")
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
    for key in [k for k in d if is_callback_key(k)]:
        d[key] = loaded_callbacks(key, d[key], policy)
    if isinstance(d.get("env_to_module_connector"), list):
        # A user's preprocessor class, saved by import path: imported only where allowed.
        d["env_to_module_connector"] = [
            resolve("env_to_module_connector", {"import": c["import"]}, policy, ConfigError)()
            if isinstance(c, dict) and c.get("type") in ("ObservationPreprocessor", "ConnectorV2")
            else c
            for c in d["env_to_module_connector"]
        ]
    if policy.objects.get("learner_class") is not None:
        d["learner_class"] = policy.objects["learner_class"]
    elif d.get("learner_class") is not None and not inspect.isclass(d["learner_class"]):
        # The loss a run trains with: never left out, never imported without the opt-in.
        d["learner_class"] = resolve("learner_class", d["learner_class"], policy, ConfigError)
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
        elif key == "rl_module_spec" and isinstance(value, dict) and set(value) == {"every_policy"}:
            value = MultiRLModuleSpec(
                rl_module_specs=module_spec_from_dict(
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
                    p: module_spec_from_dict(f"rl_module_specs[{p!r}]", v, policy)
                    for p, v in specs.items()
                }
            )
        elif key == "rl_module_spec" and isinstance(value, dict):
            value = module_spec_from_dict("rl_module_spec", value, policy)
        setattr(config, key, config._coerce(key, value))
    if switches:
        config.api_stack(**switches)
    if old_model is not None:
        if not isinstance(old_model, dict):
            raise ConfigError(f"model={describe(old_model)}: RLlib's old model dict is a dict")
        # A custom model class saved by import path loads only as the caller allows.
        config._take_old_model(
            "from_dict()",
            {
                k: resolve("module_class", v, policy, ConfigError)
                if isinstance(v, dict) and set(v) == {"import"}
                else v
                for k, v in old_model.items()
            },
        )
    return config


def _plain(value: Any) -> bool:
    """Whether ``value`` is kept exactly by a JSON file: a number, string, bool or None, or a
    list of them."""
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, bool | int | float | str)


def callback_reference(value: Any) -> dict[str, Any]:
    """How a config file names a callback: ``{"import": "module:qualname"}``; for a
    ``functools.partial`` of a class, also its arguments where JSON keeps them exactly
    (``"args"``, ``"keywords"``), else ``"arguments_not_saved": True`` (loading leaves such a
    callback out, saying so, unless the caller passes it)."""
    if not isinstance(value, functools.partial):
        return {"import": qualified_name(value)}
    ref: dict[str, Any] = {"import": qualified_name(value.func)}
    if _plain(value.args) and _plain(list(value.keywords.values())):
        ref["args"] = list(value.args)
        ref["keywords"] = dict(value.keywords)
    else:
        ref["arguments_not_saved"] = True
    return ref


def is_callback_key(key: str) -> bool:
    return key in ("callbacks_class", "custom_evaluation_function") or key.startswith(
        "callbacks_on_"
    )


def loaded_callbacks(key: str, value: Any, policy: LoadPolicy) -> Any:
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
        loaded = [_loaded_callback(ref, trusted) for ref in refs]
    except ConfigError as e:
        logger.warning("%s is not loaded: %s", key, e)
        return None
    return loaded if isinstance(value, list) else loaded[0]


def _loaded_callback(ref: Any, trusted: LoadPolicy) -> Any:
    """One saved callback reference (``callback_reference``'s form) as the object."""
    bound = isinstance(ref, dict) and set(ref) - {"import"}
    if not bound:
        return resolve("callbacks", ref, trusted, ConfigError)
    if set(ref) == {"import", "arguments_not_saved"}:
        raise ConfigError(
            f"it was a functools.partial of {ref['import']!r} whose arguments a file cannot "
            "hold; pass the callbacks again (Algorithm.from_checkpoint(path, callbacks=...))"
        )
    args, keywords = ref.get("args", []), ref.get("keywords", {})
    if set(ref) != {"import", "args", "keywords"} or not (
        isinstance(args, list)
        and isinstance(keywords, dict)
        and _plain(args)
        and all(isinstance(k, str) for k in keywords)
        and _plain(list(keywords.values()))
    ):
        raise ConfigError(
            "a bound callback is saved as {'import': ..., 'args': [...], 'keywords': {...}} "
            f"of plain values; got keys {sorted(map(str, ref))[:5]}"
        )
    cls = resolve("callbacks", {"import": ref["import"]}, trusted, ConfigError)
    return functools.partial(cls, *args, **keywords)


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


__all__ = [
    "MAX_CONFIG_FILE_BYTES",
    "check_loaded_env_settings",
    "config_from_dict",
    "config_to_dict",
    "env_config_data",
    "is_callback_key",
    "loaded_callbacks",
    "module_spec_dict",
    "module_spec_from_dict",
    "read_config_file",
]
