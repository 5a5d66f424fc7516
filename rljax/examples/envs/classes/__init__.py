"""Example environment classes (as ``ray.rllib.examples.envs.classes``)."""
