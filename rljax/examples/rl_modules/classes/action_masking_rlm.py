"""RLlib's action-masking example modules at their path
(``ray.rllib.examples.rl_modules.classes.action_masking_rlm``).

RLlib's ``ActionMaskingTorchRLModule`` is its default PPO module that reads a Dict observation
``{"action_mask": ..., "observations": ...}`` and gives masked actions a logit that is never
sampled. rljax's default networks do exactly that for such an observation space
(``rljax.networks.models``), so ``RLModuleSpec(module_class=ActionMaskingTorchRLModule,
model_config={...})`` builds the default networks with that ``model_config``.
"""

from __future__ import annotations

from typing import ClassVar


class ActionMaskingRLModule:
    """RLlib's action-masking module: in an ``RLModuleSpec`` it stands for rljax's default
    networks, which mask actions for a Dict observation with ``action_mask`` and
    ``observations`` keys."""

    uses_default_networks: ClassVar[bool] = True
    default_networks_of: ClassVar[str] = "PPO"  # what RLModuleSpec.build() builds


class ActionMaskingTorchRLModule(ActionMaskingRLModule):
    """RLlib's PyTorch action-masking PPO module: in an ``RLModuleSpec`` it stands for rljax's
    default networks (no PyTorch is involved)."""


__all__ = ["ActionMaskingRLModule", "ActionMaskingTorchRLModule"]
