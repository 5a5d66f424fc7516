"""RLlib's ``ConnectorV2`` base at its path (``ray.rllib.connectors.connector_v2``).

A subclass given to ``.env_runners(env_to_module_connector=...)`` runs on the host, in each
gymnasium sub-env, reading the episode as RLlib's pieces do
(``rljax.connectors.env_to_module.episode_connector``); rljax's learner connectors are built
into each algorithm's jitted update, so one given as a learner connector is refused.
"""

from __future__ import annotations

from rljax.connectors.env_to_module.episode_connector import ConnectorV2

__all__ = ["ConnectorV2"]
