"""RLlib's example learner of
``ray.rllib.examples.learners.classes.custom_ppo_loss_fn_learner`` at its path, in JAX: PPO's
loss plus a weight regularizer (``learner_config_dict["regularizer_coeff"]`` times the mean of
the module's parameters), the class RLlib's ``ppo_with_custom_loss_fn.py`` trains with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from rljax.algorithms.ppo.ppo_learner import PPOLearner


class PPOTorchLearnerWithWeightRegularizerLoss(PPOLearner):
    """RLlib's ``PPOTorchLearnerWithWeightRegularizerLoss``, written in JAX (its name kept, so
    RLlib's script runs with its imports renamed): PPO's loss plus
    ``config.learner_config_dict["regularizer_coeff"]`` times the mean over the module's
    parameter arrays of each array's mean, logged as ``learners/<module>/mean_weight``."""

    def compute_loss_for_module(
        self,
        *,
        module_id: str,
        config: Any,
        batch: Mapping[str, jax.Array],
        fwd_out: Mapping[str, jax.Array],
    ) -> jax.Array:
        base_total_loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        parameters = self.get_parameters(self.module[module_id])
        mean_weight = jnp.mean(jnp.stack([w.mean() for w in parameters]))
        self.metrics.log_value(key=(module_id, "mean_weight"), value=mean_weight, window=1)
        return base_total_loss + config.learner_config_dict["regularizer_coeff"] * mean_weight


__all__ = ["PPOTorchLearnerWithWeightRegularizerLoss"]
