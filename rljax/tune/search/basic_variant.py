"""``BasicVariantGenerator``, Tune's default search algorithm, by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from rljax.utils.errors import ConfigError


class BasicVariantGenerator:
    """Grid and random variants of the ``param_space`` (Tune's ``BasicVariantGenerator``).

    What ``TuneConfig(search_alg=None)`` already does (``rljax.tune.generate_variants``): every
    grid point, the grid repeated ``num_samples`` times, the other search spaces drawn anew per
    variant. Given as ``TuneConfig(search_alg=BasicVariantGenerator(...))`` it is folded into
    that config: ``random_state`` becomes ``TuneConfig.seed`` and ``max_concurrent`` bounds
    ``TuneConfig.max_concurrent_trials``; ``search_alg`` then reads None (the same generator).

    Args:
      points_to_evaluate: Tune's configs to run first; only None is taken here.
      max_concurrent: At most this many trials at once (0: no bound of its own).
      constant_grid_search: Tune's option to draw the random values once for all grid points;
        only False (a fresh draw per variant) is taken here.
      random_state: An int seed, or a numpy ``Generator`` / ``RandomState`` from which one int
        seed is drawn; None: unseeded (or ``TuneConfig.seed``).
    """

    def __init__(
        self,
        points_to_evaluate: list[dict[str, Any]] | None = None,
        max_concurrent: int = 0,
        constant_grid_search: bool = False,
        random_state: int | np.random.Generator | np.random.RandomState | None = None,
    ):
        if points_to_evaluate:
            raise ConfigError(
                "BasicVariantGenerator(points_to_evaluate=...) is not supported; put the "
                "configs to try into the param_space as tune.grid_search values"
            )
        if constant_grid_search:
            raise ConfigError(
                "BasicVariantGenerator(constant_grid_search=True) is not supported: each "
                "variant draws its random values anew"
            )
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int):
            raise ConfigError(
                f"BasicVariantGenerator(max_concurrent={max_concurrent!r}): use an int >= 0"
            )
        if max_concurrent < 0:
            raise ConfigError(
                f"BasicVariantGenerator(max_concurrent={max_concurrent!r}): use an int >= 0"
            )
        self.max_concurrent = max_concurrent
        self.seed = self._seed(random_state)

    @staticmethod
    def _seed(random_state: Any) -> int | None:
        if random_state is None:
            return None
        if isinstance(random_state, np.random.Generator):
            return int(random_state.integers(2**31))
        if isinstance(random_state, np.random.RandomState):
            return int(random_state.randint(2**31))
        if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
            if random_state < 0:
                raise ConfigError(
                    f"BasicVariantGenerator(random_state={random_state!r}): use an int >= 0"
                )
            return int(random_state)
        raise ConfigError(
            f"BasicVariantGenerator(random_state={random_state!r}): use an int, a numpy "
            "Generator or RandomState, or None"
        )

    def __repr__(self) -> str:
        return f"BasicVariantGenerator(max_concurrent={self.max_concurrent}, seed={self.seed})"


__all__ = ["BasicVariantGenerator"]
