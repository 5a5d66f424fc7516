"""Populations: K trials in one vmapped program give the numbers of K separate runs; stopping,
compaction, PBT's exploit, and which configs can train together."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from gymnasium.envs.classic_control import CartPoleEnv

from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.execution.population import Population, population_refusal, spread_devices
from rljax.learners.devices import population_devices
from rljax.utils.errors import ConfigError


def small(lr: float = 1e-3, seed: int = 0, **training) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4)
        .training(
            lr=lr, train_batch_size_per_learner=128, minibatch_size=64, num_epochs=2, **training
        )
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=seed)
    )


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(tree))]


def assert_trials_match_separate_runs(population, configs, iterations: int) -> list:
    """``iterations`` of the population give each trial the numbers of its own run; returns
    the population's results."""
    pop_results = [population.train() for _ in range(iterations)]
    for k, config in enumerate(configs):
        algo = config.build_algo()
        try:
            for it in range(iterations):
                mine, alone = pop_results[it][k], algo.train()
                # Same envs, keys and actions: the same episodes, exactly.
                for key in ("num_env_steps_sampled", "num_episodes"):
                    assert mine["env_runners"][key] == alone["env_runners"][key] > 0
                np.testing.assert_allclose(
                    mine["env_runners"]["episode_return_mean"],
                    alone["env_runners"]["episode_return_mean"],
                )
                for key, value in alone["learners"]["default_policy"].items():
                    np.testing.assert_allclose(
                        mine["learners"]["default_policy"][key], value, rtol=2e-4, atol=1e-6
                    )
                assert mine["training_iteration"] == it + 1
            if algo.runner_state is not None and population._jax_env:
                # A JAX env's states are handed to the trial too (its checkpoints save them).
                mine_envs = _leaves(population.members[k].runner_state)
                for a, b in zip(mine_envs, _leaves(algo.runner_state), strict=True):
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            for a, b in zip(_leaves(population.members[k].state), _leaves(algo.state), strict=True):
                # Two float32 programs (vmapped over trials, and alone) sum in different
                # orders: with the default 256x256 network, on an AMD EPYC host 33 of the
                # 65,536 weights of one layer differed by up to 1.6e-5 after two iterations
                # (under 1e-5 on the earlier host). small() now uses [32, 32] (less compute).
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=5e-5)
        finally:
            algo.stop()
    return pop_results


@pytest.mark.slow  # integration (15 s); in the README's full run
def test_trials_match_separate_runs_with_their_own_seeds_and_settings():
    configs = [
        small(1e-3, seed=0, entropy_coeff=0.0, clip_param=0.2, gamma=0.99),
        small(3e-2, seed=11, entropy_coeff=0.05, clip_param=0.1, gamma=0.9, grad_clip=0.5),
    ]
    # grad_clip is on in one trial only: a different program, so not one population.
    assert "grad_clip is on" in population_refusal(configs)
    configs[0].training(grad_clip=10.0)
    assert population_refusal(configs) is None
    # Callbacks run per trial: a population would skip their episode hooks.
    hooked = [c.copy().callbacks(on_episode_end=print) for c in configs]
    assert "callbacks train one trial at a time" in population_refusal(hooked)
    population = Population(configs)
    try:
        assert_trials_match_separate_runs(population, configs, iterations=2)
        # The trials really differ: the second's larger rate moved its parameters further.
        assert population.values[1]["lr"] == pytest.approx(3e-2)
        assert population.values[1]["grad_clip"] == pytest.approx(0.5)
    finally:
        population.stop()


