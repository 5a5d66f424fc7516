"""RLlib's ``ray.rllib.algorithms.ppo.ppo_learner`` path: ``PPOLearner``, the class a script
subclasses to change PPO's loss (``.training(learner_class=..., learner_config_dict=...)``).

rljax's PPO update is one jitted program (``rljax.algorithms.ppo.learner.make_ppo_update``).
A learner class plugs into its minibatch step: for every gradient step the program calls the
learner's ``compute_loss_for_module`` while it is traced, with RLlib's keyword arguments, and
differentiates what it returns. So the method is written in JAX (``jax.numpy``), as RLlib's
PyTorch learners are written in PyTorch:

```python
import jax.numpy as jnp

from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.ppo_learner import PPOLearner


class PPOLearnerWithWeightPenalty(PPOLearner):
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        base = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        params = self.get_parameters(self.module[module_id])
        mean_weight = jnp.mean(jnp.stack([jnp.mean(w) for w in params]))
        self.metrics.log_value(key=(module_id, "mean_weight"), value=mean_weight, window=1)
        return base + config.learner_config_dict["coeff"] * mean_weight


config = (
    PPOConfig()
    .environment("CartPole-v1")
    .training(learner_class=PPOLearnerWithWeightPenalty, learner_config_dict={"coeff": 0.02})
)
```

What the method gets, all traced arrays of the minibatch (``B`` rows):

- ``batch``: RLlib's columns (``rljax.core.columns.Columns``): ``obs``, ``actions``,
  ``action_logp`` and ``action_dist_inputs`` (the sampling policy's), ``vf_preds``,
  ``advantages`` (normalised), ``value_targets``, ``loss_mask`` (bool: real rows; padding
  and auto-reset steps are False).
- ``fwd_out``: the current parameters' forward pass, ``action_dist_inputs`` [B, outputs] and
  ``vf_preds`` [B].
- ``config``: the algorithm's config (Python values: ``config.learner_config_dict[...]``
  becomes a constant of the program).
- ``self.module[module_id]``: the module's parameters in this step (``get_parameters`` lists
  their arrays); ``super().compute_loss_for_module(...)`` is PPO's loss of ``fwd_out`` on the
  minibatch, as rljax computes it.
- ``self.metrics.log_value(key, value)`` / ``log_dict``: scalars reported under
  ``learners/<module_id>/<name>``, each the mean over the iteration's minibatch steps (as
  rljax reports PPO's own losses; RLlib's ``window`` and ``reduce`` are accepted and not used);
  the names PPO reports itself (``RESERVED_METRICS``) are refused.

Groups of parameters may train at learning rates of their own, as RLlib's
``configure_optimizers_for_module`` sets them: inside it, ``register_optimizer(module_id=...,
optimizer_name=..., params=self.get_parameters(self.module[module_id].vf), lr_or_lr_schedule=
...)``. Every optimizer is Adam; each parameter steps at its optimizer's rate, and a parameter
no optimizer holds is not trained (``learning_rate_scales``).

``learners/<module_id>/total_loss`` is what the method returned; PPO's other metrics
(``policy_loss``, ``vf_loss``, ...) are those of its base loss. Learner classes train
single-agent PPO without a recurrent module (on either path, with any number of learners), one
trial at a time in Tune (a population's program would run one trial's learner for all);
other algorithms, multi-agent PPO and recurrent PPO refuse them when the config is checked or
the algorithm built, before anything compiles. A learner class is code: a checkpoint or config
file that names one loads only by the caller's opt-in (``learner_class=``, or
``allow_imports``), like a module class.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from rljax.algorithms.ppo.losses import PPO_LOSS_METRICS, PPOBatch, PPOLossConfig, ppo_loss
from rljax.core.columns import Columns
from rljax.utils.errors import ConfigError

#: RLlib's ``ppo_learner`` metric names (the keys of ``learners/<module_id>/...``).
LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY = "vf_loss_unclipped"
LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY = "vf_explained_var"
LEARNER_RESULTS_KL_KEY = "mean_kl_loss"
LEARNER_RESULTS_CURR_KL_COEFF_KEY = "curr_kl_coeff"
LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY = "curr_entropy_coeff"


#: The metrics PPO's update reports itself: a learner may not log these names.
RESERVED_METRICS = frozenset(
    {
        *PPO_LOSS_METRICS,
        LEARNER_RESULTS_CURR_KL_COEFF_KEY,
        LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY,
        "default_optimizer_learning_rate",
        "gradients_default_optimizer_global_norm",
    }
)


class _Step(NamedTuple):
    """What the minibatch step being traced gives the learner (``PPOLearner._tracing``)."""

    module_id: str
    params: Any
    batch: PPOBatch
    dist: Any
    kl_coeff: jax.Array
    loss_cfg: PPOLossConfig


class ModuleParameters:
    """One module's parameters (``learner.module[module_id]``): in the minibatch step being
    traced, or while ``configure_optimizers_for_module`` runs. A sub-module's are an attribute
    by its name in the parameter tree (``module.pi``, ``module.vf_encoder``)."""

    def __init__(self, module_id: str, params: Any):
        self.__dict__["module_id"] = module_id
        self.__dict__["params"] = params

    def parameters(self) -> list[jax.Array]:
        """The parameter arrays (PyTorch's ``module.parameters()``)."""
        return list(jax.tree.leaves(self.params))

    def __getattr__(self, name: str) -> ModuleParameters:
        params = self.__dict__["params"]
        # Flax's tree has one "params" collection at its top.
        inner = params.get("params", params) if isinstance(params, Mapping) else None
        if not isinstance(inner, Mapping) or name not in inner:
            names = sorted(inner) if isinstance(inner, Mapping) else []
            raise AttributeError(
                f"{self.__dict__['module_id']} has no sub-module {name!r}; its parameters' "
                f"sub-modules: {names}"
            )
        return ModuleParameters(f"{self.__dict__['module_id']}.{name}", inner[name])


class _Modules:
    """``learner.module``: ``module[module_id]`` while a loss is traced."""

    def __init__(self, learner: PPOLearner):
        self._learner = learner

    def __getitem__(self, module_id: str) -> ModuleParameters:
        learner = self._learner
        held = learner._step or learner._configuring
        if held is None:
            raise RuntimeError(
                "learner.module[...] holds a module's parameters only inside "
                "compute_loss_for_module and configure_optimizers_for_module (rljax's "
                "learners keep no module between steps)"
            )
        if module_id != held.module_id:
            raise KeyError(f"module {module_id!r}: this learner trains {held.module_id!r}")
        return ModuleParameters(module_id, held.params)

    def keys(self) -> list[str]:
        held = self._learner._step or self._learner._configuring
        return [] if held is None else [held.module_id]


class _Configuring(NamedTuple):
    """The module whose optimizers ``configure_optimizers_for_module`` registers."""

    module_id: str
    params: Any
    paths: dict[int, str]  # id(leaf) -> the leaf's path in the parameter tree


class LossMetrics:
    """``learner.metrics``: scalars a loss logs while it is traced (RLlib's
    ``MetricsLogger.log_value`` / ``log_dict``), reported as the mean over an iteration's
    minibatch steps under ``learners/<module_id>/<name>``."""

    def __init__(self) -> None:
        self._logged: dict[str, Any] | None = None

    def log_value(
        self, key: Any, value: Any, *, reduce: str = "mean", window: Any = None, **kwargs: Any
    ) -> None:
        """Logs one scalar; ``key`` a name or RLlib's ``(module_id, name)``."""
        if self._logged is None:
            raise RuntimeError(
                "learner.metrics logs only inside compute_loss_for_module (rljax's learner "
                "metrics are values of the jitted update)"
            )
        name = key[-1] if isinstance(key, tuple | list) else key
        if not isinstance(name, str):
            raise TypeError(f"metrics.log_value: key {key!r}: use a name or (module_id, name)")
        if name in RESERVED_METRICS:
            raise ValueError(
                f"metrics.log_value({name!r}): PPO's update reports that metric itself (and "
                "adapts the KL coefficient from mean_kl_loss); log it under another name"
            )
        value = jnp.asarray(value, jnp.float32)
        if value.shape != ():
            raise ValueError(
                f"metrics.log_value({name!r}): a scalar is reported per step; got shape "
                f"{value.shape}"
            )
        self._logged[name] = value

    def log_dict(self, values: Mapping[str, Any], *, key: Any = None, **kwargs: Any) -> None:
        """Logs each scalar of ``values`` (``key``, RLlib's module id, is not used)."""
        for name, value in values.items():
            self.log_value(name, value)


class PPOLearner:
    """PPO's learner as a class to subclass (RLlib's ``PPOLearner``): override
    ``compute_loss_for_module`` to change the loss of the jitted update's minibatch steps (see
    the module docstring). rljax builds it once, with the algorithm's ``config``.

    Attributes:
      config: The algorithm's config.
      module: ``module[module_id]``, the module's parameters in the step being traced.
      metrics: Where a loss logs scalars (``log_value``, ``log_dict``).
    """

    #: The algorithm whose update takes this learner class (checked by the config).
    algorithm: ClassVar[str] = "PPO"

    def __init__(self, *, config: Any = None, **kwargs: Any):
        self.config = config
        self.module = _Modules(self)
        self.metrics = LossMetrics()
        self._step: _Step | None = None
        self._configuring: _Configuring | None = None
        # optimizer name -> (the paths of its parameters, its learning rate)
        self._optimizers: dict[str, tuple[list[str], float]] = {}

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        """Registers the module's optimizers (``register_optimizer``), called once when the
        algorithm is built. PPO's default registers none: one Adam over every parameter at
        ``config.lr``. A subclass registers groups of parameters with learning rates of
        their own (RLlib's separate value-function optimizer)."""

    def register_optimizer(
        self,
        *,
        module_id: str,
        optimizer_name: str,
        optimizer: Any = None,
        params: list[Any],
        lr_or_lr_schedule: Any = None,
    ) -> None:
        """Registers ``params`` (arrays ``get_parameters`` gave, inside
        ``configure_optimizers_for_module``) as one optimizer with learning rate
        ``lr_or_lr_schedule`` (a number; None: ``config.lr``). rljax's PPO steps Adam
        (``eps=1e-5``) for every optimizer, each parameter at its optimizer's rate; parameters
        no optimizer holds are not trained, as in RLlib."""
        held = self._configuring
        if held is None:
            raise RuntimeError(
                "register_optimizer works inside configure_optimizers_for_module only"
            )
        if optimizer is not None:
            raise ValueError(
                f"register_optimizer({optimizer_name!r}): optimizer={type(optimizer).__name__}; "
                "rljax's PPO steps Adam for every optimizer: give params and lr_or_lr_schedule"
            )
        lr = _learning_rate(self.config, lr_or_lr_schedule, optimizer_name)
        paths = []
        for p in params:
            if id(p) not in held.paths:
                raise ValueError(
                    f"register_optimizer({optimizer_name!r}): params must be arrays that "
                    f"get_parameters(self.module[{held.module_id!r}]...) gave"
                )
            paths.append(held.paths[id(p)])
        if optimizer_name in self._optimizers:
            raise ValueError(f"optimizer {optimizer_name!r} is registered twice")
        self._optimizers[optimizer_name] = (paths, lr)

    def compute_loss_for_module(
        self,
        *,
        module_id: str,
        config: Any,
        batch: Mapping[str, jax.Array],
        fwd_out: Mapping[str, jax.Array],
    ) -> jax.Array:
        """PPO's loss of ``fwd_out`` on the minibatch (clipped surrogate, value loss, entropy
        bonus, KL term), a traced scalar. A subclass returns its own loss, usually this one
        plus terms of its own."""
        step = self._current()
        loss, _ = ppo_loss(
            fwd_out[Columns.ACTION_DIST_INPUTS],
            fwd_out[Columns.VF_PREDS],
            step.batch,
            step.dist,
            step.kl_coeff,
            step.loss_cfg,
        )
        return loss

    def get_parameters(self, module: ModuleParameters) -> list[jax.Array]:
        """The parameter arrays of ``module`` (``self.module[module_id]``)."""
        return module.parameters()

    def _current(self) -> _Step:
        if self._step is None:
            raise RuntimeError("compute_loss_for_module runs inside rljax's jitted update only")
        return self._step

    @contextlib.contextmanager
    def _tracing(self, step: _Step) -> Iterator[dict[str, Any]]:
        """While a minibatch step's loss is traced: ``module`` and ``metrics`` are the step's;
        yields the metrics it logs."""
        logged: dict[str, Any] = {}
        previous = self._step, self.metrics._logged
        self._step, self.metrics._logged = step, logged
        try:
            yield logged
        finally:
            self._step, self.metrics._logged = previous


def _learning_rate(config: Any, value: Any, name: str) -> float:
    """An optimizer's learning rate: a positive number (None: ``config.lr``)."""
    if value is None:
        value = getattr(config, "lr", None)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(
            f"register_optimizer({name!r}): lr_or_lr_schedule={value!r}; a learner's own "
            "optimizers take a positive number (schedules are for the config's lr)"
        )
    return float(value)


def learning_rate_scales(learner: PPOLearner, module_id: str, params: Any, config: Any) -> Any:
    """Runs ``learner.configure_optimizers_for_module`` on ``params`` (the module's parameter
    tree) and returns a tree like ``params`` of each parameter's learning rate relative to
    ``config.lr`` (0 for a parameter no optimizer holds), or None when the learner registers
    no optimizer (one Adam at ``config.lr``).

    Raises:
      ConfigError: A parameter registered with two optimizers, a schedule for ``config.lr``,
        or ``grad_clip`` set (RLlib clips each optimizer's gradients apart; rljax clips one
        global norm).
    """
    paths = {
        id(leaf): jax.tree_util.keystr(path)
        for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]
    }
    learner._optimizers = {}
    learner._configuring = _Configuring(module_id, params, paths)
    try:
        learner.configure_optimizers_for_module(module_id, config)
    except (TypeError, ValueError, AttributeError) as e:
        raise ConfigError(
            f"{type(learner).__name__}.configure_optimizers_for_module: {e}"
        ) from None
    finally:
        learner._configuring = None
    if not learner._optimizers:
        return None
    name = type(learner).__name__
    if isinstance(config.lr, list | tuple):
        raise ConfigError(
            f"{name} registers optimizers of its own: lr must be a number, not a schedule"
        )
    if config.grad_clip:
        raise ConfigError(
            f"{name} registers optimizers of its own, and grad_clip={config.grad_clip}: "
            "RLlib clips each optimizer's gradients apart, rljax one global norm; set "
            "grad_clip=None"
        )
    rate: dict[str, float] = {}
    for optimizer_name, (names, lr) in learner._optimizers.items():
        for path in names:
            if path in rate:
                raise ConfigError(
                    f"{name}: parameter {path} is registered with two optimizers (the second "
                    f"{optimizer_name!r})"
                )
            rate[path] = lr / float(config.lr)
    return jax.tree_util.tree_map_with_path(
        lambda path, _: rate.get(jax.tree_util.keystr(path), 0.0), params
    )


