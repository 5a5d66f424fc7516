"""``EnvContext``: the ``env_config`` dict a creator receives, with where the env runs."""

from __future__ import annotations

from typing import Any


class EnvContext(dict):
    """A dict of the user's ``env_config`` plus RLlib's ``worker_index``, ``vector_index``,
    ``num_workers`` attributes (worker 0 is the driver; runner threads are 1..n)."""

    def __init__(
        self,
        env_config: dict[str, Any],
        worker_index: int = 0,
        vector_index: int = 0,
        num_workers: int = 0,
    ):
        super().__init__(env_config)
        self.worker_index = worker_index
        self.vector_index = vector_index
        self.num_workers = num_workers

    def __reduce__(self):  # keep the attributes when sent to a worker process
        return (EnvContext, (dict(self), self.worker_index, self.vector_index, self.num_workers))
