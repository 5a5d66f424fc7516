"""IQL on offline data (``from rljax.algorithms.iql import IQLConfig``)."""

from rljax.algorithms.iql.iql import IQL, IQLConfig

__all__ = ["IQL", "IQLConfig"]
