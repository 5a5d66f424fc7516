"""Learner devices: the data-parallel mesh that replaces RLlib's Learner actors."""
