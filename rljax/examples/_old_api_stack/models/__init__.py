"""RLlib's old-API-stack example models, as Flax modules."""
