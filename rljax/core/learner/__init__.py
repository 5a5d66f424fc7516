"""RLlib's ``ray.rllib.core.learner`` path. rljax's learners are the algorithms' own jitted
updates; ``rljax.core.learner.torch.torch_learner.TorchLearner`` is RLlib's PyTorch base, which
raises ``TorchClassError`` where a class built on it is used."""
