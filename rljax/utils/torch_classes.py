"""RLlib's PyTorch base classes at their paths, for scripts whose own code is PyTorch.

rljax runs JAX: a PyTorch ``RLModule`` or ``Learner`` cannot run here. A script may still
import these bases and define its classes on them (its module loads); where such a class is
used (``RLModuleSpec(module_class=...)``, a config setter given it, or an instance made) one
``TorchClassError`` names the PyTorch base and says what rljax takes instead.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rljax.utils.errors import ConfigError

MODULE_INSTEAD = (
    "rljax's equivalent is a Flax module: a flax.linen.Module subclass built as "
    "module_class(num_outputs=n, **model_config) whose __call__(obs) returns "
    "(action_dist_inputs [B, n], value [B]), given as "
    ".rl_module(rl_module_spec=RLModuleSpec(module_class=YourFlaxModule, model_config={...})) "
    "(rljax.core.rl_module.RLModuleSpec)"
)
LEARNER_INSTEAD = (
    "rljax's learners are the algorithms' own jitted JAX updates: PPO's loss changes through "
    ".training(learner_class=...) with a subclass of rljax's JAX PPOLearner "
    "(rljax.algorithms.ppo.ppo_learner) whose compute_loss_for_module is written in "
    "jax.numpy; otherwise set the loss through .training(...) (vf_loss_coeff, entropy_coeff, "
    "grad_clip, lr, ...) and the networks as a Flax module through "
    "RLModuleSpec(module_class=...) (rljax.core.rl_module.RLModuleSpec)"
)

CNN_INSTEAD = (
    "rljax's default networks have the CNN: model_config={'conv_filters': [[out_channels, "
    "kernel, stride], ...]} with no module_class, or a Flax module of your own through "
    "RLModuleSpec(module_class=...)"
)
VPG_INSTEAD = (
    "rljax's algorithms are PPO, APPO/IMPALA, DQN, SAC and TD3 (rljax.algorithms); "
    "PPOConfig().training(num_epochs=1, clip_param=...) is the nearest to vanilla policy gradient"
)
MAML_INSTEAD = "rljax has no meta-learning (differentiable learner) API"
CUSTOM_ALGORITHM_WHY = (
    "rljax's algorithms build their own jitted training step, and a subclass's Python "
    "training_step with Ray actors cannot run in it"
)
CUSTOM_ALGORITHM_INSTEAD = (
    "use the algorithm's own config (e.g. APPOConfig) and rljax.callbacks for work that runs "
    "beside training"
)
CONNECTOR_WHY = (
    "it is a learner connector, and rljax's learner connectors are built into each "
    "algorithm's jitted update, where a ConnectorV2's Python __call__ on batches cannot run"
)
CONNECTOR_INSTEAD = (
    "rljax runs ConnectorV2 pieces on the env-to-module side only "
    "(.env_runners(env_to_module_connector=...): in each gymnasium env, on the host), beside "
    "its compiled connectors rljax.connectors.env_to_module (FlattenObservations, "
    "MeanStdFilter, SingleAgentObservationPreprocessor subclasses)"
)


class TorchClassError(ConfigError):
    """A class built on one of RLlib's PyTorch bases was used: rljax cannot run it."""


class TorchClass:
    """Base of the PyTorch stand-ins: making an instance raises ``TorchClassError``.

    Subclasses (one per RLlib class) set ``rllib_path`` (RLlib's import path of the class) and
    ``instead`` (what rljax takes in its place).
    """

    rllib_path: ClassVar[str] = ""
    instead: ClassVar[str] = MODULE_INSTEAD
    #: What the class is in RLlib, and why rljax cannot run it (a PyTorch class by default;
    #: a few RLlib classes that are not PyTorch cannot run here either, for their own reason).
    kind: ClassVar[str] = "PyTorch class"
    why: ClassVar[str] = "rljax runs JAX and cannot run PyTorch code"
    #: ``RLModuleSpec``'s mark of a class that stands for the default networks (as on
    #: RLlib's action-masking example module): True on RLlib's default module and catalog
    #: classes (``PPOTorchRLModule``, ``PPOCatalog``, ...). Not inherited here: a subclass of
    #: one holds PyTorch code of its own (``__init_subclass__``).
    uses_default_networks: ClassVar[bool] = False
    #: On a default module class, the algorithm whose networks it stands for (``"PPO"``):
    #: what ``RLModuleSpec.build()`` builds. Not inherited either.
    default_networks_of: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "uses_default_networks" not in vars(cls):
            cls.uses_default_networks = False
        if "default_networks_of" not in vars(cls):
            cls.default_networks_of = None

    def __init__(self, *args: Any, **kwargs: Any):
        raise TorchClassError(torch_refusal(type(self)))


def _torch_base(cls: type) -> type[TorchClass] | None:
    """The first of RLlib's PyTorch classes ``cls`` derives from (the stand-ins defined with
    an ``rllib_path``), or None."""
    for base in cls.__mro__:
        if isinstance(base, type) and issubclass(base, TorchClass) and "rllib_path" in vars(base):
            return base
    return None


def is_torch_class(value: Any) -> bool:
    """Whether ``value`` is a class built on one of RLlib's PyTorch bases."""
    return isinstance(value, type) and _torch_base(value) is not None


def torch_refusal(cls: type, where: str = "") -> str:
    """The message of the error for using ``cls``, a class on one of RLlib's PyTorch bases."""
    base = _torch_base(cls)
    assert base is not None
    named = cls.__name__
    what = (
        f"{named} is RLlib's {base.kind} {base.rllib_path}"
        if cls is base
        else f"{named} subclasses RLlib's {base.kind} {base.rllib_path}"
    )
    at = f"{where}: " if where else ""
    return f"{at}{what}; {base.why}. {base.instead}"


def check_not_torch(value: Any, where: str) -> None:
    """Raises ``TorchClassError`` if ``value`` is a class on one of RLlib's PyTorch bases.

    Raises:
      TorchClassError: It is.
    """
    if is_torch_class(value):
        raise TorchClassError(torch_refusal(value, where))


__all__ = [
    "CNN_INSTEAD",
    "CONNECTOR_INSTEAD",
    "CONNECTOR_WHY",
    "CUSTOM_ALGORITHM_INSTEAD",
    "CUSTOM_ALGORITHM_WHY",
    "LEARNER_INSTEAD",
    "MAML_INSTEAD",
    "MODULE_INSTEAD",
    "VPG_INSTEAD",
    "TorchClass",
    "TorchClassError",
    "check_not_torch",
    "is_torch_class",
    "torch_refusal",
]
