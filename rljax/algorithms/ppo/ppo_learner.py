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
  rljax reports PPO's own losses; RLlib's ``window`` and ``reduce`` are accepted and not used).

``learners/<module_id>/total_loss`` is what the method returned; PPO's other metrics
(``policy_loss``, ``vf_loss``, ...) are those of its base loss. Learner classes train
single-agent PPO without a recurrent module (on either path, with any number of learners);
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

from rljax.algorithms.ppo.losses import PPOBatch, PPOLossConfig, ppo_loss
from rljax.core.columns import Columns

#: RLlib's ``ppo_learner`` metric names (the keys of ``learners/<module_id>/...``).
LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY = "vf_loss_unclipped"
LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY = "vf_explained_var"
LEARNER_RESULTS_KL_KEY = "mean_kl_loss"
LEARNER_RESULTS_CURR_KL_COEFF_KEY = "curr_kl_coeff"
LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY = "curr_entropy_coeff"


class _Step(NamedTuple):
    """What the minibatch step being traced gives the learner (``PPOLearner._tracing``)."""

    module_id: str
    params: Any
    batch: PPOBatch
    dist: Any
    kl_coeff: jax.Array
    loss_cfg: PPOLossConfig


class ModuleParameters:
    """One module's parameters in the minibatch step being traced (``learner.module[id]``)."""

    def __init__(self, module_id: str, params: Any):
        self.module_id = module_id
        self.params = params

    def parameters(self) -> list[jax.Array]:
        """The parameter arrays (PyTorch's ``module.parameters()``)."""
        return list(jax.tree.leaves(self.params))


class _Modules:
    """``learner.module``: ``module[module_id]`` while a loss is traced."""

    def __init__(self, learner: PPOLearner):
        self._learner = learner

    def __getitem__(self, module_id: str) -> ModuleParameters:
        step = self._learner._step
        if step is None:
            raise RuntimeError(
                "learner.module[...] holds a module's parameters only inside "
                "compute_loss_for_module (rljax's learners keep no module between steps)"
            )
        if module_id != step.module_id:
            raise KeyError(f"module {module_id!r}: this step trains {step.module_id!r}")
        return ModuleParameters(module_id, step.params)

    def keys(self) -> list[str]:
        step = self._learner._step
        return [] if step is None else [step.module_id]


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
    "make_loss_hook",
]
