"""What refusing an untrusted input may cost, for the tables of crafted inputs
(``tests/test_untrusted_*.py``): nothing compiled, under 2 s, under 300 MB more peak memory."""

from __future__ import annotations

import contextlib
import dataclasses
import resource
import time
from collections.abc import Iterator

import jax

# XLA compilations in this process so far.
COMPILES = {"n": 0}


def _count(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES["n"] += 1


jax.monitoring.register_event_duration_secs_listener(_count)


@dataclasses.dataclass
class Cost:
    """What the block ``measured()`` wraps took."""

    compiles: int = 0
    seconds: float = 0.0
    grown_kib: int = 0  # of the process's peak resident memory

    def check(self, name: str) -> None:
        """Asserts a refusal's budget: under 2 s, no compilation, under 300,000 KiB."""
        assert self.seconds < 2.0, f"{name}: {self.seconds:.2f} s"
        assert self.compiles == 0, f"{name}: compiled before failing"
        assert self.grown_kib < 300_000, f"{name}: peak memory grew by {self.grown_kib} KiB"


@contextlib.contextmanager
def measured() -> Iterator[Cost]:
    """The time, compilations and peak-memory growth of the block, in the ``Cost`` it yields
    (filled when the block ends)."""
    cost = Cost()
    compiles = COMPILES["n"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    start = time.perf_counter()
    yield cost
    cost.seconds = time.perf_counter() - start
    cost.compiles = COMPILES["n"] - compiles
    cost.grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
