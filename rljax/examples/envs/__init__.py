"""Example environments (as ``ray.rllib.examples.envs``)."""
