"""The checks of ``AlgorithmConfig``'s own settings that are more than a bound or a choice
(``rljax.utils.checks`` holds those): each is ``check(name, value) -> value in normal form``,
raising ``ConfigError`` with what was given and what is allowed, and is named by a ``Setting``
declaration in ``rljax.algorithms.algorithm_config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.env.spaces import space_from_data
from rljax.env.vector import normalize_vectorize_mode
from rljax.policy.policy import PolicySpec
from rljax.utils.checks import Bool, Int, StrKeyDict, describe, refuse
from rljax.utils.errors import ConfigError

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

# How env_config (and a file) holds a gymnasium space: {"__gym_space__": its data}.
SPACE_MARK = "__gym_space__"


def check_env_config(name: str, value: Any) -> dict[str, Any]:
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


def check_space(name: str, value: Any) -> Any:
    """``observation_space`` / ``action_space``: None, a gymnasium space, or ``to_dict()``'s
    description of one (``{SPACE_MARK: data}``, read with the bounds of a file's data)."""
    import gymnasium as gym

    if value is None or isinstance(value, gym.Space):
        return value
    if isinstance(value, dict) and set(value) == {SPACE_MARK}:
        return space_from_data(value[SPACE_MARK], name)
    refuse(name, value, "None or a gymnasium space (the spaces of an env-less offline config)")


def check_key_name(name: str, value: Any) -> str:
    """A non-empty string: the key of a Dict observation."""
    if not isinstance(value, str) or not value:
        refuse(name, value, "a non-empty string (a key of the Dict observation)")
    return value


def check_learner_class(name: str, value: Any) -> Any:
    """None, or a subclass of rljax's JAX ``PPOLearner`` (``rljax.algorithms.ppo.ppo_learner``),
    whose ``compute_loss_for_module`` gives the update's loss."""
    if value is None:
        return None
    # Here, not at the top: the PPO package imports this module (through its config).
    from rljax.algorithms.ppo.ppo_learner import is_learner_class

    if not is_learner_class(value):
        shown = value.__name__ if isinstance(value, type) else type(value).__name__
        raise ConfigError(
            f"{name}={shown}: a learner class must subclass rljax's JAX PPOLearner "
            "(rljax.algorithms.ppo.ppo_learner.PPOLearner) and override "
            "compute_loss_for_module; or None for the algorithm's own loss"
        )
    return value


def check_learner_config_dict(name: str, value: Any) -> dict[str, Any]:
    """A dict of settings a learner class reads (``config.learner_config_dict[...]``): string
    keys and JSON data (numbers, strings, bools, None, lists and dicts of them), so a saved
    config holds it as data."""
    if value is None:
        return {}
    out = StrKeyDict()(name, value) or {}

    def check(path: str, v: Any) -> None:
        if v is None or isinstance(v, bool | int | float | str):
            return
        if isinstance(v, list | tuple):
            for i, item in enumerate(v):
                check(f"{path}[{i}]", item)
            return
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            for k, item in v.items():
                check(f"{path}[{k!r}]", item)
            return
        raise ConfigError(
            f"{path} is a {type(v).__name__}; {name} holds data a config file can hold "
            "(numbers, strings, bools, None, lists, dicts with string keys)"
        )

    for key, v in out.items():
        check(f"{name}[{key!r}]", v)
    return out


def check_model_config(name: str, value: Any) -> DefaultModelConfig:
    return DefaultModelConfig.from_any(value)  # its fields check themselves


EVALUATION_KEYS = (
    "explore",
    "env",
    "env_config",
    "num_envs_per_env_runner",
    "metrics_num_episodes_for_smoothing",
)


def check_evaluation_config(name: str, value: Any) -> dict[str, Any] | None:
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
        out["env_config"] = check_env_config(f"{name}['env_config']", out["env_config"])
    if "metrics_num_episodes_for_smoothing" in out:
        key = "metrics_num_episodes_for_smoothing"
        out[key] = Int(1)(f"{name}[{key!r}]", out[key])
    if "num_envs_per_env_runner" in out:
        out["num_envs_per_env_runner"] = Int(1)(
            f"{name}['num_envs_per_env_runner']", out["num_envs_per_env_runner"]
        )
    return out


def check_vectorize_mode(name: str, value: Any) -> str:
    return normalize_vectorize_mode(value)


def check_rl_module_spec(name: str, value: Any) -> RLModuleSpec | MultiRLModuleSpec | None:
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


def check_policies(name: str, value: Any) -> dict[str, PolicySpec] | None:
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


def check_policies_to_train(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if (
        isinstance(value, str)
        or not isinstance(value, (list, tuple, set))
        or not all(isinstance(p, str) for p in value)
    ):
        refuse(name, value, "None or a list of policy ids (strings)")
    return list(value)


def check_overrides_per_module(name: str, value: Any) -> dict[str, dict[str, Any]]:
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


__all__ = [
    "EVALUATION_KEYS",
    "MAX_EVALUATION_DURATION",
    "MAX_EVALUATION_EPISODES",
    "MAX_ROLLOUT_FRAGMENT_LENGTH",
    "SPACE_MARK",
    "check_space",
    "check_env_config",
    "check_evaluation_config",
    "check_model_config",
    "check_overrides_per_module",
    "check_policies",
    "check_policies_to_train",
    "check_rl_module_spec",
    "check_vectorize_mode",
]
