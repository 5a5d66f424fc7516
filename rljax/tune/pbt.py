"""Population-based training (Jaderberg et al., 2017) inside a population of trials.

``PopulationBasedTraining`` takes Ray Tune's arguments. Tune runs PBT over separate trials that
save and restore checkpoints; here the trials are one ``Population`` (one vmapped program), and
at each perturbation the bottom ``quantile_fraction`` of the trials takes the learner state
(parameters, optimizer state, ...) of a trial of the top quantile by a gather on the device
(``Population.exploit``) and explores the settings: nothing restarts or recompiles, since the
mutated settings are values the program reads.

The trials report each iteration together, so every perturbation ranks all active trials at
once (Tune's ``synch=True``). Only the algorithm's population settings can be mutated
(PPO's ``lr``, ``entropy_coeff``, ``clip_param``, ``gamma``, ...); a trial keeps its seed and
its envs.

Example:
    ```python
    scheduler = tune.schedulers.PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=5,
        hyperparam_mutations={"lr": tune.loguniform(1e-5, 1e-2), "entropy_coeff": [0.0, 0.01]},
    )
    tune.Tuner("PPO", param_space=config, tune_config=tune.TuneConfig(
        metric="env_runners/episode_return_mean", mode="max", scheduler=scheduler,
        num_samples=8)).fit()
    ```
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rljax.tune.sample import Domain, as_domain
from rljax.tune.stopper import flatten
from rljax.tune.trial_scheduler import TrialScheduler
from rljax.utils.errors import ConfigError


class PopulationBasedTraining(TrialScheduler):
    """Ray Tune's ``PopulationBasedTraining``, run inside a population (see the module doc).

    Given as ``TuneConfig(scheduler=...)``, it needs trials that train as one population
    (``Tuner`` refuses it otherwise, before anything builds); per result it answers
    ``CONTINUE``, and after each iteration of the population ``perturb`` exploits and explores.

    Args:
      time_attr: The result key that measures progress (``"training_iteration"``,
        ``"time_total_s"``, ``"num_env_steps_sampled_lifetime"``, ...).
      metric, mode: What ranks the trials; default: ``TuneConfig``'s.
      perturbation_interval: A perturbation happens each time ``time_attr`` has grown by this
        much since the last one.
      burn_in_period: No perturbation before ``time_attr`` reaches this.
      hyperparam_mutations: ``{setting: how to explore}``, where how is a search space
        (``tune.uniform``, ``tune.loguniform``, ...), a list of values, or a function
        returning a value.
      quantile_fraction: The fraction of trials in the bottom quantile (they exploit) and in
        the top one (the sources), in [0, 0.5].
      resample_probability: The chance that exploring draws a new value from the space
        instead of perturbing the current one.
      perturbation_factors: A perturbed number is multiplied by one of these, at random.
      custom_explore_fn: Called with the explored ``{setting: value}`` dict; returns it
        (changed as it likes).
      seed: The seed of the choices PBT makes (None: unseeded).
    """

    def __init__(
        self,
        time_attr: str = "time_total_s",
        metric: str | None = None,
        mode: str | None = None,
        perturbation_interval: float = 60.0,
        burn_in_period: float = 0.0,
        hyperparam_mutations: Mapping[str, Any] | None = None,
        quantile_fraction: float = 0.25,
        resample_probability: float = 0.25,
        perturbation_factors: tuple[float, float] = (1.2, 0.8),
        custom_explore_fn: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        log_config: bool = True,
        require_attrs: bool = True,
        synch: bool = False,
        seed: int | None = None,
    ):
        if not hyperparam_mutations and custom_explore_fn is None:
            raise ConfigError(
                "PopulationBasedTraining needs hyperparam_mutations (a dict of setting -> search "
                "space, list or function) or a custom_explore_fn"
            )
        if not (0 <= quantile_fraction <= 0.5):
            raise ConfigError(
                f"PopulationBasedTraining(quantile_fraction={quantile_fraction!r}): must be in "
                "[0, 0.5]"
            )
        if not (0 <= resample_probability <= 1):
            raise ConfigError(
                f"PopulationBasedTraining(resample_probability={resample_probability!r}): must "
                "be in [0, 1]"
            )
        if not perturbation_interval > 0:
            raise ConfigError(
                f"PopulationBasedTraining(perturbation_interval={perturbation_interval!r}): "
                "must be > 0"
            )
        super().__init__(metric, mode)
        self.time_attr = time_attr
        self.perturbation_interval = float(perturbation_interval)
        self.burn_in_period = float(burn_in_period)
        self.hyperparam_mutations = dict(hyperparam_mutations or {})
        for key, how in self.hyperparam_mutations.items():
            if not (as_domain(how) is not None or isinstance(how, list) or callable(how)):
                raise ConfigError(
                    f"hyperparam_mutations[{key!r}]={how!r}: use a search space "
                    "(tune.uniform(...)), a list of values or a function"
                )
            if isinstance(how, list) and not how:
                raise ConfigError(f"hyperparam_mutations[{key!r}] is an empty list")
        self.quantile_fraction = quantile_fraction
        self.resample_probability = resample_probability
        self.perturbation_factors = tuple(perturbation_factors)
        self.custom_explore_fn = custom_explore_fn
        self.log_config = log_config
        self.require_attrs, self.synch = require_attrs, synch
        self._rng = random.Random(seed)
        self._np_rng = np.random.default_rng(seed)
        self._last_perturbation = 0.0
        self.num_perturbations = 0
        # (trial that exploited, its source, the explored values), for each perturbation.
        self.history: list[list[tuple[int, int, dict[str, Any]]]] = []

    def check_settings(self, population_settings: Sequence[str], algo_name: str) -> None:
        """Refuses mutations of settings the population cannot change in place."""
        bad = sorted(set(self.hyperparam_mutations) - set(population_settings))
        if bad:
            raise ConfigError(
                f"PopulationBasedTraining mutates {bad}; a {algo_name} population can change "
                f"only {sorted(population_settings)} in place"
            )

    # ------------------------------------------------------------------ explore
    def explore(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """New values of the mutated settings from ``values`` (Tune's explore): each is redrawn
        with ``resample_probability`` (always, for a value that is not a number), else a number
        is multiplied by a perturbation factor and a list value moves to a neighbour."""
        new: dict[str, Any] = {}
        for key, how in self.hyperparam_mutations.items():
            old = values.get(key)
            resample = self._rng.random() < self.resample_probability
            domain = as_domain(how)
            if isinstance(how, list):
                if resample or old not in how:
                    new[key] = self._rng.choice(how)
                else:
                    i = how.index(old) + self._rng.choice((-1, 1))
                    new[key] = how[min(max(i, 0), len(how) - 1)]
            elif resample or not isinstance(old, (int, float)):
                new[key] = self._draw(domain, how, key)
            else:
                scaled = old * self._rng.choice(self.perturbation_factors)
                new[key] = int(round(scaled)) if isinstance(old, int) else float(scaled)
        if self.custom_explore_fn is not None:
            new = dict(self.custom_explore_fn(dict(values) | new))
        return new

    def _draw(self, domain: Domain | None, how: Any, key: str) -> Any:
        if domain is not None:
            return domain.sample(self._np_rng, where=f"hyperparam_mutations[{key!r}]")
        return how()

    # ------------------------------------------------------------------ perturb
    def perturb(self, population: Any, results: Sequence[dict[str, Any] | None]) -> dict[int, int]:
        """After an iteration of ``population``: when the interval has passed, the bottom
        quantile of active trials exploits the top quantile and explores. Returns
        ``{trial: source}`` of this perturbation (empty when none happened)."""
        metric, mode = self._require_metric_mode()
        live = [(i, flatten(r)) for i, r in enumerate(results) if r is not None]
        if not live:
            return {}
        progress = max(float(f.get(self.time_attr, 0.0)) for _, f in live)
        if progress < self.burn_in_period:
            return {}
        if progress - self._last_perturbation < self.perturbation_interval:
            return {}
        self._last_perturbation = progress
        missing = [i for i, f in live if metric not in f]
        if missing:
            if self.require_attrs:
                raise ConfigError(
                    f"PopulationBasedTraining: metric {metric!r} is not in the results of "
                    f"trials {missing}"
                )
            return {}
        sign = 1.0 if mode == "max" else -1.0
        ranked = sorted(live, key=lambda item: sign * float(item[1][metric]))
        n = int(np.ceil(len(ranked) * self.quantile_fraction)) if len(ranked) > 1 else 0
        n = min(n, len(ranked) // 2)
        if n == 0:
            return {}
        bottom = [i for i, _ in ranked[:n]]
        top = [i for i, _ in ranked[-n:]]
        copies: dict[int, int] = {}
        values: dict[int, dict[str, Any]] = {}
        for dst in bottom:
            src = self._rng.choice(top)
            copies[dst] = src
            values[dst] = population.values[src] | self.explore(population.values[src])
        population.exploit(copies, values)
        self.num_perturbations += 1
        self.history.append([(dst, src, values[dst]) for dst, src in copies.items()])
        return copies


__all__ = ["PopulationBasedTraining"]
