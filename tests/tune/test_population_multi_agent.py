"""Multi-agent PPO populations on multi-agent JAX envs: K trials, each with its own policies,
settings (per-module overrides kept), seed and env states, in one vmapped program give the
numbers of K separate runs; the Tuner runs such a grid as one population; configs that cannot
share the program are refused with the reason."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.env.jax_multi_agent import JaxMultiAgentEnv
from rljax.env.multi_agent_env import MultiAgentEnv
from rljax.execution.population import Population, population_refusal
from rljax.utils.errors import ConfigError


class Drift(JaxMultiAgentEnv):
    """Two agents on a line; state (t, x). Agent k observes [x, t, k]; action 0/1/2 moves x by
    -1/0/+1 (both agents' moves add up); each is rewarded -|x - k| plus noise from the step's
    key, so returns depend on the policies, the keys and the settings. Truncated after 5
    steps."""

    def __init__(self, config=None):
        self.agents = ["a", "b"]
        self.observation_spaces = {
            a: gym.spaces.Box(-50, 50, (3,), np.float32) for a in self.agents
        }
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.agents}

    def _obs(self, t, x):
        return {
            a: jnp.stack([x, t.astype(jnp.float32), float(k)]) for k, a in enumerate(self.agents)
        }

    def reset(self, key):
        t, x = jnp.zeros((), jnp.int32), jax.random.normal(key)
        return (t, x), self._obs(t, x)

    def step(self, state, actions, key):
        t, x = state
        t, x = t + 1, x + sum((actions[a] - 1).astype(jnp.float32) for a in self.agents)
        noise = 0.1 * jax.random.normal(key, (2,))
        rewards = {a: -jnp.abs(x - k) + noise[k] for k, a in enumerate(self.agents)}
        end = t >= 5
        never = jnp.zeros((), bool)
        return (
            (t, x),
            self._obs(t, x),
            rewards,
            {a: never for a in self.agents},
            {a: end for a in self.agents},
            {},
        )


def _config(lr: float = 1e-3, seed: int = 0, **training) -> PPOConfig:
    return (
        PPOConfig()
        .environment(Drift)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=3, rollout_fragment_length=8)
        .training(train_batch_size=24, minibatch_size=12, num_epochs=2, lr=lr, **training)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .multi_agent(
            policies={"pa", "pb"},
            policy_mapping_fn=_by_agent,
            # pb overrides two population settings: its values hold in every trial.
            algorithm_config_overrides_per_module={"pb": {"lr": 5e-2, "entropy_coeff": 0.1}},
        )
        .debugging(seed=seed)
    )


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(tree))]


def _by_agent(agent_id, episode, **kwargs):
    return "p" + agent_id


def _assert_like_separate_runs(results: list, population: Population, configs: list) -> None:
    for k, config in enumerate(configs):
        algo = config.build_algo()
        try:
            for it, iteration in enumerate(results):
                mine, alone = iteration[k], algo.train()
                for key in ("num_env_steps_sampled", "num_episodes"):
                    assert mine["env_runners"][key] == alone["env_runners"][key] > 0
                for key in ("num_agent_steps_sampled", "num_module_steps_sampled"):
                    assert mine["env_runners"][key] == alone["env_runners"][key]
                    assert all(n > 0 for n in mine["env_runners"][key].values())
                for key in ("episode_return_mean", "agent_episode_returns_mean"):
                    np.testing.assert_allclose(
                        np.asarray(_values(mine["env_runners"][key])),
                        np.asarray(_values(alone["env_runners"][key])),
                        rtol=1e-5,
                    )
                for pid in ("pa", "pb"):
                    assert set(mine["learners"][pid]) == set(alone["learners"][pid])
                    for key, value in alone["learners"][pid].items():
                        np.testing.assert_allclose(
                            mine["learners"][pid][key], value, rtol=2e-4, atol=1e-6
                        )
                assert mine["training_iteration"] == it + 1
            for a, b in zip(_leaves(population.members[k].state), _leaves(algo.state), strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=5e-5)
            # The envs' states are the trial's too (its checkpoints save them).
            for a, b in zip(
                _leaves(population.members[k].runner_state),
                _leaves(algo.runner_state),
                strict=True,
            ):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        finally:
            algo.stop()


def _values(x):
    return sorted(x.values()) if isinstance(x, dict) else x


@pytest.mark.slow  # builds a population and two runs (about 15 s)
def test_multi_agent_trials_match_separate_runs_and_keep_per_module_overrides():
    configs = [
        _config(1e-3, seed=0, entropy_coeff=0.0, gamma=0.99),
        _config(3e-2, seed=7, entropy_coeff=0.05, clip_param=0.1, gamma=0.9, vf_loss_coeff=0.5),
    ]
    assert population_refusal(configs) is None
    population = Population(configs)
    try:
        # pb's overrides are fixed in its group; pa's group takes each trial's values.
        member = population.members[0]
        # (policies are a set: their order, and so the groups', differs from process to process)
        fixed = {tuple(member.policy_ids[i] for i in g.members): g.fixed for g in member.groups}
        assert fixed == {("pa",): {}, ("pb",): {"lr": 5e-2, "entropy_coeff": 0.1}}
        results = [population.train() for _ in range(2)]
        assert population.num_compilations == 1
        by_trial = [r["learners"] for r in results[-1]]
        assert [lr["pa"]["curr_entropy_coeff"] for lr in by_trial] == pytest.approx([0.0, 0.05])
        assert [lr["pb"]["curr_entropy_coeff"] for lr in by_trial] == pytest.approx([0.1, 0.1])
        for r in results[-1]:
            assert r["timers"]["population_step_s"] > 0
        _assert_like_separate_runs(results, population, configs)
        # A trial of a population is trained by it, not by its own train().
        with pytest.raises(RuntimeError, match="trial of a population"):
            member.train()
    finally:
        population.stop()


class HostDrift(MultiAgentEnv):
    """A gymnasium-style multi-agent env (stepped from the host)."""

    def __init__(self, config=None):
        super().__init__()
        self.agents = self.possible_agents = ["a", "b"]
        self.observation_spaces = {a: gym.spaces.Box(-1, 1, (2,), np.float32) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}

    def reset(self, *, seed=None, options=None):
        return {a: np.zeros(2, np.float32) for a in self.agents}, {}

    def step(self, actions):
        obs = {a: np.zeros(2, np.float32) for a in self.agents}
        rew = {a: 0.0 for a in self.agents}
        done = {"__all__": True, **{a: True for a in self.agents}}
        return obs, rew, done, {"__all__": False}, {}


class MixedSpaces(Drift):
    def __init__(self, config=None):
        super().__init__(config)
        self.action_spaces = {"a": gym.spaces.Discrete(3), "b": gym.spaces.Discrete(2)}


def test_multi_agent_configs_that_cannot_share_the_program_are_refused_with_the_reason():
    host = [_config().environment(HostDrift), _config(3e-2).environment(HostDrift)]
    assert "not a multi-agent JAX env" in population_refusal(host)
    mixed = [_config().environment(MixedSpaces), _config(3e-2).environment(MixedSpaces)]
    assert "different action_spaces" in population_refusal(mixed)
    assert "num_env_runners=1" in population_refusal(
        [_config().env_runners(num_env_runners=1), _config().env_runners(num_env_runners=1)]
    )
    assert "num_epochs" in population_refusal([_config(), _config().training(num_epochs=3)])
    with pytest.raises(ConfigError, match="cannot train as one population.*not a multi-agent JAX"):
        Population(host)


@pytest.mark.slow  # a Tuner run of two trials (about 8 s)
def test_tuner_trains_a_multi_agent_grid_as_one_population(tmp_path):
    from rljax import tune

    grid = tune.Tuner(
        "PPO",
        param_space=_config().training(lr=tune.grid_search([1e-3, 3e-2])),
        tune_config=tune.TuneConfig(populations=True),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), stop={"training_iteration": 2}, verbose=0
        ),
    ).fit()
    assert grid.num_errors == 0, grid.errors
    assert [r.config["lr"] for r in grid] == [1e-3, 3e-2]
    for r in grid:  # every iteration came from the population's program
        assert r.metrics["training_iteration"] == 2
        assert all("population_step_s" in h["timers"] for h in r.history)
        assert set(r.metrics["learners"]) >= {"pa", "pb"}
