"""RLlib's old-API-stack example policies at their path."""
