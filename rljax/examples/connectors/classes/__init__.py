"""RLlib's example connector classes at their paths: the observation preprocessor runs on
multi-agent PPO, the protobuf decoder in each gymnasium env (a ``ConnectorV2`` piece); the
curiosity pieces are learner connectors, which refuse where they are used."""