@pytest.mark.slow  # integration (17 s); in the README's full run
def test_stopped_trials_freeze_and_the_program_shrinks_at_half():
    population = Population([small(1e-3, seed=s) for s in range(4)], compaction="always")
    try:
        population.train()
        frozen = _leaves(population.members[0].state)
        population.stop_trial(0)
        assert population.num_compilations == 1  # 3 of 4 active: no rebuild
        results = population.train()
        assert results[0] is None and all(r is not None for r in results[1:])
        assert results[1]["training_iteration"] == 2
        for a, b in zip(frozen, _leaves(population.members[0].state), strict=True):
            np.testing.assert_array_equal(a, b)
        population.stop_trial(1)  # 2 of 4 active: not fewer than half, no rebuild
        assert population.num_compilations == 1
        population.stop_trial(2)  # 1 of 4: rebuilt with trial 3 alone
        assert population.num_compilations == 2
        before = _leaves(population.members[3].state)
        results = population.train()
        assert results[:3] == [None, None, None] and results[3]["training_iteration"] == 3
        after = _leaves(population.members[3].state)
        assert any(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))
        population.stop_trial(3)
        with pytest.raises(RuntimeError, match="every trial"):
            population.train()
    finally:
        population.stop()


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (13 s alone)
def test_exploit_copies_the_chosen_trials_state_and_sets_new_values():
    # Four trials: the program of the other four-trial tests (a compilation cache hit).
    population = Population([small(lr, seed=s) for s, lr in enumerate((1e-3, 2e-3, 3e-3, 4e-3))])
    try:
        population.train()
        source = _leaves(population.members[2].state)
        kept = _leaves(population.members[1].state)
        population.exploit({0: 2}, {0: {"lr": 5e-4, "entropy_coeff": 0.01}})
        for a, b in zip(source, _leaves(population.members[0].state), strict=True):
            np.testing.assert_array_equal(a, b)  # parameters, Adam's moments, step, key
        for a, b in zip(kept, _leaves(population.members[1].state), strict=True):
            np.testing.assert_array_equal(a, b)
        assert population.values[0]["lr"] == pytest.approx(5e-4)
        assert population.values[0]["entropy_coeff"] == pytest.approx(0.01)
        assert population.values[2]["lr"] == pytest.approx(3e-3)
        results = population.train()  # the new values are arguments: nothing recompiles
        assert population.num_compilations == 1 and all(r is not None for r in results)
        with pytest.raises(ValueError, match="not population settings"):
            population.exploit({}, {1: {"num_epochs": 3}})
    finally:
        population.stop()


def test_configs_that_cannot_share_a_program_are_refused_with_the_reason():
    assert "minibatch_size" in population_refusal([small(), small().training(minibatch_size=32)])
    assert "num_env_runners=1" in population_refusal(
        [small().env_runners(num_env_runners=1), small().env_runners(num_env_runners=1)]
    )
    gym_env = small().environment(CartPoleEnv)
    assert "neither an EnvPool env nor a JAX env" in population_refusal([gym_env, gym_env.copy()])
    assert "trains no populations" in population_refusal([DQNConfig().environment("CartPole-v1")])
    several = small().reporting(min_sample_timesteps_per_iteration=10 * small().sampled_batch_size)
    assert population_refusal([several, several.copy()]) is None
    assert "min_sample_timesteps_per_iteration" in population_refusal([several, small()])
    with pytest.raises(ConfigError, match="cannot train as one population.*minibatch_size"):
        Population([small(), small().training(minibatch_size=32)])


def test_trials_are_split_over_devices_that_divide_their_number():
    devices = ["d0", "d1", "d2", "d3"]  # stand-ins: spread_devices only counts and slices
    assert spread_devices(16, devices) == devices
    assert spread_devices(6, devices) == devices[:3]
    assert spread_devices(2, devices) == devices[:2]
    assert spread_devices(7, devices) == devices[:1]
    assert spread_devices(5, devices[:1]) == devices[:1]
    # CPU trials take this process's CPU devices; trials that each ask for a GPU, where there
    # is none, are told so.
    assert population_devices(0.0) == jax.devices("cpu")
    with pytest.raises(ConfigError, match="num_gpus_per_learner=1 asks for a GPU"):
        population_devices(1)
    several = small().learners(num_learners=2)
    why = population_refusal([several, several.copy()])
    assert "num_learners=2" in why and "splits its trials over the local devices" in why


