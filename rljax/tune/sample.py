"""Search spaces with Ray Tune 2.x's names and semantics (``tune.grid_search``, ``tune.choice``,
``tune.uniform``, ...).

The ``Domain`` classes and their constructors live in ``rljax.utils.search_space``, below the
configs (which keep a search space given to a setter) and this package (which samples them);
this module keeps their Tune import path. See that module for the bounds and semantics.
"""

from __future__ import annotations

from rljax.utils.search_space import (
    Categorical,
    ConfigView,
    Domain,
    Float,
    Function,
    GridSearch,
    Integer,
    Normal,
    UnresolvedValueError,
    as_domain,
    choice,
    grid_search,
    is_grid_dict,
    lograndint,
    loguniform,
    qlograndint,
    qloguniform,
    qrandint,
    qrandn,
    quniform,
    randint,
    randn,
    sample_from,
    uniform,
)

__all__ = [
    "Categorical",
    "ConfigView",
    "Domain",
    "Float",
    "Function",
    "GridSearch",
    "Integer",
    "Normal",
    "UnresolvedValueError",
    "as_domain",
    "choice",
    "grid_search",
    "is_grid_dict",
    "lograndint",
    "loguniform",
    "qlograndint",
    "qloguniform",
    "qrandint",
    "qrandn",
    "quniform",
    "randint",
    "randn",
    "sample_from",
    "uniform",
]
