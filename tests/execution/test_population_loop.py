"""A population's iteration is a ``Loop`` over stacked state: its per-trial results are those
``Population.train()`` hands its trials, and those of the trials' own runs."""

from __future__ import annotations

import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.execution.loop import IterationResult, Loop
from rljax.execution.population import Population
from rljax.execution.population_loop import (
    PopulationLoop,
    PopulationResult,
    PopulationRunnerState,
    PopulationState,
    stack,
    stack_runner_states,
)
from rljax.utils.schedules import stack_settings


def tiny(lr: float, seed: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=16)
        .training(lr=lr, train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=seed)
    )


CONFIGS = ((1e-3, 0), (3e-2, 7))


def _members(configs):
    return [c.checked_algo_class()(c.copy(), population_member=True) for c in configs]


def _stacked(members, active):
    values = [m.population_values() for m in members]
    settings = {
        name: None if values[0][name] is None else stack_settings([v[name] for v in values])
        for name in values[0]
    }
    state = PopulationState(stack([m.state for m in members]), settings, np.asarray(active))
    return state, stack_runner_states([m.runner_state for m in members])


@pytest.mark.slow  # builds and trains
def test_the_population_loop_keeps_the_loop_contract_over_stacked_state():
    configs = [tiny(lr, seed) for lr, seed in CONFIGS]
    members = _members(configs)
    try:
        loop = PopulationLoop([m.population_parts() for m in members])
        assert isinstance(loop, Loop) and loop.num_slots == 2
        state, runner_state = _stacked(members, [True, False])
        state, runner_state, result = loop.step(state, runner_state)
        assert isinstance(state, PopulationState)
        assert isinstance(runner_state, PopulationRunnerState)
        assert isinstance(result, PopulationResult) and isinstance(result, IterationResult)
        first, stopped = result.split()
        assert stopped is None  # a stopped slot reports nothing
        assert isinstance(first, IterationResult)
        # 4 sub-envs x 16 steps; the stack's totals are those of its one active slot.
        assert first.num_env_steps_sampled == first.num_env_steps_trained == 64
        assert result.num_env_steps_sampled == result.num_env_steps_trained == 64
        assert result.timers.population_step_s == first.shared_s == result.shared_s > 0
        for key, value in first.learner_metrics["default_policy"].items():
            assert result.learner_metrics["default_policy"][key].shape == (1,)
            np.testing.assert_array_equal(result.learner_metrics["default_policy"][key][0], value)
        np.testing.assert_array_equal(result.episode_returns, first.episode_returns)
        with pytest.raises(ValueError, match="at least one slot"):
            PopulationLoop([])
    finally:
        for m in members:
            m.stop()


@pytest.mark.slow  # a population and two separate runs
def test_per_trial_results_equal_population_train_and_separate_runs():
    configs = [tiny(lr, seed) for lr, seed in CONFIGS]
    members = _members(configs)
    population = Population(configs)
    try:
        loop = PopulationLoop([m.population_parts() for m in members])
        state, runner_state = _stacked(members, [True, True])
        trials: list[tuple[IterationResult | None, ...]] = []
        for it in range(2):
            state, runner_state, result = loop.step(state, runner_state)
            trials.append(result.split())
            by_population = population.train()
            assert result.num_env_steps_sampled == 2 * 64
            for k in range(2):
                trial = trials[it][k]
                assert trial is not None
                mine, theirs = members[k].train_from(trial), by_population[k]
                assert theirs is not None
                assert mine["training_iteration"] == theirs["training_iteration"] == it + 1
                for key in ("num_env_steps_sampled", "num_episodes", "episode_return_mean"):
                    # (NaN while no episode has finished: equal as arrays.)
                    np.testing.assert_array_equal(
                        mine["env_runners"][key], theirs["env_runners"][key]
                    )
                # One program, the same inputs: the same numbers, bit for bit.
                ours, pops = (
                    mine["learners"]["default_policy"],
                    theirs["learners"]["default_policy"],
                )
                assert set(ours) == set(pops) and "total_loss" in ours
                for key, value in pops.items():
                    np.testing.assert_array_equal(ours[key], value)
        # ... and those of each trial's own run (its envs, keys and settings), to 1e-6.
        for k, config in enumerate(configs):
            algo = config.build_algo()
            try:
                for it in range(2):
                    alone = algo.train()
                    trial = trials[it][k]
                    assert trial is not None
                    assert trial.num_env_steps_sampled == 64
                    assert alone["env_runners"]["num_env_steps_sampled"] == 64
                    assert len(trial.episode_returns) == alone["env_runners"]["num_episodes"]
                    learner = trial.learner_metrics["default_policy"]
                    for key, value in alone["learners"]["default_policy"].items():
                        if key.startswith("num_module_steps_trained"):  # the result's counts
                            continue
                        np.testing.assert_allclose(learner[key], value, rtol=1e-6, atol=1e-6)
            finally:
                algo.stop()
    finally:
        population.stop()
        for m in members:
            m.stop()