def _result(score: float, iteration: int) -> dict:
    return {"training_iteration": iteration, "env_runners": {"episode_return_mean": score}}


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (10 s alone)
def test_pbt_bottom_quantile_takes_a_top_trials_state_and_perturbed_values():
    from rljax import tune
    from rljax.tune.pbt import PopulationBasedTraining

    pbt = PopulationBasedTraining(
        time_attr="training_iteration",
        metric="env_runners/episode_return_mean",
        mode="max",
        perturbation_interval=2,
        hyperparam_mutations={"lr": tune.loguniform(1e-5, 1e-1), "entropy_coeff": [0.0, 0.01]},
        quantile_fraction=0.25,
        resample_probability=0.0,
        perturbation_factors=(2.0, 2.0),
        seed=0,
    )
    pbt.check_settings(PPOConfig().algo_class.population_settings, "PPO")
    with pytest.raises(ConfigError, match=r"mutates \['num_epochs'\]"):
        PopulationBasedTraining(hyperparam_mutations={"num_epochs": [1, 2]}).check_settings(
            PPOConfig().algo_class.population_settings, "PPO"
        )
    configs = [
        small(lr, seed=s, entropy_coeff=0.0) for s, lr in enumerate((1e-3, 2e-3, 3e-3, 4e-3))
    ]
    population = Population(configs)
    try:
        population.train()
        scores = [10.0, 40.0, 20.0, 30.0]
        # Iteration 1: the interval (2 iterations) has not passed.
        assert pbt.perturb(population, [_result(s, 1) for s in scores]) == {}
        best = _leaves(population.members[1].state)
        copies = pbt.perturb(population, [_result(s, 2) for s in scores])
        # 4 trials x 0.25: trial 0 (the worst) copies trial 1 (the best).
        assert copies == {0: 1}
        for a, b in zip(best, _leaves(population.members[0].state), strict=True):
            np.testing.assert_array_equal(a, b)
        assert population.values[0]["lr"] == pytest.approx(2 * 2e-3)  # the source's x 2.0
        assert population.values[0]["entropy_coeff"] in (0.0, 0.01)  # a neighbour in the list
        assert population.members[0].config.lr == pytest.approx(4e-3)
        assert [population.values[i]["lr"] for i in (1, 2, 3)] == pytest.approx([2e-3, 3e-3, 4e-3])
        # The next perturbation waits for iteration 4.
        assert pbt.perturb(population, [_result(s, 3) for s in scores]) == {}
        assert population.train()[0]["training_iteration"] == 2
        assert population.num_compilations == 1
    finally:
        population.stop()


# ---------------------------------------------------------------------- through the Tuner
def tiny() -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )


