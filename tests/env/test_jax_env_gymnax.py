"""The gymnax adapter ("gymnax:<id>"): spaces, one step against gymnax's own, truncation."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from optional_library import deferred_importorskip

from rljax.env.jax_env import auto_reset_step, jax_env_of
from rljax.env.vector import env_spaces, resolve_env
from rljax.utils.errors import ConfigError

gymnax = deferred_importorskip("gymnax")


def test_cartpole_spaces_are_gymnasium_spaces():
    spec = resolve_env("gymnax:CartPole-v1")
    assert spec.backend == "jax" and spec.name == "gymnax:CartPole-v1"
    obs_space, act_space = env_spaces(spec)
    assert isinstance(obs_space, gym.spaces.Box)
    assert obs_space.shape == (4,) and obs_space.dtype == np.float32
    assert np.isclose(obs_space.high[0], 4.8) and np.isclose(obs_space.high[2], 0.41887903)
    assert act_space == gym.spaces.Discrete(2)


def test_breakout_minatar_spaces():
    obs_space, act_space = env_spaces(resolve_env("gymnax:Breakout-MinAtar"))
    assert obs_space.shape == (10, 10, 4) and obs_space.dtype == np.float32
    assert float(obs_space.low.min()) == 0.0 and float(obs_space.high.max()) == 1.0
    assert act_space == gym.spaces.Discrete(3)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Breakout-MinAtar"])
def test_one_step_matches_gymnax_step(env_id):
    env = jax_env_of(resolve_env(f"gymnax:{env_id}"))
    genv, params = gymnax.make(env_id)
    key = jax.random.PRNGKey(3)
    g_obs, g_state = genv.reset(key, params)
    state, obs = env.reset(key)
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(g_obs, np.float32))
    step_key = jax.random.PRNGKey(4)
    g_obs, g_state, g_rew, g_term, g_trunc, _ = genv.step(step_key, g_state, 1, params)
    # gymnax's step splits its key: the first half steps, the second resets.
    state, obs, rew, term, trunc, _ = env.step(state, jnp.int32(1), jax.random.split(step_key)[0])
    assert not bool(g_term | g_trunc)
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(g_obs, np.float32))
    assert float(rew) == float(g_rew) and (bool(term), bool(trunc)) == (False, False)
    assert jax.tree.all(jax.tree.map(lambda a, b: bool(jnp.all(a == b)), state, g_state))


def test_time_limit_from_env_config_truncates():
    env = jax_env_of(resolve_env("gymnax:CartPole-v1", {"max_episode_steps": 3}))
    assert env.params.max_steps_in_episode == 3
    key = jax.random.PRNGKey(0)
    state, _ = env.reset(key)
    flags = []
    for i in range(3):
        state, out = auto_reset_step(env, state, jnp.int32(i % 2), jax.random.PRNGKey(i))
        flags.append((bool(out.terminated), bool(out.truncated)))
    assert flags == [(False, False), (False, False), (False, True)]
    assert int(state.time) == 0  # reset within the step


def test_bad_ids_and_settings_are_refused():
    with pytest.raises(ConfigError, match=r"unknown gymnax env 'CartPole-v2'.*'CartPole-v1'"):
        env_spaces(resolve_env("gymnax:CartPole-v2"))
    with pytest.raises(ConfigError, match=r"\['gravityy'\] are not settings.*'gravity'"):
        env_spaces(resolve_env("gymnax:CartPole-v1", {"gravityy": 1.0}))


@pytest.mark.parametrize("limit", [-3, 0, True, 2.7, "abc", 10**12])
def test_a_time_limit_that_is_no_int32_count_is_refused(limit):
    """Was: -3, 0 and True gave one-step episodes; "abc", 10**12 and gravity="x" failed inside
    the compiled step (a tracer's TypeError, an int32 overflow)."""
    from rljax.env.jax_env import make_jax_env

    allowed = r"use an int in \[1, 2147483647\]"
    with pytest.raises(ConfigError, match=r"env_config\['max_episode_steps'\].*" + allowed):
        make_jax_env("gymnax:CartPole-v1", {"max_episode_steps": limit})
    with pytest.raises(ConfigError, match="max_episode_steps=.*" + allowed):
        make_jax_env("rljax:CartPole-v1", {"max_episode_steps": limit})


def test_gymnax_params_take_values_of_their_fields_kinds():
    from rljax.env.jax_env import make_jax_env

    with pytest.raises(ConfigError, match=r"\['gravity'\] of gymnax's 'CartPole-v1'='x'"):
        make_jax_env("gymnax:CartPole-v1", {"gravity": "x"})
    env = make_jax_env("gymnax:CartPole-v1", {"gravity": 10, "max_episode_steps": 50})
    assert env.params.gravity == 10 and env.params.max_steps_in_episode == 50


def test_rljax_breakout_minatar_steps_as_gymnaxs():
    """rljax's own Breakout-MinAtar against gymnax's over 3,000 random steps (every episode
    started from gymnax's reset state): the same observations, rewards and ends. Both step in
    one scanned program."""
    from rljax.env.jax_adapters.minatar import BreakoutMinAtar, BreakoutState

    ours = BreakoutMinAtar()
    genv, params = gymnax.make("Breakout-MinAtar")

    def from_gymnax(g):
        return BreakoutState(
            *(jnp.asarray(v, jnp.int32) for v in (g.ball_y, g.ball_x, g.ball_dir, g.pos)),
            bricks=jnp.asarray(g.brick_map, bool),
            strike=jnp.asarray(g.strike, bool),
            last_y=jnp.asarray(g.last_y, jnp.int32),
            last_x=jnp.asarray(g.last_x, jnp.int32),
        )

    def step_both(carry, action):
        key, g, state = carry
        key, k = jax.random.split(key)
        g_obs, g, g_rew, g_done, _ = genv.step_env(k, g, action, params)
        g_term = g.terminal  # gymnax's done also counts its time limit
        state, obs, rew, term, _, _ = ours.step(state, action, jax.random.PRNGKey(0))
        # An episode gymnax ended starts again from gymnax's reset state, in both.
        _, g_new = genv.reset_env(k, params)
        g = jax.tree.map(lambda a, b: jnp.where(g_done, a, b), g_new, g)
        state = jax.tree.map(lambda a, b: jnp.where(g_done, a, b), from_gymnax(g_new), state)
        return (key, g, state), (obs, g_obs, rew, g_rew, term, g_term, g_done)

    key = jax.random.PRNGKey(0)
    g_obs, g = genv.reset_env(key, params)
    state = from_gymnax(g)
    np.testing.assert_array_equal(np.asarray(ours.observe(state)), np.asarray(g_obs))
    actions = jnp.asarray(np.random.default_rng(0).integers(0, 3, 3000), jnp.int32)
    scan = jax.jit(lambda carry, a: jax.lax.scan(step_both, carry, a)[1])
    obs, g_obs, rew, g_rew, term, g_term, g_done = map(np.asarray, scan((key, g, state), actions))
    np.testing.assert_array_equal(obs, g_obs)
    np.testing.assert_array_equal(rew, g_rew)
    np.testing.assert_array_equal(term, g_term)
    episodes, rewards = int(g_done.sum()), int(rew.sum())
    assert episodes > 50 and rewards > 10  # the walls, bricks and paddle were all met
