"""``PolicySpec``: one policy's entry in ``.multi_agent(policies={...})``."""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym

from rljax.utils.checks import StrKeyDict, refuse
from rljax.utils.errors import ConfigError


@dataclasses.dataclass
class PolicySpec:
    """A policy's spaces and its per-policy settings, as RLlib's ``PolicySpec``.

    Attributes:
      policy_class: Accepted for compatibility; must be None (the algorithm builds the policy).
      observation_space: None (the env's), or the space, which must equal the env agents'.
      action_space: None (the env's), or the space, which must equal the env agents'.
      config: Per-policy overrides of training settings, e.g. ``{"lr": 1e-4}``, and of the
        model (``"model_config"``, or the old name ``"model"``: a dict merged over the
        config's model settings).
    """

    policy_class: Any = None
    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None
    config: dict[str, Any] | None = None

    @classmethod
    def from_any(cls, policy_id: str, value: Any) -> PolicySpec:
        """A spec from None, a ``PolicySpec``, a 4-tuple ``(cls, obs_space, act_space, config)``
        or a dict of overrides."""
        if value is None:
            return cls()
        if isinstance(value, PolicySpec):
            spec = dataclasses.replace(value)
        elif isinstance(value, (tuple, list)) and len(value) == 4:  # a list: from YAML / JSON
            spec = cls(*value)
        elif isinstance(value, dict):
            spec = cls(config=value)
        else:
            raise ConfigError(
                f"policies[{policy_id!r}]={value!r}; use None, a PolicySpec, a tuple "
                "(None, observation_space, action_space, config_dict) or a dict of overrides"
            )
        if spec.policy_class is not None:
            raise ConfigError(
                f"policies[{policy_id!r}] names policy_class={spec.policy_class!r}; rljax builds "
                "each policy from the algorithm, so leave it None (a custom network goes in "
                ".rl_module(rl_module_spec=RLModuleSpec(module_class=...)))"
            )
        name = f"policies[{policy_id!r}]"
        for field in ("observation_space", "action_space"):
            value = getattr(spec, field)
            if value is not None and not isinstance(value, gym.Space):
                refuse(f"{name}.{field}", value, "None (the env's) or a gymnasium space")
        # The config's keys are setting names; the model settings are a dict merged over the
        # config's (checked field by field when the policy's config is validated).
        config = StrKeyDict(optional=True)(f"{name}.config", spec.config) or {}
        for key in ("model", "model_config"):
            if key in config:
                StrKeyDict(optional=True)(f"{name}.config[{key!r}]", config[key])
        if "model" in config:
            config["model_config"] = {
                **(config.pop("model") or {}),
                **(config.get("model_config") or {}),
            }
        spec.config = config
        return spec

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the spaces are the env's, so they are not stored)."""
        return {"config": dict(self.config or {})}


# RLlib 1.x's Policy (what trainer.get_policy() returns), at RLlib's import path.
from rljax.policy.old_api import Policy  # noqa: E402

__all__ = ["Policy", "PolicySpec"]
