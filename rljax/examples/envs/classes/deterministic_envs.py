"""RLlib's ``deterministic_envs`` (``ray.rllib.examples.envs.classes.deterministic_envs``):
env creators that seed their env once when made."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


def create_cartpole_deterministic(config: dict[str, Any]) -> gym.Env:
    """CartPole-v1, reset once with ``config["seed"]`` (0 by default) so its generator is
    seeded."""
    env = gym.make("CartPole-v1")
    env.reset(seed=config.get("seed", 0))
    return env


def create_pendulum_deterministic(config: dict[str, Any]) -> gym.Env:
    """Pendulum-v1, reset once with ``config["seed"]`` (0 by default) so its generator is
    seeded."""
    env = gym.make("Pendulum-v1")
    env.reset(seed=config.get("seed", 0))
    return env


__all__ = ["create_cartpole_deterministic", "create_pendulum_deterministic"]
