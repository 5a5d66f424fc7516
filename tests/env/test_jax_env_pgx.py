"""The Pgx adapter ("pgx:<game>"): spaces, turns and one step against Pgx's own, refusals,
and PPO learning tic-tac-toe against a random opponent."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.multi_rl_module import MultiRLModuleSpec
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.env.jax_multi_agent import make_jax_multi_agent_env
from rljax.examples.rl_modules.classes.random_rlm import RandomRLModule
from rljax.utils.errors import ConfigError

pgx = pytest.importorskip("pgx")


def test_connect_four_spaces_and_turns():
    env = make_jax_multi_agent_env("pgx:connect_four", {})
    assert env.agents == ["player_0", "player_1"]
    assert env.observation_spaces["player_1"].shape == (6, 7, 2)
    assert env.action_spaces["player_0"] == gym.spaces.Discrete(7)
    state, obs = env.reset(jax.random.PRNGKey(0))
    mover = int(state.current_player)
    np.testing.assert_array_equal(env.acting(state), [mover == 0, mover == 1])


def test_one_step_matches_pgx_and_moves_the_acting_player():
    env = make_jax_multi_agent_env("pgx:connect_four", {})
    ref = pgx.make("connect_four")
    key = jax.random.PRNGKey(1)
    state, _ = env.reset(key)
    ref_state = ref.init(key)
    mover = f"player_{int(state.current_player)}"
    other = "player_0" if mover == "player_1" else "player_1"
    actions = {mover: jnp.int32(3), other: jnp.int32(6)}  # the other's move is ignored
    state, obs, rewards, term, trunc, _ = env.step(state, actions, key)
    ref_state = ref.step(ref_state, jnp.int32(3), key)
    for i, agent in enumerate(env.agents):
        np.testing.assert_array_equal(obs[agent], ref.observe(ref_state, i).astype(np.float32))
        assert float(rewards[agent]) == float(ref_state.rewards[i])
    assert int(state.current_player) != int(ref.init(key).current_player)


def test_single_player_and_unknown_games_are_refused_by_name():
    with pytest.raises(ConfigError, match="single-agent"):
        make_jax_multi_agent_env("pgx:2048", {})
    with pytest.raises(ConfigError, match="did you mean 'connect_four'"):
        make_jax_multi_agent_env("pgx:connect_fours", {})


@pytest.mark.slow
def test_ppo_learns_tic_tac_toe_against_a_random_player():
    config = (
        PPOConfig()
        .environment("pgx:tic_tac_toe")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=32, rollout_fragment_length=32)
        .training(
            train_batch_size=1024,
            minibatch_size=256,
            num_epochs=4,
            lr=1e-3,
            lambda_=0.95,
            entropy_coeff=0.01,
            vf_clip_param=None,
        )
        .rl_module(
            model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": False},
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "learner": RLModuleSpec(),
                    "random": RLModuleSpec(module_class=RandomRLModule),
                }
            ),
        )
        .multi_agent(
            policies={"learner", "random"},
            policy_mapping_fn=lambda aid, ep, **kw: "learner" if aid == "player_0" else "random",
            policies_to_train=["learner"],
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        returns = []
        for _ in range(40):
            runners = algo.train()["env_runners"]
            returns.append(runners["module_episode_returns_mean"]["learner"])
        assert algo._loop.train_step._cache_size() == 1
    finally:
        algo.stop()
    # A win is +1, a loss -1 (an illegal move loses): random play scores about 0.
    assert abs(np.mean(returns[:3])) < 0.2 and np.mean(returns[-5:]) > 0.5, returns
