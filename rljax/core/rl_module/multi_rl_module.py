"""RLlib's ``MultiRLModuleSpec`` and ``MultiRLModule``: one module per policy of a multi-agent
config.

``.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={pid: RLModuleSpec(...)}))``
gives each policy of ``.multi_agent(policies=...)`` its own module: the default networks with
settings of its own, a Flax module, or an ``RLModule`` subclass with a forward pass of its own
(a heuristic or ``RandomRLModule``) that acts inside the jitted act step and never learns.
Policies without an entry use the config's ``model_config`` (the default networks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from rljax.core.rl_module.forward_module import forward_module_outputs
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.utils.errors import ConfigError


@dataclasses.dataclass
class MultiRLModuleSpec:
    """Each policy's ``RLModuleSpec``.

    Attributes:
      multi_rl_module_class: RLlib's container class; only ``MultiRLModule`` (or None).
      observation_space, action_space, inference_only, model_config: RLlib's settings of the
        container; accepted and kept (each policy's module reads its own spec).
      rl_module_specs: ``{policy_id: RLModuleSpec}``, every id one of the config's policies
        (policies left out use the config's default networks); or one ``RLModuleSpec`` for
        every policy.
    """

    multi_rl_module_class: type | None = None
    observation_space: Any = None
    action_space: Any = None
    inference_only: bool = False
    model_config: dict[str, Any] | None = None
    rl_module_specs: dict[str, RLModuleSpec] | RLModuleSpec = dataclasses.field(
        default_factory=dict
    )

    def __post_init__(self) -> None:
        cls = self.multi_rl_module_class
        if cls is not None and not (isinstance(cls, type) and issubclass(cls, MultiRLModule)):
            raise ConfigError(
                f"MultiRLModuleSpec.multi_rl_module_class must be None or MultiRLModule; got "
                f"{cls!r}"
            )
        if isinstance(self.rl_module_specs, RLModuleSpec):
            return
        if not isinstance(self.rl_module_specs, dict):
            raise ConfigError(
                f"MultiRLModuleSpec.rl_module_specs must be a dict {{policy_id: RLModuleSpec}}; "
                f"got {type(self.rl_module_specs).__name__}"
            )
        for pid, spec in self.rl_module_specs.items():
            if not (isinstance(pid, str) and pid):
                raise ConfigError(
                    f"MultiRLModuleSpec.rl_module_specs has the key {pid!r}; policy ids are "
                    "non-empty strings"
                )
            if not isinstance(spec, RLModuleSpec):
                raise ConfigError(
                    f"MultiRLModuleSpec.rl_module_specs[{pid!r}] must be an RLModuleSpec; got "
                    f"{type(spec).__name__}"
                )

    def spec_of(self, policy_id: str) -> RLModuleSpec | None:
        """``policy_id``'s spec, or None (the config's default networks)."""
        if isinstance(self.rl_module_specs, RLModuleSpec):
            return self.rl_module_specs
        return self.rl_module_specs.get(policy_id)

    def specs(self, policy_ids: list[str]) -> dict[str, RLModuleSpec]:
        """``{policy_id: spec}`` of the given policies that have one."""
        return {p: s for p in policy_ids if (s := self.spec_of(p)) is not None}

    def build(self, module_id: str | None = None) -> Any:
        """Each policy's module on its own (``RLModuleSpec.build()``), as a
        ``MultiRLModule``; with ``module_id``, that policy's module alone (RLlib's
        ``MultiRLModuleSpec.build()``).

        Raises:
          ConfigError: ``rl_module_specs`` is one spec for every policy (no policy ids to
            build), ``module_id`` is not one of them, or a spec cannot be built on its own.
        """
        if isinstance(self.rl_module_specs, RLModuleSpec):
            raise ConfigError(
                "MultiRLModuleSpec.build() needs rl_module_specs as {policy_id: RLModuleSpec}; "
                "one spec for every policy names no policies"
            )
        if module_id is not None:
            if module_id not in self.rl_module_specs:
                raise ConfigError(
                    f"MultiRLModuleSpec.build(module_id={module_id!r}): its policies are "
                    f"{sorted(self.rl_module_specs)}"
                )
            return self.rl_module_specs[module_id].build()
        return MultiRLModule({pid: spec.build() for pid, spec in self.rl_module_specs.items()})


class MultiRLModule(Mapping[str, Any]):
    """A read-only ``{policy_id: RLModule}`` mapping (RLlib's container of modules).

    ``forward_inference`` / ``forward_exploration`` take ``{policy_id: batch}`` and return
    ``{policy_id: outputs}``, each through that policy's module.
    """

    def __init__(self, modules: Mapping[str, Any]):
        self._modules = dict(modules)

    def __getitem__(self, policy_id: str) -> Any:
        if policy_id not in self._modules:
            raise KeyError(f"no module {policy_id!r}; this MultiRLModule has {list(self)}")
        return self._modules[policy_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def forward_inference(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """Each policy's greedy pass over its own batch."""
        return {pid: self[pid].forward_inference(b) for pid, b in batch.items()}

    def forward_exploration(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """Each policy's sampling pass over its own batch."""
        return {pid: self[pid].forward_exploration(b) for pid, b in batch.items()}


__all__ = ["MultiRLModule", "MultiRLModuleSpec", "forward_module_outputs"]
