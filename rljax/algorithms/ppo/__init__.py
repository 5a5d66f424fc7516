"""PPO (``from rljax.algorithms.ppo import PPOConfig``)."""

from rljax.algorithms.ppo.ppo import PPO, PPOConfig

__all__ = ["PPO", "PPOConfig"]
