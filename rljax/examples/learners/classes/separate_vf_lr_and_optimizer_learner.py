"""RLlib's example learner of
``ray.rllib.examples.learners.classes.separate_vf_lr_and_optimizer_learner`` at its path, in
JAX: PPO with two optimizers, one for the policy network (at ``config.lr``) and one for the
value network (at ``learner_config_dict["lr_vf"]``), the class RLlib's
``separate_vf_lr_and_optimizer.py`` trains with."""

from __future__ import annotations

from typing import Any

from rljax.algorithms.ppo.ppo_learner import PPOLearner


class PPOTorchLearnerWithSeparateVfOptimizer(PPOLearner):
    """RLlib's ``PPOTorchLearnerWithSeparateVfOptimizer``, written for rljax (its name kept, so
    RLlib's script runs with its imports renamed): the policy's encoder and head in one
    optimizer at ``config.lr``, the value function's encoder and head in another at
    ``config.learner_config_dict.get("lr_vf", config.lr)``. The networks must be separate
    (``vf_share_layers=False``), as RLlib's class asserts; PPO's loss is unchanged, so each
    optimizer steps on its own network's gradients."""

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        module = self.module[module_id]
        if config.model_config["vf_share_layers"]:
            raise ValueError(
                "PPOTorchLearnerWithSeparateVfOptimizer needs separate policy and value "
                "networks: model_config vf_share_layers=False"
            )
        pi_params = self.get_parameters(module.pi_encoder) + self.get_parameters(module.pi)
        self.register_optimizer(
            module_id=module_id,
            optimizer_name="optim_for_pi",
            params=pi_params,
            lr_or_lr_schedule=config.lr,
        )
        vf_params = self.get_parameters(module.vf_encoder) + self.get_parameters(module.vf)
        self.register_optimizer(
            module_id=module_id,
            optimizer_name="optim_for_vf",
            params=vf_params,
            lr_or_lr_schedule=config.learner_config_dict.get("lr_vf", config.lr),
        )


__all__ = ["PPOTorchLearnerWithSeparateVfOptimizer"]
