"""PPO's networks: the action distribution and the actor-critic Flax module a config asks for."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rljax.networks.distributions import make_distribution
from rljax.networks.models import build_module


def build_policy(observation_space: gym.Space, action_space: gym.Space, cfg: Any):
    """The action distribution and the actor-critic Flax module a PPO config asks for.

    ``cfg`` is a ``PPOConfig`` (or a policy's config of a multi-agent run): its
    ``model_config`` and ``rl_module_spec`` are read.
    """
    dist = make_distribution(action_space, cfg.model_config.log_std_clip_param)
    module = build_module(
        observation_space,
        dist.num_outputs,
        isinstance(action_space, gym.spaces.Box),
        cfg.model_config,
        cfg.rl_module_spec,
    )
    return dist, module


__all__ = ["build_policy"]
