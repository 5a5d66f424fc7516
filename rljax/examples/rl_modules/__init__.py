"""RLlib's example RL modules (``ray.rllib.examples.rl_modules``)."""
