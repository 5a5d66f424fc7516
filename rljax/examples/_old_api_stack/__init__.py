"""RLlib's old-API-stack example classes at their paths
(``ray.rllib.examples._old_api_stack...`` becomes ``rljax.examples._old_api_stack...``)."""
