"""The brax adapter ("brax:<name>"): spaces, one step against brax's own, the time limit."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from optional_library import deferred_importorskip

from rljax.env.jax_env import TimeLimit, jax_env_of
from rljax.env.vector import env_spaces, resolve_env
from rljax.utils.errors import ConfigError

brax_envs = deferred_importorskip("brax.envs")


def _one_step_matches(name, env_config):
    env = jax_env_of(resolve_env(f"brax:{name}", env_config))
    assert isinstance(env, TimeLimit) and env.max_episode_steps == env_config.get(
        "max_episode_steps", 1000
    )
    config = {k: v for k, v in env_config.items() if k != "max_episode_steps"}
    benv = brax_envs.get_environment(name, **config)
    key = jax.random.PRNGKey(0)
    action = jnp.full((benv.action_size,), 0.5, jnp.float32)
    b_state = jax.jit(benv.step)(jax.jit(benv.reset)(key), action)
    state, obs = jax.jit(env.reset)(key)
    state, obs, rew, term, trunc, _ = jax.jit(env.step)(state, action, key)
    np.testing.assert_allclose(np.asarray(obs), np.asarray(b_state.obs), rtol=1e-6)
    assert float(rew) == pytest.approx(float(b_state.reward))
    assert bool(term) == bool(b_state.done > 0.5) and not bool(trunc)
    assert int(state.t) == 1
    return env


def test_fast_env_spaces_and_one_step():
    env = _one_step_matches("fast", {"max_episode_steps": 7})
    assert env.observation_space.shape == (brax_envs.get_environment("fast").observation_size,)
    assert isinstance(env.action_space, gym.spaces.Box)
    assert float(env.action_space.low.min()) == -1.0 and float(env.action_space.high.max()) == 1.0


@pytest.mark.slow
def test_ant_spaces_and_one_step_on_the_positional_backend():
    obs_space, act_space = env_spaces(resolve_env("brax:ant", {"backend": "positional"}))
    assert obs_space.shape == (27,) and obs_space.dtype == np.float32
    assert act_space.shape == (8,)
    _one_step_matches("ant", {"backend": "positional"})


def test_bad_names_and_backends_are_refused():
    with pytest.raises(ConfigError, match=r"unknown brax env 'antt'.*'ant'"):
        jax_env_of(resolve_env("brax:antt"))
    with pytest.raises(ConfigError, match=r"backend='mujoco'; brax's are"):
        jax_env_of(resolve_env("brax:ant", {"backend": "mujoco"}))
