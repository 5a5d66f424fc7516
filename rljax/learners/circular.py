"""APPO's circular buffer (IMPACT, Luo et al. 2020) as it runs here: each train batch serves K
updates in a row.

RLlib's APPO learner draws batches at random from a buffer of the last N train batches
(``circular_buffer_num_batches``), dropping the oldest when a new one comes and any batch drawn K
times (``circular_buffer_iterations_per_batch``). A learner faster than its runners therefore
finds one live batch, the newest, draws it K times and waits for the next: K updates per batch.
rljax's learner is that learner by construction, since it updates once a batch is ready and only
then (in the driver, or its learner thread, which never runs ahead of the batches): the buffer
would only ever hold one live batch. So the K updates run back to back on the new batch, inside
the one jitted update, and no buffer of N batches is kept; N still sets RLlib's unit for
``target_network_update_freq``. Where the learner is the slower side the two differ: RLlib's
buffer drops batches before their K uses and the learner trains on the fresher ones, while
rljax's runners wait (``max_requests_in_flight_per_env_runner``) and every batch serves K
updates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import jax
import jax.numpy as jnp

State = TypeVar("State")
Batch = Any
Metrics = dict[str, jax.Array]


def reduce_steps(metrics: Mapping[str, jax.Array]) -> Metrics:
    """Metrics of several updates, stacked along a leading step axis, as one update reports
    them: means over the steps, except counts (``num_*``), which add up."""
    return {k: (jnp.sum if k.startswith("num_") else jnp.mean)(v) for k, v in metrics.items()}


def make_repeated_update(
    update: Callable[[State, Batch], tuple[State, Metrics]], iterations: int
) -> Callable[[State, Batch], tuple[State, Metrics]]:
    """``update(state, batch)`` run ``iterations`` times on the batch, unrolled.

    Metrics are the means over the updates, except counts (``num_*``), which add up.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1; got {iterations}")
    if iterations == 1:
        return update

    def repeated(state: State, batch: Batch) -> tuple[State, Metrics]:
        # Unrolled, not a lax.scan: K is small, and XLA's CPU convolutions ran many times slower
        # inside a loop (a Nature-CNN APPO iteration took 14x as long scanned; measured before
        # the networks' convs took their CPU form, models.patch_conv).
        steps = []
        for _ in range(iterations):
            state, metrics = update(state, batch)
            steps.append(metrics)
        return state, reduce_steps({k: jnp.stack([m[k] for m in steps]) for k in steps[0]})

    return repeated


__all__ = ["make_repeated_update", "reduce_steps"]