def learner_columns(batch: PPOBatch) -> dict[str, Any]:
    """A minibatch as RLlib's columns (``Columns``), what ``compute_loss_for_module`` gets."""
    return {
        Columns.OBS: batch.obs,
        Columns.ACTIONS: batch.action,
        Columns.ACTION_LOGP: batch.action_logp,
        Columns.ACTION_DIST_INPUTS: batch.action_dist_inputs,
        Columns.VF_PREDS: batch.vf_preds,
        Columns.ADVANTAGES: batch.advantages,
        Columns.VALUE_TARGETS: batch.value_targets,
        Columns.LOSS_MASK: batch.mask > 0,
    }


def make_loss_hook(learner: PPOLearner, module_id: str, config: Any, dist: Any) -> Callable:
    """``hook(params, batch, dist_inputs, values, kl_coeff, loss_cfg) -> (loss, metrics)``,
    the loss of a minibatch step as ``learner.compute_loss_for_module`` gives it
    (``make_ppo_update(loss_hook=...)``); traced, never called on its own."""

    def hook(
        params: Any,
        batch: PPOBatch,
        dist_inputs: jax.Array,
        values: jax.Array,
        kl_coeff: jax.Array,
        loss_cfg: PPOLossConfig,
    ) -> tuple[jax.Array, dict[str, Any]]:
        step = _Step(module_id, params, batch, dist, kl_coeff, loss_cfg)
        fwd_out = {Columns.ACTION_DIST_INPUTS: dist_inputs, Columns.VF_PREDS: values}
        with learner._tracing(step) as logged:
            loss = learner.compute_loss_for_module(
                module_id=module_id, config=config, batch=learner_columns(batch), fwd_out=fwd_out
            )
        loss = jnp.asarray(loss)
        if loss.shape != () or not jnp.issubdtype(loss.dtype, jnp.floating):
            raise ValueError(
                f"{type(learner).__name__}.compute_loss_for_module must return a float scalar; "
                f"got {loss.dtype} of shape {loss.shape}"
            )
        return loss, dict(logged)

    return hook


def is_learner_class(value: Any) -> bool:
    """Whether ``value`` is a ``PPOLearner`` class (a learner class rljax trains with)."""
    return isinstance(value, type) and issubclass(value, PPOLearner)


__all__ = [
    "RESERVED_METRICS",
    "LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY",
    "LEARNER_RESULTS_CURR_KL_COEFF_KEY",
    "LEARNER_RESULTS_KL_KEY",
    "LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY",
    "LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY",
    "LossMetrics",
    "ModuleParameters",
    "PPOLearner",
    "is_learner_class",
    "learner_columns",
    "learning_rate_scales",
    "make_loss_hook",
]
