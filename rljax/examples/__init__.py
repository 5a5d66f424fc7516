"""Example environments under RLlib's import paths (``ray.rllib.examples`` ->
``rljax.examples``)."""
