"""Search algorithms with Ray Tune 2.x's names: ``Searcher`` (what ``Tuner`` calls),
``ConcurrencyLimiter`` and ``OptunaSearch`` (``rljax.tune.search.optuna``, Tune's path).

Given as ``TuneConfig(search_alg=...)``, a searcher makes the trials: ``num_samples``
suggestions, each asked when the trial starts (after the earlier trials' results were told), not
``generate_variants``. Tune's default ``BasicVariantGenerator`` is not a class here: leaving
``search_alg`` unset gives its behaviour (``generate_variants``).
"""

from rljax.tune.search.optuna import OptunaSearch
from rljax.tune.search.searcher import ConcurrencyLimiter, Searcher

__all__ = ["ConcurrencyLimiter", "OptunaSearch", "Searcher"]
