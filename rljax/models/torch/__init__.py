"""RLlib's ``ray.rllib.models.torch``: the name only (rljax's networks are Flax modules)."""
