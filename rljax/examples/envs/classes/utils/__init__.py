"""Helpers of the example envs (RLlib's ``ray.rllib.examples.envs.classes.utils``)."""