@pytest.mark.slow  # integration (15 s); in the README's full run
def test_tuner_trains_a_grid_as_one_population_and_stops_trials_one_by_one(tmp_path):
    from rljax import tune

    def stop(trial_id, result):  # the first trial stops after 2 iterations, the other after 3
        return result["training_iteration"] >= (2 if trial_id.endswith("_00000") else 3)

    # Two trials (the population's program is then the other Tuner tests' two-trial one).
    def fit(populations):
        return tune.Tuner(
            "PPO",
            param_space=tiny().training(lr=tune.grid_search([1e-3, 3e-4])),
            tune_config=tune.TuneConfig(populations=populations),
            run_config=tune.RunConfig(
                name=f"p{populations}", storage_path=str(tmp_path), stop=stop, verbose=0
            ),
        ).fit()

    grid = fit(True)
    assert grid.num_errors == 0, grid.errors
    assert [r.config["lr"] for r in grid] == [1e-3, 3e-4]  # each a whole config
    assert [r.metrics["training_iteration"] for r in grid] == [2, 3]
    for r in grid:  # every iteration came from the population's program
        assert all("population_step_s" in h["timers"] for h in r.history)
        assert r.metrics["time_this_iter_s"] >= r.metrics["timers"]["population_step_s"]
    alone = fit(False)
    assert [r.metrics["training_iteration"] for r in alone] == [2, 3]
    assert all("population_step_s" not in r.metrics["timers"] for r in alone)


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (7 s alone)
def test_pbt_through_the_tuner_changes_the_bottom_trials_config(tmp_path):
    from rljax import tune

    pbt = tune.schedulers.PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=1,
        hyperparam_mutations={"lr": tune.loguniform(1e-5, 1e-2)},
        quantile_fraction=0.5,
        resample_probability=0.0,
        perturbation_factors=(0.5, 0.5),
        seed=0,
    )
    grid = tune.Tuner(
        "PPO",
        param_space=tiny().training(lr=tune.grid_search([1e-3, 2e-3])),
        tune_config=tune.TuneConfig(
            metric="env_runners/episode_return_mean", mode="max", scheduler=pbt
        ),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), stop={"training_iteration": 3}, verbose=0
        ),
    ).fit()
    assert grid.num_errors == 0 and pbt.num_perturbations == 2
    # Each perturbation: the worse trial took the better one's state and half its rate.
    dst, src, values = pbt.history[-1][0]
    assert grid[dst].config["lr"] == pytest.approx(values["lr"])
    assert values["lr"] in [pytest.approx(x / 2) for x in (1e-3, 2e-3, 5e-4, 2.5e-4, 1.25e-4)]
    with pytest.raises(ConfigError, match="every trial in one population.*minibatch_size"):
        tune.Tuner(
            "PPO",
            param_space=tiny().training(minibatch_size=tune.grid_search([16, 32])),
            tune_config=tune.TuneConfig(
                metric="x",
                mode="max",
                scheduler=tune.schedulers.PopulationBasedTraining(
                    hyperparam_mutations={"lr": [1e-3, 1e-4]}
                ),
            ),
            run_config=tune.RunConfig(stop={"training_iteration": 1}),
        )


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (7 s alone)
def test_an_interrupted_population_resumes_from_its_trials_checkpoints(tmp_path):
    from rljax import tune

    class InterruptAfterFirst(tune.Stopper):
        def __call__(self, trial_id, result):
            if result["training_iteration"] == 1 and trial_id.endswith("_00001"):
                raise RuntimeError("the machine went away")
            return result["training_iteration"] >= 2

    tuner = tune.Tuner(
        "PPO",
        param_space=tiny().training(lr=tune.grid_search([1e-3, 3e-4])),
        run_config=tune.RunConfig(
            name="pop",
            storage_path=str(tmp_path),
            stop=InterruptAfterFirst(),
            checkpoint_config=tune.CheckpointConfig(checkpoint_frequency=1),
            verbose=0,
        ),
    )
    with pytest.raises(ConfigError, match="the machine went away"):
        tuner.fit()
    grid = tune.Tuner.restore(tmp_path / "pop", "PPO", stop={"training_iteration": 2}).fit()
    assert grid.num_errors == 0, grid.errors
    for r in grid:
        assert [h["training_iteration"] for h in r.history] == [1, 2]
        steps = [h["num_env_steps_sampled_lifetime"] for h in r.history]
        assert steps[0] > 0 and steps[1] > 1.5 * steps[0]  # counters went on from the checkpoint
        assert "population_step_s" in r.history[1]["timers"]


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (5 s alone)
def test_a_searcher_asked_for_two_configs_at_a_time_trains_them_together(tmp_path):
    pytest.importorskip("optuna")
    from rljax import tune
    from rljax.tune.search.optuna import OptunaSearch

    searcher = OptunaSearch(seed=0)
    grid = tune.Tuner(
        "PPO",
        # Seeded, and 2 iterations: every trial has finished episodes (a NaN return would be
        # a failed trial for Optuna).
        param_space=tiny().training(lr=tune.loguniform(1e-4, 1e-2)).debugging(seed=0),
        tune_config=tune.TuneConfig(
            metric="env_runners/episode_return_mean",
            mode="max",
            search_alg=searcher,
            num_samples=4,
            max_concurrent_trials=2,
        ),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), stop={"training_iteration": 2}, verbose=0
        ),
    ).fit()
    assert grid.num_errors == 0 and len(grid) == 4
    assert len({r.config["lr"] for r in grid}) == 4
    assert all(1e-4 <= r.config["lr"] <= 1e-2 for r in grid)
    assert all("population_step_s" in r.metrics["timers"] for r in grid)
    study = searcher.study  # Optuna was told each trial's last result
    assert len(study.trials) == 4 and all(t.state.name == "COMPLETE" for t in study.trials)


