"""RLlib's ``ray.rllib.core.learner.learner`` path: the ``Learner`` base and the names of its
metrics and optimizer.

rljax's learners are the algorithms' own jitted updates and take no user ``Learner`` class; a
script's subclass of ``Learner`` loads, and refuses where it is used (``TorchClassError``,
saying what rljax takes instead). The constants are RLlib's names, which rljax's results use
too.
"""

from __future__ import annotations

from rljax.utils.torch_classes import LEARNER_INSTEAD, TorchClass

#: The name of a learner's single optimizer.
DEFAULT_OPTIMIZER = "default_optimizer"
#: Learner metrics' keys.
POLICY_LOSS_KEY = "policy_loss"
VF_LOSS_KEY = "vf_loss"
ENTROPY_KEY = "entropy"
LR_KEY = "learning_rate"


class Learner(TorchClass):
    """RLlib's ``Learner`` base: a script's class may derive from it; using that class (a
    config setting such as ``.training(learner_class=...)``, an instance) raises
    ``TorchClassError``, which says what rljax takes instead."""

    rllib_path = "ray.rllib.core.learner.learner.Learner"
    kind = "Learner base class"
    why = "rljax's learners are the algorithms' own jitted JAX updates"
    instead = LEARNER_INSTEAD


__all__ = [
    "DEFAULT_OPTIMIZER",
    "ENTROPY_KEY",
    "LR_KEY",
    "Learner",
    "POLICY_LOSS_KEY",
    "VF_LOSS_KEY",
]
