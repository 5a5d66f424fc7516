"""The multi-agent PPO config of RLlib's self-play examples, for the tests: ``main`` learns
against a ``random`` module on an OpenSpiel game (``OpenSpielEnv``)."""

from __future__ import annotations

from collections.abc import Callable

from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.rl_module import RLModuleSpec
from rljax.examples.rl_modules.classes.random_rlm import RandomRLModule


def main_vs_random(env: str, mapping: Callable[..., str], hidden: int, batch: int) -> PPOConfig:
    """PPO on ``env`` with ``main`` (trained, one hidden layer of ``hidden``) and ``random``
    (a ``RandomRLModule``), agents mapped by ``mapping``, batches of ``batch`` rows."""
    return (
        PPOConfig()
        .environment(env)
        .env_runners(num_envs_per_env_runner=4)
        .multi_agent(
            policies={"main", "random"}, policy_mapping_fn=mapping, policies_to_train=["main"]
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "main": RLModuleSpec(),
                    "random": RLModuleSpec(module_class=RandomRLModule),
                }
            ),
            model_config={"fcnet_hiddens": [hidden]},
        )
        .training(train_batch_size_per_learner=batch, minibatch_size=batch // 2, num_epochs=1)
        .debugging(seed=0)
    )
