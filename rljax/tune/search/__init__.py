"""Search algorithms with Ray Tune 2.x's names: ``Searcher`` (what ``Tuner`` calls),
``ConcurrencyLimiter`` and ``OptunaSearch`` (``rljax.tune.search.optuna``, Tune's path).

Given as ``TuneConfig(search_alg=...)``, a searcher makes the trials: ``num_samples``
suggestions, each asked when the trial starts (after the earlier trials' results were told), not
``generate_variants``. Tune's default ``BasicVariantGenerator`` is that behaviour by name
(``rljax.tune.search.basic_variant``): given as ``search_alg`` it sets the seed and the
concurrency bound of ``generate_variants``' trials.
"""

from rljax.tune.search.basic_variant import BasicVariantGenerator
from rljax.tune.search.optuna import OptunaSearch
from rljax.tune.search.searcher import ConcurrencyLimiter, Searcher

__all__ = ["BasicVariantGenerator", "ConcurrencyLimiter", "OptunaSearch", "Searcher"]
