"""RLlib's ``ModelCatalog`` for the old API's ``"model": {"custom_model": name}``: a custom
model is a Flax module, registered by name and plugged in as
``RLModuleSpec(module_class=..., model_config=custom_model_config)``."""

from __future__ import annotations

import inspect
from typing import Any

from rljax.core.rl_module.spec import RLModuleSpec
from rljax.models.torch.torch_modelv2 import FLAX_EXAMPLE, refuse_torch
from rljax.utils.errors import ConfigError


def _check_flax(what: str, model: Any) -> type:
    import flax.linen as nn

    refuse_torch(what, model)
    if not (inspect.isclass(model) and issubclass(model, nn.Module)):
        raise ConfigError(
            f"{what}: {model!r} is not a flax.linen.Module subclass; a custom model is one, "
            f"e.g.\n\n{FLAX_EXAMPLE}"
        )
    return model


class ModelCatalog:
    """Custom models by name (RLlib's ``ModelCatalog.register_custom_model``)."""

    _custom_models: dict[str, type] = {}  # noqa: RUF012 (the registry, shared by design)

    @classmethod
    def register_custom_model(cls, model_name: str, model_class: type) -> None:
        """Registers the Flax module ``model_class`` as ``model_name``, for
        ``"model": {"custom_model": model_name}``.

        Raises:
          ConfigError: ``model_class`` is a ``TorchModelV2`` (the message shows the Flax
            form) or no ``flax.linen.Module`` subclass; ``model_name`` is not a string.
        """
        if not isinstance(model_name, str) or not model_name:
            raise ConfigError(
                f"register_custom_model({model_name!r}, ...): the name is a non-empty string"
            )
        cls._custom_models[model_name] = _check_flax(
            f"register_custom_model({model_name!r}, ...)", model_class
        )

    @classmethod
    def get_custom_model(cls, model_name: str) -> type:
        """The module registered as ``model_name``; ``ConfigError`` naming those registered."""
        if model_name not in cls._custom_models:
            raise ConfigError(
                f"custom_model {model_name!r} is not registered; call "
                f"ModelCatalog.register_custom_model({model_name!r}, MyFlaxModule) first "
                f"(registered: {sorted(cls._custom_models) or 'none'})"
            )
        return cls._custom_models[model_name]


def custom_model_spec(custom_model: Any, custom_model_config: Any = None) -> RLModuleSpec:
    """``"custom_model"`` (a registered name or a Flax module class) and its
    ``"custom_model_config"`` as the ``RLModuleSpec`` the algorithm builds."""
    if isinstance(custom_model, str):
        module = ModelCatalog.get_custom_model(custom_model)
    else:
        module = _check_flax("model['custom_model']", custom_model)
    if custom_model_config is not None and not isinstance(custom_model_config, dict):
        raise ConfigError(
            f"model['custom_model_config']={custom_model_config!r}: expected a dict of the "
            "module's keyword arguments"
        )
    return RLModuleSpec(module_class=module, model_config=dict(custom_model_config or {}))


__all__ = ["FLAX_EXAMPLE", "ModelCatalog", "custom_model_spec"]
