"""PPO (``from rljax.algorithms.ppo import PPOConfig``), and ``PPOLearner``, the class a
script subclasses to change PPO's loss (``.training(learner_class=...)``)."""

from rljax.algorithms.ppo.ppo import PPO, PPOConfig
from rljax.algorithms.ppo.ppo_learner import PPOLearner

__all__ = ["PPO", "PPOConfig", "PPOLearner"]
