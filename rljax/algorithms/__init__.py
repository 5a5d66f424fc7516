"""Algorithms: RLlib's module paths (``rljax.algorithms.ppo.PPOConfig``)."""

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.algorithm_config import AlgorithmConfig

__all__ = ["Algorithm", "AlgorithmConfig"]
