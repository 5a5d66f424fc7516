"""Connectors between the env and the module (RLlib's ``ray.rllib.connectors`` paths)."""
