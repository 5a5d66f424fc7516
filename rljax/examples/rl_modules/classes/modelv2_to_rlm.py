"""RLlib's ``ModelV2ToRLModule`` at its path
(``ray.rllib.examples.rl_modules.classes.modelv2_to_rlm``).

RLlib's class wraps an old-stack ``ModelV2`` (built from an old config, or restored from an
old-stack policy checkpoint) as a new-stack ``RLModule``, so that training moves from the old
API stack to the new one with the same network. rljax's old stack (RLlib 1.x's trainers,
``api_stack(enable_rl_module_and_learner=False)``) trains the same networks as its new stack:
the old ``model`` dict configures the default networks (or names a custom Flax module). So
here the class stands, in an ``RLModuleSpec``, for the networks the old config or checkpoint
describes, and the spec becomes that module's own (``RLModuleSpec.__post_init__`` asks
:meth:`ModelV2ToRLModule.rl_module_spec_fields`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, cast

from rljax.utils.errors import ConfigError

# RLlib's keys of this module's model_config (the rest are default-model settings).
_OWN_KEYS = (
    "policy_id",
    "old_api_stack_algo_config",
    "algo_checkpoint_dir",
    "policy_checkpoint_dir",
)


class ModelV2ToRLModule:
    """RLlib's module of an old-stack model: ``RLModuleSpec(module_class=ModelV2ToRLModule,
    model_config={...})`` builds the networks of

    * ``"old_api_stack_algo_config"``: an old-stack config object (its ``model`` dict, given
      through ``.training(model={...})``, as RLlib 1.x's trainer reads it; a ``custom_model``
      is that Flax module), or
    * ``"algo_checkpoint_dir"`` (with ``"policy_id"``, default ``"default_policy"``) or
      ``"policy_checkpoint_dir"`` (a checkpoint of one policy, as an old trainer's
      ``export_policy_checkpoint`` writes): an rljax checkpoint; the policy's networks, and
      its weights to start from (``load_state_path``).

    The model_config's other keys (``max_seq_len``, ...) are default-model settings applied
    over the old config's. Made directly, as RLlib's scripts make it
    (``ModelV2ToRLModule(observation_space=..., action_space=..., model_config={...})``), it
    gives rljax's ``RLModule`` of those networks: a checkpoint's policy with its weights, or an
    old config's networks freshly initialised.
    """

    # rljax.core.rl_module.spec: the class is replaced by the networks it describes.
    describes_networks: ClassVar[bool] = True

    def __new__(
        cls,
        observation_space: Any = None,
        action_space: Any = None,
        inference_only: bool = False,
        model_config: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        from rljax.core.rl_module.rl_module import RLModule, one_module
        from rljax.core.rl_module.spec import RLModuleSpec

        fields = cls.rl_module_spec_fields(model_config or {})
        path = fields.pop("load_state_path", None)
        if path is not None:
            return one_module(RLModule.from_checkpoint(path), path)
        spec = RLModuleSpec(
            observation_space=observation_space, action_space=action_space, **fields
        )
        return spec.build()

    @staticmethod
    def rl_module_spec_fields(model_config: Mapping[str, Any]) -> dict[str, Any]:
        """The ``RLModuleSpec`` fields (``module_class``, ``model_config``,
        ``load_state_path``; for an old config's default networks also ``_algorithm`` and
        ``_algorithm_config``, which shape them in ``build()``) of the networks
        ``model_config`` describes.

        Raises:
          ConfigError: none or more than one of the three sources is given, the config is not
            an rljax config, or a checkpoint directory does not exist.
        """
        given = dict(model_config)
        sources = [k for k in _OWN_KEYS[1:] if given.get(k) is not None]
        if len(sources) != 1:
            raise ConfigError(
                "RLModuleSpec(module_class=ModelV2ToRLModule): model_config must give one of "
                f"'old_api_stack_algo_config', 'algo_checkpoint_dir' or 'policy_checkpoint_dir'; "
                f"got {sources or 'none'}"
            )
        policy_id = given.get("policy_id") or "default_policy"
        extra = {k: v for k, v in given.items() if k not in _OWN_KEYS}
        source = sources[0]
        if source == "old_api_stack_algo_config":
            return _from_config(given[source], extra)
        path = Path(str(given[source]))
        if not path.is_dir():
            raise ConfigError(
                f"ModelV2ToRLModule: model_config[{source!r}]={str(path)[:300]!r} is no "
                "directory (an rljax checkpoint)"
            )
        if source == "algo_checkpoint_dir":
            path = path / "learner_group" / "learner" / "rl_module" / str(policy_id)
        return _from_checkpoint(path, extra)


def _from_config(config: Any, extra: dict[str, Any]) -> dict[str, Any]:
    from rljax.algorithms.algorithm_config import AlgorithmConfig
    from rljax.core.rl_module.default_model_config import DefaultModelConfig

    if not isinstance(config, AlgorithmConfig):
        raise ConfigError(
            "ModelV2ToRLModule: model_config['old_api_stack_algo_config'] must be a config "
            f"object (PPOConfig(), ...); got {type(config).__name__}"
        )
    from rljax.agents.trainer import old_stack_config

    # The networks RLlib 1.x's trainer would train for that config: its model dict translated.
    trained = old_stack_config(config.algo_name, config)
    spec = trained.rl_module_spec
    if spec is not None and spec.module_class is not None:  # the old dict's custom_model
        return {
            "module_class": spec.module_class,
            "model_config": {**spec.model_config, **extra},
        }
    base = trained.model_config
    base = base.to_dict() if isinstance(base, DefaultModelConfig) else dict(base)
    return {
        "module_class": None,
        "model_config": {**base, **extra},
        # What shapes the default networks where the spec builds them (DQN's dueling, ...).
        "_algorithm": config.algo_name,
        "_algorithm_config": trained._config_for_module_build(),
    }


def _from_checkpoint(path: Path, extra: dict[str, Any]) -> dict[str, Any]:
    from rljax.core.rl_module.default_model_config import DefaultModelConfig
    from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from rljax.core.rl_module.rl_module import RLModule, one_module

    module = one_module(RLModule.from_checkpoint(path), path)
    config = cast(Any, module._algo).config  # the checkpoint's algorithm, for inference
    spec = config.rl_module_spec
    if isinstance(spec, MultiRLModuleSpec):
        spec = spec.specs([module._policy_id or "default_policy"]).get(
            module._policy_id or "default_policy"
        )
    if spec is not None and spec.module_class is not None:
        own = {"module_class": spec.module_class, "model_config": {**spec.model_config, **extra}}
        return {**own, "load_state_path": str(path)}
    base = config.model_config
    base = base.to_dict() if isinstance(base, DefaultModelConfig) else dict(base)
    if spec is not None:
        base.update(spec.model_config)
    return {"module_class": None, "model_config": {**base, **extra}, "load_state_path": str(path)}


__all__ = ["ModelV2ToRLModule"]
