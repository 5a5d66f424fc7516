"""Trials trained as one population (``rljax.execution.population``): one vmapped program
for every trial of a batch, each trial's results recorded and its stop decided as it comes,
and ``PopulationBasedTraining``'s perturbations applied between iterations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rljax.tune.trial_run import _StopperFailed, _TrialRun
from rljax.tune.worker import MainModuleRerun

if TYPE_CHECKING:
    from rljax.algorithms.algorithm_config import AlgorithmConfig


def run_population(
    configs: list[AlgorithmConfig],
    trials: list[_TrialRun],
    scheduler: Any,
    payload: bytes | None = None,
) -> list[BaseException | None]:
    """Trains ``trials`` as one population until each stops (its stop criterion, a
    scheduler's STOP, the time budget); returns each one's exception, if it raised. A
    ``PopulationBasedTraining`` scheduler perturbs the population after every iteration, and
    each trial's config takes the values it explored. With ``payload`` (``worker``'s) the
    population trains in a worker process."""
    from rljax.execution.population import Population
    from rljax.tune.pbt import PopulationBasedTraining
    from rljax.tune.worker import RemotePopulation

    errors: list[BaseException | None] = [None] * len(trials)
    population: Any = None
    try:
        if payload is not None:  # built from the trials' checkpoints in the worker
            population = RemotePopulation(payload, len(trials))
        else:
            population = Population(configs, checkpoints=[t.latest_checkpoint for t in trials])
        pbt = scheduler if isinstance(scheduler, PopulationBasedTraining) else None
        while any(population.active):
            results = population.train()
            for i, error in enumerate(population.errors):
                if error is not None and errors[i] is None:
                    errors[i] = error
            ending = any(t.stop_all or t.out_of_time for t in trials)
            for i, result in enumerate(results):
                if result is None:
                    continue
                member, trial = population.members[i], trials[i]
                if trial.record(result, algo=member) or ending or trial.stop_all:
                    trial.finish_algorithm(member)
                    population.stop_trial(i)
            if pbt is not None and any(population.active):
                live = [r if population.active[i] else None for i, r in enumerate(results)]
                for dst in pbt.perturb(population, live):
                    mutated = {k: population.values[dst][k] for k in pbt.hyperparam_mutations}
                    trials[dst].config = {**trials[dst].config, **mutated}
            if any(t.stop_all or t.out_of_time for t in trials):
                for i in range(len(trials)):
                    if population.active[i]:
                        trials[i].finish_algorithm(population.members[i])
                        population.stop_trial(i)
    except (_StopperFailed, MainModuleRerun):
        raise
    except Exception as e:  # the population itself failed: every trial still in it did
        for i in range(len(trials)):
            if errors[i] is None and (population is None or population.active[i]):
                errors[i] = e
    finally:
        if population is not None:
            population.stop()
    return errors


__all__ = ["run_population"]
