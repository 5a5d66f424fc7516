"""What the algorithms that learn from offline data (BC, MARWIL, CQL, IQL) share: the settings
they refuse alike, the gradient steps of a ``train()``, its ``IterationResult``, and RLlib's
offline evaluation of the loss (``OfflineLossEvaluation``)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

from rljax.types import IterationResult, Timers
from rljax.utils.errors import ConfigError


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


class OfflineLossEvaluation:
    """RLlib's offline evaluation of type ``"eval_loss"``: the training loss of the current
    weights on ``num_iters`` batches of ``batch_size`` offline rows, drawn afresh each time
    from a key of its own (training's batches are not disturbed), in RLlib's layout
    (``Algorithm.evaluate_offline()``; every ``interval`` iterations with
    ``evaluation(offline_evaluation_interval=...)``).

    Args:
      interval: ``offline_evaluation_interval`` (None or 0: only when asked).
      batch_size, num_iters: ``offline_eval_batch_size_per_runner`` and
        ``dataset_num_iters_per_offline_eval_runner``.
      eval_fn: ``eval_fn(state, key) -> metrics`` with ``"total_eval_loss"``, jitted here
        (compiled at its first call).
      seed: The key's seed.
    """

    def __init__(
        self,
        interval: int | None,
        batch_size: int,
        num_iters: int,
        eval_fn: Callable[[Any, jax.Array], Mapping[str, Any]],
        seed: int,
    ):
        self.interval, self.batch_size, self.num_iters = interval, batch_size, num_iters
        self._eval = jax.jit(eval_fn)
        self._key = jax.random.PRNGKey(seed)
        self.count = 0

    @property
    def rows_lifetime(self) -> int:
        """The offline rows evaluated on so far (a checkpoint keeps ``count``)."""
        return self.count * self.batch_size * self.num_iters

    @classmethod
    def for_config(
        cls,
        config: Any,
        num_rows: int,
        make: Callable[[int, int], Callable[[Any, jax.Array], Mapping[str, Any]]],
    ) -> OfflineLossEvaluation | None:
        """The evaluation of ``config``'s settings, with ``make(batch_size, num_iters)``
        building its ``eval_fn``; None where the data hold fewer rows than one batch and
        ``offline_evaluation_interval`` is unset.

        Raises:
          ConfigError: ``offline_evaluation_interval`` is set and the data hold fewer rows than
            one batch.
        """
        batch = int(config.offline_eval_batch_size_per_runner)
        if num_rows < batch:
            if config.offline_evaluation_interval:
                raise ConfigError(
                    f"{config.algo_name}: the offline data hold {num_rows} rows, fewer than "
                    f"offline_eval_batch_size_per_runner={batch}; lower it"
                )
            return None
        iters = int(config.dataset_num_iters_per_eval_runner)
        return cls(
            config.offline_evaluation_interval,
            batch,
            iters,
            make(batch, iters),
            int(config.seed or 0) + 104_729,
        )

    def run(self, policy_id: str, state: Any, weights_seq_no: int) -> dict[str, Any]:
        """One evaluation of ``state``'s weights: RLlib's ``offline_eval_runners`` entry."""
        start = time.perf_counter()
        self.count += 1
        key = jax.random.fold_in(self._key, self.count)
        metrics = {k: float(v) for k, v in jax.device_get(self._eval(state, key)).items()}
        rows = self.batch_size * self.num_iters
        steps = {
            "num_module_steps_sampled": rows,
            "num_module_steps_sampled_lifetime": self.rows_lifetime,
        }
        return {
            policy_id: {
                **metrics,
                **steps,
                "module_sample_batch_size_mean": float(self.batch_size),
                "weights_seq_no": float(weights_seq_no),
            },
            "__all_modules__": {
                **steps,
                "num_env_steps_sampled": rows,
                "num_env_steps_sampled_lifetime": self.rows_lifetime,
                "dataset_num_iters_evaluated": self.num_iters,
                "dataset_num_iters_evaluated_lifetime": self.num_iters * self.count,
            },
            "weights_seq_no": float(weights_seq_no),
            "offline_sampling_timer": time.perf_counter() - start,
        }


__all__ = [
    "OfflineLossEvaluation",
    "offline_iteration",
    "offline_refusal",
    "updates_per_train",
]
