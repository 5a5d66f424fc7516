"""RLlib's ``ray.rllib.core.learner.torch``: ``TorchLearner`` (using a class built on it raises
``TorchClassError``, ``rljax.utils.torch_classes``)."""

from rljax.core.learner.torch.torch_learner import TorchLearner

__all__ = ["TorchLearner"]
