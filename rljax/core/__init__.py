"""Core building blocks shared by every algorithm (RLlib's ``ray.rllib.core`` paths)."""
