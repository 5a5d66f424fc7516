"""RLlib's ``EnvRunnerGroup`` at its path (``ray.rllib.env.env_runner_group``)."""

from rljax.algorithms.rllib_surface import EnvRunnerGroup

__all__ = ["EnvRunnerGroup"]
