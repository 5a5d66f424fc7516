"""What the algorithms that learn from offline data (BC, MARWIL, CQL) share: the settings they
refuse alike, the gradient steps of a ``train()``, and its ``IterationResult``."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rljax.types import IterationResult, Timers


def offline_refusal(config: Any, *checks: Callable[[Any], str | None]) -> str | None:
    """Why ``config`` cannot learn from offline data here, or None: no ``input_``, a
    multi-agent config, several learners, then each of the algorithm's own ``checks``, then an
    ``output`` (nothing is sampled to record)."""
    if config.input_ is None:
        return (
            "learns from offline data: set .offline_data(input_=PATH) to Parquet files of env "
            "steps (offline_data(output=...) of any rljax algorithm records them)"
        )
    if config.is_multi_agent:
        return "multi-agent configs are not built; it trains one policy"
    if config.num_learners > 1:
        return f"num_learners={config.num_learners}: it trains on one learner device"
    for check in checks:
        why = check(config)
        if why is not None:
            return why
    if config.output is not None:
        return "offline_data(output=...) records sampled episodes; it samples none while training"
    return None


def updates_per_train(config: Any, num_rows: int) -> int:
    """``dataset_num_iters_per_learner``, or (None) the batches of one pass over the rows."""
    batch = config.train_batch_size_per_learner
    return int(config.dataset_num_iters_per_learner or math.ceil(num_rows / batch))


def offline_iteration(
    policy_id: str, metrics: Mapping[str, Any], rows: int, elapsed: float
) -> IterationResult:
    """A ``train()`` of gradient steps on ``rows`` offline rows: they count as sampled and
    trained; no episode ended (evaluation runs the env)."""
    return IterationResult(
        num_env_steps_sampled=rows,
        num_env_steps_trained=rows,
        episode_returns=np.zeros(0, np.float32),
        episode_lens=np.zeros(0, np.int32),
        learner_metrics={policy_id: {k: float(v) for k, v in metrics.items()}},
        timers=Timers(training_step=elapsed, learner_update_timer=elapsed),
    )


__all__ = ["offline_iteration", "offline_refusal", "updates_per_train"]
