"""The JaxMARL adapter ("jaxmarl:<MPE id>"): spaces, one step against JaxMARL's own, the time
limit as truncation, refusals, and multi-agent PPO improving on simple_spread."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.env.jax_multi_agent import make_jax_multi_agent_env
from rljax.utils.errors import ConfigError

jaxmarl = pytest.importorskip("jaxmarl")

SPREAD = "jaxmarl:MPE_simple_spread_v3"


def test_simple_spread_spaces():
    env = make_jax_multi_agent_env(SPREAD, {})
    assert env.agents == ["agent_0", "agent_1", "agent_2"]
    assert env.observation_spaces["agent_0"].shape == (18,)
    assert env.observation_spaces["agent_0"].dtype == np.float32
    assert env.action_spaces["agent_2"] == gym.spaces.Discrete(5)


def test_one_step_matches_jaxmarls_step_env_and_the_limit_truncates():
    env = make_jax_multi_agent_env(SPREAD, {"max_episode_steps": 4})
    ref = jaxmarl.make("MPE_simple_spread_v3", max_steps=4)
    key = jax.random.PRNGKey(5)
    state, obs = env.reset(key)
    ref_obs, ref_state = ref.reset(key)
    actions = {a: jnp.int32(k + 1) for k, a in enumerate(env.agents)}
    state, obs, rewards, term, trunc, _ = env.step(state, actions, key)
    ref_obs, ref_state, ref_rewards, ref_dones, _ = ref.step_env(key, ref_state, actions)
    for a in env.agents:
        np.testing.assert_array_equal(obs[a], ref_obs[a])
        assert float(rewards[a]) == float(ref_rewards[a])
        assert not bool(term[a]) and not bool(trunc[a])
    steps = 1
    while not bool(trunc["agent_0"]):
        state, obs, rewards, term, trunc, _ = env.step(state, actions, key)
        steps += 1
        assert not any(bool(term[a]) for a in env.agents)  # MPE ends only at its limit
    assert steps == 5  # JaxMARL's MPE: done once the step count before the step reaches 4


def test_unknown_and_non_mpe_ids_are_refused_naming_the_mpe_tasks():
    with pytest.raises(ConfigError, match="did you mean 'MPE_simple_spread_v3'"):
        make_jax_multi_agent_env("jaxmarl:MPE_simple_sprad_v3", {})
    with pytest.raises(ConfigError, match="MPE tasks"):
        make_jax_multi_agent_env("jaxmarl:SMAX", {})


@pytest.mark.slow
def test_shared_policy_ppo_improves_on_simple_spread(load_benchmark):
    # The settings of benchmarks/multi_agent_jax_env.py (and docs/jax-envs.md).
    bench = load_benchmark("multi_agent_jax_env")
    config = bench.config(SPREAD, runners=0, num_envs=16, fragment=104, seed=0)
    algo = config.build_algo()
    try:
        returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(80)]
        assert algo._loop.train_step._cache_size() == 1
    finally:
        algo.stop()
    # The three agents' summed return of a random policy is about -80 (26 steps).
    first, last = np.mean(returns[:5]), np.mean(returns[-10:])
    assert last > first + 8 and last > -68, (first, last)
