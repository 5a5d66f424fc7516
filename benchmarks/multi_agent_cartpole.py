"""Two CartPole agents with a policy each: wall time until both policies' returns reach 400.

RLlib's multi-agent CartPole experiment: ``make_multi_agent("CartPole-v1")`` with two agents,
agent i -> policy "p{i}", 4 multi-agent envs in the driver's runner, PPO (batch 4000 env steps,
minibatch 128, 6 epochs, lr 1e-3, lambda 0.95, clip 0.2, vf coeff 0.5, 64x64 tanh MLPs). The
score is the lower of the two ``env_runners/module_episode_returns_mean`` values. Both variants
use one chained config: only the imports differ. ``--compare`` adds RLlib when installed.

Usage::

    python benchmarks/multi_agent_cartpole.py
    python benchmarks/multi_agent_cartpole.py --compare
"""

from __future__ import annotations

import math
import os
from typing import Any

import off_policy_bench

SETTINGS = {"target_return": 400.0, "max_timesteps": 300_000, "num_envs": 4, "seed": 0}


def agent_to_policy(agent_id, episode, **kwargs):
    return f"p{agent_id}"


def ma_config(config_class: type, env: Any, s: dict[str, Any]) -> Any:
    return (
        config_class()
        .environment(env, env_config={"num_agents": 2})
        .env_runners(num_env_runners=0, num_envs_per_env_runner=s["num_envs"])
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=agent_to_policy)
        .training(
            lr=1e-3,
            train_batch_size_per_learner=4000,
            minibatch_size=128,
            num_epochs=6,
            lambda_=0.95,
            clip_param=0.2,
            vf_loss_coeff=0.5,
            use_kl_loss=False,
            kl_coeff=0.0,
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": [64, 64],
                "fcnet_activation": "tanh",
                "vf_share_layers": False,
            }
        )
        .debugging(seed=s["seed"])
    )


def build(variant: str, s: dict[str, Any]) -> Any:
    if variant == "rljax":
        from rljax.algorithms.ppo import PPOConfig
        from rljax.env import make_multi_agent

        config = ma_config(PPOConfig, make_multi_agent("CartPole-v1"), s)
        return config.training(vf_clip_param=None).build_algo()
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig
    from ray.rllib.env.multi_agent_env import make_multi_agent as rllib_make_multi_agent

    ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    config = ma_config(RLlibPPOConfig, rllib_make_multi_agent("CartPole-v1"), s)
    return config.training(vf_clip_param=float("inf")).build_algo()


def lower_module_return(result: dict[str, Any]) -> float:
    returns = result["env_runners"].get("module_episode_returns_mean", {})
    values = [v for k, v in returns.items() if k in ("p0", "p1")]
    return min(values) if len(values) == 2 else math.nan


if __name__ == "__main__":
    off_policy_bench.main(
        "multi_agent_cartpole",
        os.path.abspath(__file__),
        SETTINGS,
        build,
        score=lower_module_return,
    )
