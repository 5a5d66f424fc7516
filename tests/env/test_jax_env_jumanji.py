"""The jumanji adapter ("jumanji:<id>"): spaces, one step against jumanji's own step."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from optional_library import deferred_importorskip

from rljax.env.jax_env import jax_env_of
from rljax.env.vector import env_spaces, resolve_env
from rljax.utils.errors import ConfigError

jumanji = deferred_importorskip("jumanji")


def test_snake_spaces():
    obs_space, act_space = env_spaces(resolve_env("jumanji:Snake-v1"))
    assert isinstance(obs_space, gym.spaces.Dict)
    assert sorted(obs_space.spaces) == ["action_mask", "grid", "step_count"]
    assert obs_space["grid"].shape == (12, 12, 5) and obs_space["grid"].dtype == np.float32
    assert float(obs_space["step_count"].high) == 3999.0
    assert obs_space["action_mask"].shape == (4,)
    assert act_space == gym.spaces.Discrete(4)


def test_one_step_matches_jumanji_step():
    env = jax_env_of(resolve_env("jumanji:Snake-v1"))
    jenv = jumanji.make("Snake-v1")
    key = jax.random.PRNGKey(1)
    j_state, _ = jenv.reset(key)
    state, obs = env.reset(key)
    j_state, ts = jax.jit(jenv.step)(j_state, jnp.int32(2))
    state, obs, rew, term, trunc, _ = jax.jit(env.step)(state, jnp.int32(2), jax.random.PRNGKey(9))
    np.testing.assert_array_equal(np.asarray(obs["grid"]), np.asarray(ts.observation.grid))
    assert float(obs["step_count"]) == float(ts.observation.step_count) == 1.0
    np.testing.assert_array_equal(
        np.asarray(obs["action_mask"]), np.asarray(ts.observation.action_mask, np.float32)
    )
    assert float(rew) == float(ts.reward)
    assert (bool(term), bool(trunc)) == (False, False) and not bool(ts.last())


def test_a_terminal_step_is_terminated_not_truncated():
    env = jax_env_of(resolve_env("jumanji:Snake-v1"))
    state, _ = env.reset(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    # Keep moving one way: the snake hits the wall within the grid's 12 cells.
    for i in range(12):
        state, _, _, term, trunc, _ = step(state, jnp.int32(0), jax.random.PRNGKey(i))
        if bool(term):
            break
    assert bool(term) and not bool(trunc)


def test_unknown_jumanji_id_is_refused():
    with pytest.raises(ConfigError, match=r"unknown jumanji env 'Snake-v9'.*'Snake-v1'"):
        env_spaces(resolve_env("jumanji:Snake-v9"))
