"""CQL on offline data (``from rljax.algorithms.cql import CQLConfig``)."""

from rljax.algorithms.cql.cql import CQL, CQLConfig

__all__ = ["CQL", "CQLConfig"]
