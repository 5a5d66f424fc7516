"""``RLModuleSpec``: how a user plugs in a module of their own (also importable from
``rljax.core.rl_module.rl_module``, RLlib's path)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, cast

import gymnasium as gym

from rljax.core.rl_module.forward_module import is_forward_module_class
from rljax.utils.errors import ConfigError


@dataclasses.dataclass
class RLModuleSpec:
    """A user-supplied module and its settings.

    ``module_class`` is one of:

    * a ``flax.linen.Module`` subclass: ``module_class(num_outputs=n, **model_config)`` must
      build a module whose ``__call__(obs)`` takes a batch of observations ``[B, *obs_shape]``
      and returns ``(action_dist_inputs [B, n], value [B])``. ``n`` is the number of actions
      for a discrete action space and ``2 * action_dim`` (mean, log std) for a continuous one.
    * an ``RLModule`` subclass with a forward pass of its own (``_forward``, or
      ``_forward_inference`` / ``_forward_exploration``): a module that acts but does not
      learn (multi-agent configs; keep it out of ``policies_to_train``). See ``RLModule``.
    * None: the default networks; ``model_config`` then holds default-model settings
      (RLlib's keys, or a ``DefaultModelConfig``) for this module.
    * RLlib's default module classes themselves (``PPOTorchRLModule``,
      ``DefaultPPOTorchRLModule``, ``DefaultDQNTorchRLModule``, ``DefaultSACTorchRLModule``):
      the same as None, as in RLlib; a subclass of one (PyTorch code) raises
      ``TorchClassError``.
    * a class whose ``uses_default_networks`` is True (RLlib's example module classes that
      are the default networks plus what rljax's default networks already do, such as
      ``ActionMaskingTorchRLModule``): the same as None, and ``module_class`` becomes None.
    * a class whose ``describes_networks`` is True (RLlib's ``ModelV2ToRLModule``): its
      ``rl_module_spec_fields(model_config)`` gives the module class, model config and
      ``load_state_path`` of the networks it describes (an old-stack config's or
      checkpoint's; for the default networks also the algorithm and config that shape them,
      as ``build()`` reads them), which replace the given ones.

    Attributes:
      module_class: The module's class, or None for the default networks.
      model_config: Keyword arguments for a Flax ``module_class``, settings for an
        ``RLModule`` one (its ``self.model_config``), or default-model settings.
      observation_space, action_space: The module's spaces (None: the env agents'); given,
        they must match the agents' the module is mapped to in kind and shape.
      inference_only: RLlib's flag; accepted and kept.
      catalog_class: RLlib's model catalog; None, or ``PPOCatalog`` itself (the default
        networks' catalog; dropped). Others build PyTorch models and refuse with
        ``TorchClassError``.
      load_state_path: A checkpoint's policy whose weights this module starts from (RLlib's
        pre-train-then-fine-tune): ``<checkpoint>/learner_group/learner/rl_module/<policy_id>``
        or a checkpoint directory with one policy. Read when the algorithm is built, through
        ``RLModule.from_checkpoint`` (so a module class the checkpoint names loads only as
        that allows); its weights must have this module's shapes. The optimizer starts
        afresh.
    """

    module_class: type | None = None
    model_config: Any = dataclasses.field(default_factory=dict)
    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None
    inference_only: bool = False
    catalog_class: type | None = None
    load_state_path: str | os.PathLike | None = None
    # What build() builds the default networks of (not RLlib's fields; kept by
    # dataclasses.replace): the algorithm a default module class names, and the config
    # (a copy without runners or callbacks) that config.get_default_rl_module_spec() and
    # get_rl_module_spec() come from, whose settings shape the networks (DQN's dueling, ...).
    _algorithm: str | None = dataclasses.field(default=None, repr=False, compare=False)
    _algorithm_config: Any = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        import flax.linen as nn

        from rljax.core.rl_module.default_model_config import DefaultModelConfig
        from rljax.utils.torch_classes import check_not_torch

        # A class that describes networks of its own settings (RLlib's ModelV2ToRLModule: an
        # old-stack config's or checkpoint's): the spec becomes those networks'.
        if isinstance(self.module_class, type) and getattr(
            self.module_class, "describes_networks", False
        ):
            if not isinstance(self.model_config, Mapping):
                raise ConfigError(
                    f"RLModuleSpec(module_class={self.module_class.__name__}): model_config "
                    f"must be a dict; got {type(self.model_config).__name__}"
                )
            describe = cast(Any, self.module_class).rl_module_spec_fields
            for name, value in describe(self.model_config).items():
                if value is not None or name in ("module_class", "model_config"):
                    setattr(self, name, value)
        # A default module class names its algorithm (RLlib's DefaultPPOTorchRLModule: "PPO").
        if self._algorithm is None:
            self._algorithm = getattr(self.module_class, "default_networks_of", None)
        # Classes that stand for the default networks (RLlib's default module and catalog
        # classes, its action-masking module): None, as in RLlib.
        if _uses_default_networks(self.module_class):
            self.module_class = None
        if _uses_default_networks(self.catalog_class):
            self.catalog_class = None
        check_not_torch(self.module_class, "RLModuleSpec(module_class=...)")
        check_not_torch(self.catalog_class, "RLModuleSpec(catalog_class=...)")
        if self.catalog_class is not None:
            raise ConfigError(
                f"RLModuleSpec(catalog_class={self.catalog_class!r}): rljax builds its default "
                "networks from model_config itself and takes no catalog class; drop it"
            )
        cls = self.module_class
        flax_class = isinstance(cls, type) and issubclass(cls, nn.Module)
        if cls is not None and not flax_class and not is_forward_module_class(cls):
            raise ConfigError(
                f"RLModuleSpec.module_class must be None, a flax.linen.Module subclass or an "
                f"rljax RLModule subclass with a forward pass; got {cls!r}"
            )
        if isinstance(self.model_config, DefaultModelConfig):
            # A module that acts by its own forward pass reads its settings as a dict (RLlib's
            # scripts give RandomRLModule the run's DefaultModelConfig).
            if cls is not None and not is_forward_module_class(cls):
                raise ConfigError(
                    f"RLModuleSpec(module_class={cls.__name__}) got a DefaultModelConfig; "
                    "a module_class of its own takes a dict of its settings"
                )
            self.model_config = self.model_config.to_dict()
        if self.model_config is None:
            self.model_config = {}
        if not isinstance(self.model_config, dict):
            raise ConfigError(
                f"RLModuleSpec.model_config must be a dict or a DefaultModelConfig; got "
                f"{type(self.model_config).__name__}"
            )
        if self.load_state_path is not None and not isinstance(
            self.load_state_path, str | os.PathLike
        ):
            raise ConfigError(
                "RLModuleSpec.load_state_path must be None or a path (str or os.PathLike); got "
                f"{type(self.load_state_path).__name__}"
            )
        for name in ("observation_space", "action_space"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, gym.Space):
                raise ConfigError(
                    f"RLModuleSpec.{name} must be None or a gymnasium space; got {value!r}"
                )

    @property
    def is_forward_only(self) -> bool:
        """Whether the module acts by a forward pass of its own and never learns."""
        return is_forward_module_class(self.module_class)

    @classmethod
    def from_module(cls, module: Any) -> RLModuleSpec:
        """The spec of a module (RLlib's ``RLModuleSpec.from_module``), so that a module built
        from it has the same architecture (weights are no part of a spec: copy them with
        ``get_state`` / ``set_state``). An algorithm's module (``algo.get_module(pid)``) gives
        its policy's module class (None: the default networks) and model settings (the
        config's merged with the policy's own); a module that acts by a forward pass of its
        own gives its class, spaces and ``model_config``.

        Raises:
          ConfigError: ``module`` is neither.
        """
        algo = getattr(module, "_algo", None)
        if algo is None:
            if not is_forward_module_class(type(module)):
                raise ConfigError(
                    f"RLModuleSpec.from_module({type(module).__name__}): pass a module from "
                    "algo.get_module(...) or an RLModule with a forward pass of its own"
                )
            return cls(
                module_class=type(module),
                model_config=dict(getattr(module, "model_config", {}) or {}),
                observation_space=getattr(module, "observation_space", None),
                action_space=getattr(module, "action_space", None),
            )
        policy_id = getattr(module, "_policy_id", None)
        config = algo.config
        own = None
        spec = config.rl_module_spec
        if policy_id is not None and hasattr(spec, "spec_of"):
            own = spec.spec_of(policy_id)
        elif isinstance(spec, RLModuleSpec):
            own = spec
        if own is not None and own.module_class is not None:
            return dataclasses.replace(own, load_state_path=None)
        merged = config.module_config(policy_id).model_config if policy_id else config.model_config
        return cls(model_config=merged.to_dict())

    def build(self) -> Any:
        """The module on its own, outside an algorithm (RLlib's ``RLModuleSpec.build()``):
        a forward-pass module class is instantiated with the spec's spaces and
        ``model_config``; the default networks (or a Flax ``module_class``) are built with
        fresh weights as an algorithm's inference-only module, ready for
        ``forward_inference``, ``get_state`` and ``save_to_path``. The default networks are
        an algorithm's: the spec comes from ``config.get_rl_module_spec()`` or
        ``config.get_default_rl_module_spec()`` (then that config's settings shape them:
        DQN's ``dueling``, ``num_atoms``, ...), or names RLlib's default module class
        (``DefaultPPOTorchRLModule``, ...: that algorithm's defaults); a Flax class is built
        as PPO's network.

        Raises:
          ConfigError: a space is missing, or the default networks' algorithm is unknown.
        """
        if self.observation_space is None or self.action_space is None:
            raise ConfigError(
                "RLModuleSpec.build() needs observation_space and action_space (the env's "
                "spaces); got "
                f"observation_space={self.observation_space!r}, action_space={self.action_space!r}"
            )
        if self.is_forward_only:
            return cast(type, self.module_class)(
                observation_space=self.observation_space,
                action_space=self.action_space,
                model_config=self.model_config,
                inference_only=self.inference_only,
            )
        if self._algorithm_config is not None:
            config = self._algorithm_config.copy()
        else:
            algorithm = self._algorithm or ("PPO" if self.module_class is not None else None)
            if algorithm is None:
                raise ConfigError(
                    "RLModuleSpec.build(): the default networks are an algorithm's, and this "
                    "spec does not say which; use config.get_rl_module_spec() or "
                    "config.get_default_rl_module_spec() (with the spaces set on it), or "
                    "module_class=DefaultPPOTorchRLModule / DefaultDQNTorchRLModule / "
                    "DefaultSACTorchRLModule"
                )
            # The algorithms build modules from specs (they import this module): the registry
            # names them without importing them here.
            from rljax.algorithms import registry

            config = registry.config_class(algorithm)()
        if self.module_class is None:  # the default networks, by this spec's model_config
            config.rl_module(rl_module_spec=None, model_config=dict(self.model_config))
        else:
            own = dataclasses.replace(self, load_state_path=None, _algorithm_config=None)
            config.rl_module(rl_module_spec=own)
        spaces = {"spaces": (self.observation_space, self.action_space), "possible_agents": None}
        algo = config.algo_class(config, inference_only=True, saved_spaces=spaces)
        return algo._module(None)


def _uses_default_networks(cls: Any) -> bool:
    """Whether ``cls`` is a class marked ``uses_default_networks``: one that stands for the
    default networks in a spec."""
    return isinstance(cls, type) and bool(getattr(cls, "uses_default_networks", False))
