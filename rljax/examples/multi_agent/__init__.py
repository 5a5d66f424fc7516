"""RLlib's multi-agent example helpers at their path (``ray.rllib.examples.multi_agent``)."""