@pytest.mark.slow  # integration (~25 s); in the README's full run
def test_trials_with_schedules_share_one_program_and_follow_their_schedules():
    # Before schedules were values of the program, a scheduled trial was refused (each
    # trained alone: one program per trial, here 3); now the three share one.
    configs = [
        small([[0, 1e-3], [256, 1e-4]], seed=0, entropy_coeff=[[0, 0.02], [128, 0.0]]),
        small(3e-4, seed=1, entropy_coeff=0.01),
        small([[0, 2e-3], [128, 1e-3], [512, 5e-4]], seed=2),
    ]
    assert population_refusal(configs) is None
    population = Population(configs)
    try:
        results = [population.train() for _ in range(3)]
        assert population.num_compilations == 1
        # One program each for the rollout and the update, for every iteration.
        assert population.loop.sample._cache_size() == population.loop.learn._cache_size() == 1
        learners = [[r[k]["learners"]["default_policy"] for r in results] for k in range(3)]
        rates = [[m["default_optimizer_learning_rate"] for m in trial] for trial in learners]
        entropy = [[m["curr_entropy_coeff"] for m in trial] for trial in learners]
        # Each update reads its schedule at the env steps trained before it: 0, 128, 256.
        np.testing.assert_allclose(rates[0], [1e-3, 5.5e-4, 1e-4], rtol=1e-5)
        np.testing.assert_allclose(rates[1], [3e-4] * 3, rtol=1e-5)
        np.testing.assert_allclose(rates[2], [2e-3, 1e-3, 1e-3 - 5e-4 / 3], rtol=1e-5)
        np.testing.assert_allclose(entropy[0], [0.02, 0.0, 0.0], atol=1e-7)
        np.testing.assert_allclose(entropy[1], [0.01] * 3, rtol=1e-6)
        np.testing.assert_allclose(entropy[2], [0.0] * 3, atol=1e-7)
        # The scheduled trial trains as it does alone.
        algo = configs[0].build_algo()
        try:
            for it in range(2):
                alone = algo.train()["learners"]["default_policy"]
                for key, value in alone.items():
                    np.testing.assert_allclose(learners[0][it][key], value, rtol=2e-4, atol=1e-6)
        finally:
            algo.stop()
    finally:
        population.stop()


@pytest.mark.slow  # builds three trials and a population
def test_trials_on_a_jax_env_match_separate_runs():
    # rljax's JAX CartPole: every trial's envs are stepped inside the population's program,
    # vmapped over the trials with the policies, each from its own run's states and keys.
    # Three training steps per iteration (RLlib's min_sample_timesteps_per_iteration, 2.5
    # batches rounded up to whole ones), as the separate runs take them in one scanned program.
    configs = [
        small(1e-3, seed=0).environment("rljax:CartPole-v1"),
        small(3e-2, seed=5, entropy_coeff=0.05).environment("rljax:CartPole-v1"),
    ]
    for c in configs:
        c.reporting(min_sample_timesteps_per_iteration=320)
    assert population_refusal(configs) is None
    population = Population(configs)
    try:
        assert population.loop.num_slots == 2
        assert population.loop.steps_per_iteration == 3
        results = assert_trials_match_separate_runs(population, configs, iterations=2)
        assert [r[0]["num_env_steps_sampled_lifetime"] for r in results] == [384, 768]
    finally:
        population.stop()
