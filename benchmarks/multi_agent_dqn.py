"""Multi-agent DQN on two CartPole agents, a policy each: wall time until the summed return
reaches 300, rljax against RLlib with RLlib's tuned settings.

RLlib's tuned ``multi_agent_cartpole_dqn.py``: ``MultiAgentCartPole`` with two agents, agent i ->
policy "p{i}", lr 6.5e-4, batch 48 per policy, a prioritized buffer of 50,000 (alpha 0.6, beta
0.4), n-step returns drawn from (2, 5), double Q, dueling, epsilon from 1 to 0.02 over 20,000
env steps, 256x256 tanh layers and a 256-unit head; its stop criterion is a summed return of
150 per agent. Both variants sample in the driver (``num_env_runners=0``) from one env and use
one chained config: only the imports differ. ``--compare`` adds RLlib when installed.

Usage::

    python benchmarks/multi_agent_dqn.py
    python benchmarks/multi_agent_dqn.py --compare      # RLlib 2.60 and torch in this venv
"""

from __future__ import annotations

import os
from typing import Any

import off_policy_bench

SETTINGS = {"target_return": 300.0, "max_timesteps": 60_000, "seed": 0}


def agent_to_policy(agent_id, episode, **kwargs):
    return f"p{agent_id}"


def ma_config(config_class: type, env: str, s: dict[str, Any]) -> Any:
    return (
        config_class()
        .environment(env, env_config={"num_agents": 2})
        .env_runners(num_env_runners=0)
        .training(
            lr=0.00065,
            train_batch_size_per_learner=48,
            replay_buffer_config={
                "type": "MultiAgentPrioritizedEpisodeReplayBuffer",
                "capacity": 50000,
                "alpha": 0.6,
                "beta": 0.4,
            },
            n_step=(2, 5),
            double_q=True,
            num_atoms=1,
            dueling=True,
            epsilon=[(0, 1.0), (20000, 0.02)],
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": [256, 256],
                "fcnet_activation": "tanh",
                "head_fcnet_hiddens": [256],
            }
        )
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=agent_to_policy)
        .debugging(seed=s["seed"])
    )


def build(variant: str, s: dict[str, Any]) -> Any:
    if variant == "rljax":
        from rljax import register_env
        from rljax.algorithms.dqn import DQNConfig
        from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole

        register_env("multi_agent_cartpole", lambda cfg: MultiAgentCartPole(config=cfg))
        return ma_config(DQNConfig, "multi_agent_cartpole", s).build_algo()
    import ray
    from ray.rllib.algorithms.dqn import DQNConfig as RLlibDQNConfig
    from ray.rllib.examples.envs.classes.multi_agent import (
        MultiAgentCartPole as RLlibMultiAgentCartPole,
    )
    from ray.tune.registry import register_env as rllib_register_env

    ray.init(include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    rllib_register_env("multi_agent_cartpole", lambda cfg: RLlibMultiAgentCartPole(config=cfg))
    return ma_config(RLlibDQNConfig, "multi_agent_cartpole", s).build_algo()


if __name__ == "__main__":
    off_policy_bench.main("multi_agent_dqn", os.path.abspath(__file__), SETTINGS, build)
