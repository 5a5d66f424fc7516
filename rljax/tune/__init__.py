"""Tuning with Ray Tune's API: the first part, search spaces and variant generation.

Built: the search spaces (``grid_search``, ``choice``, ``uniform``, ``quniform``, ``loguniform``,
``randint``, ``qrandint``, ``randn``, ``sample_from``) with Tune's semantics,
``generate_variants(param_space, num_samples, seed)``, and search spaces inside a config's setters
(``PPOConfig().training(lr=tune.grid_search([1e-3, 1e-4]))``; ``config.search_space()``,
``config.copy().update_from_dict(variant)``). Not built yet: ``Tuner``, ``TuneConfig``,
``RunConfig``, schedulers, search algorithms, and trials trained as one population.

Example::

    from rljax import tune

    variants = tune.generate_variants(
        {"lr": tune.grid_search([1e-3, 1e-4]), "gamma": tune.uniform(0.95, 0.999)},
        num_samples=2,
        seed=0,
    )  # 4 dicts
"""

from rljax.tune.sample import (
    Categorical,
    ConfigView,
    Domain,
    Float,
    Function,
    GridSearch,
    Integer,
    Normal,
    choice,
    grid_search,
    loguniform,
    qrandint,
    quniform,
    randint,
    randn,
    sample_from,
    uniform,
)
from rljax.tune.variants import check_search_spaces, find_search_spaces, generate_variants

__all__ = [
    "Categorical",
    "ConfigView",
    "Domain",
    "Float",
    "Function",
    "GridSearch",
    "Integer",
    "Normal",
    "check_search_spaces",
    "choice",
    "find_search_spaces",
    "generate_variants",
    "grid_search",
    "loguniform",
    "qrandint",
    "quniform",
    "randint",
    "randn",
    "sample_from",
    "uniform",
]
