"""RLlib's example connector classes at their paths: the observation preprocessor runs on
multi-agent PPO; the ``ConnectorV2`` pieces refuse where they are used."""
