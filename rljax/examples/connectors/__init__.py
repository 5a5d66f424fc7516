"""RLlib's ``ray.rllib.examples.connectors`` path: its example connector classes."""
