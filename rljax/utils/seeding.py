"""The range of seeds and the rule that derives the seeds of runners, env copies and evaluations.

A config's ``seed`` must lie in ``[0, MAX_SEED]``: EnvPool takes int32 seeds, ``numpy.random.seed``
takes at most 2**32 - 1 and JAX's ``PRNGKey`` at most 2**63 - 1, so one range serves them all.
Seeds derived from it (``seed + 1000 * runner + 100_003 * restart`` and the like) wrap around
inside the same range, however many runners, restarts or evaluations a run has.
"""

from __future__ import annotations

MAX_SEED = 2**31 - 1


def derive_seed(seed: int, offset: int) -> int:
    """``seed + offset`` wrapped into ``[0, MAX_SEED]``."""
    return (int(seed) + int(offset)) % (MAX_SEED + 1)


__all__ = ["MAX_SEED", "derive_seed"]
