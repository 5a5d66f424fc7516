"""Trial schedulers with Ray Tune 2.x's names: ``FIFOScheduler``, ``ASHAScheduler`` /
``AsyncHyperBandScheduler``, ``HyperBandScheduler`` and ``MedianStoppingRule``.

Given as ``TuneConfig(scheduler=...)``, a scheduler sees every result of every trial and answers
``TrialScheduler.CONTINUE`` or ``TrialScheduler.STOP``; a stopped trial ends after that result
with a normal ``Result``. Decisions depend only on the results reported so far, so they work
whether trials run one after another (rljax's ``Tuner``) or report the same iteration together
(trials trained as one population): each result is judged against the results already seen.
Pausing trials (Tune's ``PAUSE``) is not built.

ASHA and HyperBand are backed by Optuna's pruners (``SuccessiveHalvingPruner``,
``HyperbandPruner``) on in-memory studies, one Optuna trial per rljax trial; Optuna is optional
(``pip install optuna``). ``MedianStoppingRule`` is Tune's rule computed here (Optuna's
``MedianPruner`` compares other values, see its docstring). Metric keys name nested results with
``/`` (``"env_runners/episode_return_mean"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rljax.tune._optuna import quiet_optuna
from rljax.tune.pbt import PopulationBasedTraining
from rljax.tune.trial_scheduler import (
    TrialScheduler,
    _check_int,
    _check_number,
    _check_time_attr,
)
from rljax.utils.errors import ConfigError


class FIFOScheduler(TrialScheduler):
    """Runs every trial to the end (Tune's default scheduler)."""

    needs_metric = False

    def __init__(self, metric: str | None = None, mode: str | None = None):
        super().__init__(metric, mode)


class _PrunerScheduler(TrialScheduler):
    """A scheduler whose decisions are an Optuna pruner's, on in-memory studies (one per
    bracket), one Optuna trial per rljax trial.

    Each result is reported to the trial's Optuna trial at step ``floor(result[time_attr])``
    (Optuna's steps are ints; a later result with the same step is not reported again), and
    ``should_prune()`` decides; trials are stopped once ``time_attr`` reaches ``max_t`` when
    ``stop_last_trials``; after ``max_t`` the pruner is not asked.
    """

    def __init__(
        self,
        time_attr: str,
        metric: str | None,
        mode: str | None,
        max_t: int,
        stop_last_trials: bool,
    ):
        super().__init__(metric, mode)
        name = type(self).__name__
        _check_time_attr(name, time_attr)
        _check_int(name, "max_t", max_t, 1)
        if not isinstance(stop_last_trials, bool):
            raise ConfigError(f"{name}(stop_last_trials={stop_last_trials!r}): use True or False")
        self._time_attr = time_attr
        self._max_t = max_t
        self._stop_last_trials = stop_last_trials
        self._studies: list[Any] = []
        self._trials: dict[str, tuple[int, Any]] = {}
        self._last_step: dict[str, int] = {}
        self._stopped: set[str] = set()
        self._last_value: dict[str, float] = {}

    @property
    def time_attr(self) -> str:
        return self._time_attr

    @property
    def stops_every_trial(self) -> bool:
        return self._stop_last_trials

    @property
    def num_stopped(self) -> int:
        """How many trials this scheduler stopped (``max_t`` included)."""
        return len(self._stopped)

    def _make_pruners(self, optuna: Any) -> list[Any]:
        raise NotImplementedError

    def _study_name(self, bracket: int) -> str:
        return f"rljax-{type(self).__name__}-{bracket}"

    def _bracket_for_new_trial(self) -> int:
        return 0

    def _ensure_studies(self) -> list[Any]:
        if not self._studies:
            _, mode = self._require_metric_mode()
            with quiet_optuna() as optuna:
                self._studies = [
                    optuna.create_study(
                        study_name=self._study_name(i),
                        direction="maximize" if mode == "max" else "minimize",
                        pruner=pruner,
                        sampler=optuna.samplers.RandomSampler(seed=0),
                    )
                    for i, pruner in enumerate(self._make_pruners(optuna))
                ]
        return self._studies

    def on_trial_add(self, trial_id: str) -> None:
        if trial_id in self._trials:
            return
        studies = self._ensure_studies()
        bracket = self._bracket_for_new_trial()
        with quiet_optuna():
            self._trials[trial_id] = (bracket, studies[bracket].ask())
        self._last_step[trial_id] = -1

    def on_trial_result(self, trial_id: str, result: Mapping[str, Any]) -> str:
        if trial_id in self._stopped:
            return self.STOP
        if trial_id not in self._trials:
            self.on_trial_add(trial_id)
        metric, _ = self._require_metric_mode()
        time = self._read(trial_id, result, self._time_attr)
        value = self._read(trial_id, result, metric)
        self._last_value[trial_id] = value
        if self._stop_last_trials and time >= self._max_t:
            self._stopped.add(trial_id)
            return self.STOP
        step = math.floor(time)
        if time > self._max_t or step <= self._last_step[trial_id]:
            return self.CONTINUE
        self._last_step[trial_id] = step
        _, trial = self._trials[trial_id]
        trial.report(value, step)
        if trial.should_prune():
            self._stopped.add(trial_id)
            return self.STOP
        return self.CONTINUE

    def _tell(self, trial_id: str, failed: bool) -> None:
        entry = self._trials.pop(trial_id, None)
        self._last_step.pop(trial_id, None)
        value = self._last_value.pop(trial_id, None)
        if entry is None:
            return
        bracket, trial = entry
        with quiet_optuna() as optuna:
            states = optuna.trial.TrialState
            study = self._studies[bracket]
            if failed or value is None or math.isnan(value):
                study.tell(trial, state=states.FAIL)
            elif trial_id in self._stopped:
                study.tell(trial, state=states.PRUNED)
            else:
                study.tell(trial, value)

    def on_trial_complete(self, trial_id: str, result: Mapping[str, Any] | None = None) -> None:
        self._tell(trial_id, failed=False)

    def on_trial_error(self, trial_id: str) -> None:
        self._tell(trial_id, failed=True)


class AsyncHyperBandScheduler(_PrunerScheduler):
    """Asynchronous successive halving (ASHA; Tune's ``AsyncHyperBandScheduler`` /
    ``ASHAScheduler``), decided by Optuna's ``SuccessiveHalvingPruner``.

    Args:
      time_attr: The result key that measures training time (``training_iteration``,
        ``time_total_s``, ...); it should grow with each result.
      metric: The result key compared (``/`` for nested keys); default ``TuneConfig.metric``.
      mode: ``"min"`` or ``"max"``; default ``TuneConfig.mode``.
      max_t: A trial stops once ``time_attr`` reaches this (with ``stop_last_trials``).
      grace_period: The first rung: no trial stops before ``time_attr`` reaches it.
      reduction_factor: Rungs are at ``grace_period * reduction_factor**k`` (up to ``max_t``);
        at each, about the best ``1/reduction_factor`` of the trials go on.
      brackets: How many brackets; bracket ``s`` starts its rungs at
        ``grace_period * reduction_factor**s``. A trial joins a bracket at random with Tune's
        weights (a softmax of the brackets' number of rungs), from a generator seeded with 0.
      stop_last_trials: Stop trials at ``max_t`` (Tune's default); False lets them run on.

    A trial that reaches a rung is compared with every trial that reached that rung before it
    (running, finished or stopped), by its value at that result. Where Optuna's pruner differs
    from Tune's ASHA: Optuna's trial goes on when its value ranks among the best
    ``max(1, n // reduction_factor)`` of the ``n`` values recorded at the rung, its own
    included, ties going on; Tune's goes on when its value is not below the
    ``(1 - 1/reduction_factor)`` quantile (linearly interpolated) of the values recorded before
    it. The two agree for the first two trials at a rung; after that Optuna's is usually the
    stricter (with ``reduction_factor=4`` the 3rd and 4th trials at a rung must be at least as
    good as every trial before them, where Tune's need only reach the interpolated 75th
    percentile). A result
    that jumps past several rungs is recorded at each (Tune records the highest only).
    ``grace_period``, ``max_t`` and ``reduction_factor`` are ints (Optuna's rungs are integer
    steps; a float ``time_attr`` is floored).
    """

    def __init__(
        self,
        time_attr: str = "training_iteration",
        metric: str | None = None,
        mode: str | None = None,
        max_t: int = 100,
        grace_period: int = 1,
        reduction_factor: int = 4,
        brackets: int = 1,
        stop_last_trials: bool = True,
    ):
        super().__init__(time_attr, metric, mode, max_t, stop_last_trials)
        name = type(self).__name__
        _check_int(name, "grace_period", grace_period, 1)
        _check_int(name, "reduction_factor", reduction_factor, 2)
        _check_int(name, "brackets", brackets, 1)
        if grace_period > max_t:
            raise ConfigError(
                f"{name}(grace_period={grace_period!r}, max_t={max_t!r}): use grace_period <= max_t"
            )
        self._grace_period = grace_period
        self._reduction_factor = reduction_factor
        self._num_brackets = brackets
        # Tune's weights: a softmax of each bracket's number of rungs.
        rungs = np.array([len(self.rungs(s)) for s in range(brackets)], dtype=float)
        weights = np.exp(rungs - rungs.max())
        self._weights = weights / weights.sum()
        self._rng = np.random.default_rng(0)

    def rungs(self, bracket: int = 0) -> list[int]:
        """The ``time_attr`` values where trials of ``bracket`` are compared."""
        out, t = [], self._grace_period * self._reduction_factor**bracket
        while t <= self._max_t:
            out.append(t)
            t *= self._reduction_factor
        return out

    def bracket_of(self, trial_id: str) -> int:
        """The bracket a running trial was added to (0 to ``brackets - 1``)."""
        return self._trials[trial_id][0]

    def _make_pruners(self, optuna: Any) -> list[Any]:
        return [
            optuna.pruners.SuccessiveHalvingPruner(
                min_resource=self._grace_period,
                reduction_factor=self._reduction_factor,
                min_early_stopping_rate=s,
                bootstrap_count=0,
            )
            for s in range(self._num_brackets)
        ]

    def _bracket_for_new_trial(self) -> int:
        if self._num_brackets == 1:
            return 0
        return int(self._rng.choice(self._num_brackets, p=self._weights))


ASHAScheduler = AsyncHyperBandScheduler


class HyperBandScheduler(_PrunerScheduler):
    """HyperBand (Tune's ``HyperBandScheduler`` name), decided by Optuna's asynchronous
    ``HyperbandPruner``.

    Args:
      time_attr: The result key that measures training time; it should grow with each result.
      metric: The result key compared (``/`` for nested keys); default ``TuneConfig.metric``.
      mode: ``"min"`` or ``"max"``; default ``TuneConfig.mode``.
      max_t: The most ``time_attr`` a trial gets; trials stop there (with ``stop_last_trials``).
      reduction_factor: The brackets' halving rate.
      stop_last_trials: Stop trials at ``max_t`` (Tune's default); False lets them run on.

    Where this differs from Tune's: Tune's HyperBand is synchronous, it fills a bracket with
    trials, pauses each at a rung until all have reached it, then keeps the best
    ``1/reduction_factor``. rljax pauses no trial; Optuna's ``HyperbandPruner`` instead runs
    ``floor(log_rf(max_t)) + 1`` successive-halving brackets side by side (rungs from 1 up to
    ``max_t``), puts each trial in one by a hash of its number (Optuna's budget weights), and
    judges a trial at a rung against the trials of its bracket that reached that rung before it
    (as ``ASHAScheduler`` does). ``max_t`` and ``reduction_factor`` are ints.
    """

    def __init__(
        self,
        time_attr: str = "training_iteration",
        metric: str | None = None,
        mode: str | None = None,
        max_t: int = 81,
        reduction_factor: int = 3,
        stop_last_trials: bool = True,
    ):
        super().__init__(time_attr, metric, mode, max_t, stop_last_trials)
        _check_int(type(self).__name__, "reduction_factor", reduction_factor, 2)
        self._reduction_factor = reduction_factor

    def _make_pruners(self, optuna: Any) -> list[Any]:
        return [
            optuna.pruners.HyperbandPruner(
                min_resource=1,
                max_resource=self._max_t,
                reduction_factor=self._reduction_factor,
                bootstrap_count=0,
            )
        ]


class MedianStoppingRule(TrialScheduler):
    """Stops a trial whose best result is worse than the median of the other trials' running
    means (Tune's ``MedianStoppingRule``, the Vizier paper's rule).

    Args:
      time_attr: The result key that measures training time; it should grow with each result.
      metric: The result key compared (``/`` for nested keys); default ``TuneConfig.metric``.
      mode: ``"min"`` or ``"max"``; default ``TuneConfig.mode``.
      grace_period: No trial stops before ``time_attr`` reaches this; the running means start
        here.
      min_samples_required: How many other trials must have reached the time to compare with.
      min_time_slice: Accepted for Tune's signature; in Tune it only decides when a trial
        yields to paused ones, and rljax pauses none.
      hard_stop: Must be True (stop); Tune's False pauses trials, which is not built.

    At a result at time ``t >= grace_period``, the others are the trials whose last result so far
    is at ``t`` or later (running ones included). Each one's running mean is the mean of its
    results with ``grace_period <= time <= t`` (a trial with no result in that window is left
    out); when at least ``min_samples_required`` others remain, the trial stops if its best
    result so far is strictly worse than their median.

    Not Optuna's ``MedianPruner``: that one compares a trial's best value with completed trials'
    values at the same step (not their running means, and running trials left out), so Tune's
    rule is computed here with numpy.
    """

    def __init__(
        self,
        time_attr: str = "time_total_s",
        metric: str | None = None,
        mode: str | None = None,
        grace_period: float = 60.0,
        min_samples_required: int = 3,
        min_time_slice: float = 0,
        hard_stop: bool = True,
    ):
        super().__init__(metric, mode)
        name = type(self).__name__
        _check_time_attr(name, time_attr)
        _check_number(name, "grace_period", grace_period, 0)
        _check_int(name, "min_samples_required", min_samples_required, 1)
        _check_number(name, "min_time_slice", min_time_slice, 0)
        if hard_stop is not True:
            raise NotImplementedError(
                f"{name}(hard_stop={hard_stop!r}): pausing trials is not built in rljax; use "
                "hard_stop=True (stop them)"
            )
        self._time_attr = time_attr
        self._grace_period = float(grace_period)
        self._min_samples = min_samples_required
        self._min_time_slice = min_time_slice
        self._results: dict[str, list[tuple[float, float]]] = {}
        self._stopped: set[str] = set()

    @property
    def num_stopped(self) -> int:
        return len(self._stopped)

    def on_trial_add(self, trial_id: str) -> None:
        self._results.setdefault(trial_id, [])

    def _running_mean(self, trial_id: str, time: float) -> float | None:
        values = [v for t, v in self._results[trial_id] if self._grace_period <= t <= time]
        return float(np.mean(values)) if values else None

    def on_trial_result(self, trial_id: str, result: Mapping[str, Any]) -> str:
        if trial_id in self._stopped:
            return self.STOP
        metric, mode = self._require_metric_mode()
        time = self._read(trial_id, result, self._time_attr)
        value = self._read(trial_id, result, metric)
        own = self._results.setdefault(trial_id, [])
        own.append((time, value))
        if time < self._grace_period:
            return self.CONTINUE
        means = []
        for other, results in self._results.items():
            if other == trial_id or not results or results[-1][0] < time:
                continue
            mean = self._running_mean(other, time)
            if mean is not None:
                means.append(mean)
        if len(means) < self._min_samples:
            return self.CONTINUE
        median = float(np.median(means))
        values = [v for _, v in own]
        worse = max(values) < median if mode == "max" else min(values) > median
        if worse:
            self._stopped.add(trial_id)
            return self.STOP
        return self.CONTINUE


__all__ = [
    "ASHAScheduler",
    "AsyncHyperBandScheduler",
    "FIFOScheduler",
    "HyperBandScheduler",
    "MedianStoppingRule",
    "PopulationBasedTraining",
    "TrialScheduler",
]
