"""RLlib's old-stack ``model`` dict, ``.training(model={...})``, as RLlib 2.60's new API stack
treats it.

RLlib 2.60 still accepts the keyword: it updates its old-stack ``config.model`` dict, which the
new API stack's RLModules never read (``AlgorithmConfig.validate`` warns that the network is
configured through ``.rl_module(model_config={...})``), and it refuses the keys that name
old-stack custom models. rljax does the same: the dict is checked and configures nothing; a
one-time warning names the ``.rl_module(model_config={...})`` that would set those of its keys
rljax's default networks have (old names such as ``post_fcnet_hiddens`` under their new ones).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from rljax.core.rl_module.default_model_config import OLD_MODEL_KEYS, DefaultModelConfig
from rljax.utils import once
from rljax.utils.errors import ConfigError

logger = logging.getLogger("rljax")

# Keys RLlib's new API stack refuses in the old model dict (they name old-stack models).
_REFUSED = {
    "custom_model": "write a Flax module and pass it as "
    ".rl_module(rl_module_spec=RLModuleSpec(module_class=...))",
    "custom_model_config": "pass the module's settings as RLModuleSpec(model_config={...})",
    "custom_preprocessor": "wrap the env in a gymnasium.ObservationWrapper instead",
    "_use_default_native_models": "configure the default networks with "
    ".rl_module(model_config={...})",
}


def model_config_part(model: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of an old ``model`` dict that ``.rl_module(model_config={...})`` takes, under
    their current names (``post_fcnet_hiddens`` as ``head_fcnet_hiddens``); the old stack's
    other keys (``dim``, ``framestack``, ``use_attention``, ...) are left out."""
    fields = {f.name for f in dataclasses.fields(DefaultModelConfig)}
    out: dict[str, Any] = {}
    for key, value in model.items():
        name = OLD_MODEL_KEYS.get(key, key)
        if name in fields:
            out[name] = value
    return out


def check_old_model_dict(where: str, model: Any) -> None:
    """Checks ``.training(model=...)`` as RLlib 2.60 does on its new API stack and warns, once,
    that it configures nothing.

    Raises:
      ConfigError: ``model`` is not a dict, or holds a key RLlib refuses there
        (``custom_model``, a non-empty ``custom_model_config``, ``custom_preprocessor``,
        ``_use_default_native_models``).
    """
    if not isinstance(model, Mapping):
        raise ConfigError(f"{where}: model={model!r}: use a dict (RLlib's old model settings)")
    for key, advice in _REFUSED.items():
        value = model.get(key)
        if value is not None and value != {} and value is not False:
            raise ConfigError(
                f"{where}: model={{{key!r}: ...}} is RLlib's old-stack API, which its new API "
                f"stack (and rljax) does not take: {advice}"
            )
    if not once.first_time("old_model_dict", "model"):
        return
    part = model_config_part(model)
    instead = (
        f".rl_module(model_config={part!r})"
        if part
        else ".rl_module(model_config={...}) (rljax.core.rl_module.DefaultModelConfig's keys)"
    )
    logger.warning(
        "%s: model=%r is RLlib's old-stack model dict; as on RLlib's new API stack it does not "
        "configure the networks. Use %s",
        where,
        dict(model),
        instead,
    )


__all__ = ["check_old_model_dict", "model_config_part"]
