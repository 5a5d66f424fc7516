"""RLlib's example envs at RLlib's paths, with their semantics; gymnasium for env_configs
EnvPool's task does not take."""

from __future__ import annotations

import logging

import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.env.env_context import EnvContext
from rljax.env.vector import env_spaces, envpool_config, resolve_env
from rljax.examples.envs.classes.cartpole_crashing import (
    CartPoleCrashing,
    MultiAgentCartPoleCrashing,
)
from rljax.examples.envs.classes.multi_agent import MultiAgentPendulum
from rljax.examples.envs.classes.simple_corridor import SimpleCorridor
from rljax.utils.error import EnvError
from rljax.utils.errors import ConfigError


def test_simple_corridor_walks_right_to_its_end():
    env = SimpleCorridor({"corridor_length": 3})
    obs, _ = env.reset(seed=0)
    assert obs.tolist() == [0.0] and env.observation_space.contains(obs)
    steps = [env.step(a) for a in (0, 1, 1, 0, 1, 1)]
    assert [float(s[0][0]) for s in steps] == [0.0, 1.0, 2.0, 1.0, 2.0, 3.0]
    assert [s[1] for s in steps] == [-0.01] * 5 + [1.0]
    assert [s[2] for s in steps] == [False] * 5 + [True]
    env.set_corridor_length(5)
    assert env.end_pos == 5
    with pytest.raises(ValueError, match=r"corridor_length=1000"):
        SimpleCorridor({"corridor_length": 1000})
    with pytest.raises(ValueError, match="action 0 .* or 1"):
        env.step(2)


def test_cartpole_crashing_crashes_where_and_when_configured():
    env = CartPoleCrashing(EnvContext({"p_crash": 0.0, "crash_after_n_steps": 3}, worker_index=1))
    env.reset(seed=0)
    env.step(0)
    env.step(1)
    with pytest.raises(EnvError, match="worker=1 env-idx=0 during step"):
        env.step(0)
    # Only on the listed runners.
    spared = CartPoleCrashing(
        EnvContext({"crash_after_n_steps": 1, "crash_on_worker_indices": [2]}, worker_index=1)
    )
    spared.reset(seed=0)
    spared.step(0)
    # The step counts per episode; a pair draws the step in [low, high) for each episode.
    drawn = CartPoleCrashing({"p_crash": 0.0, "crash_after_n_steps": (2, 4), "seed": 5})
    for _ in range(5):
        drawn.reset(seed=0)
        with pytest.raises(EnvError):
            for _ in range(3):
                drawn.step(0)
        assert drawn.timesteps in (2, 3)
    always = CartPoleCrashing({"p_crash_reset": 1.0})
    with pytest.raises(EnvError, match="during reset"):
        always.reset()
    agents = MultiAgentCartPoleCrashing({"num_agents": 2, "p_crash": 0.0})
    obs, _ = agents.reset(seed=0)
    assert sorted(obs) == [0, 1]
    assert MultiAgentPendulum({"num_agents": 2}).reset(seed=0)[0][1].shape == (3,)


def test_an_env_config_envpool_lacks_runs_on_gymnasium(caplog):
    desc = ["SF", "HG"]
    with caplog.at_level(logging.INFO, logger="rljax"):
        spec = resolve_env("FrozenLake-v1", {"desc": desc, "is_slippery": False})
    assert spec.backend == "gymnasium"
    assert "runs on gymnasium, not EnvPool" in caplog.text and "'desc'" in caplog.text
    env = spec.gymnasium_creator()(spec.env_config)
    assert env.unwrapped.desc.shape == (2, 2)
    assert resolve_env("FrozenLake-v1", {}).backend == "envpool"
    assert resolve_env("FrozenLake-v1", {"size": 8}).backend == "envpool"  # EnvPool's own
    # A setting neither takes stays with EnvPool, whose check names its settings.
    assert resolve_env("CartPole-v1", {"frame_skip": 4}).backend == "envpool"
    # Atari stays on EnvPool (gymnasium's ALE env lacks its preprocessing).
    assert resolve_env("Pong-v5", {"frameskip": 1}).backend == "envpool"


def test_atari_takes_gymnasium_ale_names_and_refuses_those_that_would_change_meaning():
    ale = {"frameskip": 2, "repeat_action_probability": 0.25, "full_action_space": True}
    assert envpool_config("Pong-v5", ale) == {
        "frame_skip": 2,
        "repeat_action_probability": 0.25,
        "full_action_space": True,
    }
    refused = {
        r"'frameskip'\]=1 on EnvPool's Atari task 'Pong-v5': RLlib's Atari scripts": {
            "frameskip": 1
        },
        "fixed number of frames": {"frameskip": (2, 5)},
        "set one": {"frameskip": 4, "frame_skip": 4},
        r"'max_episode_steps' counts agent steps": {"max_num_frames_per_episode": 1000},
        "record_video": {"render_mode": "rgb_array"},
        "no RAM observations": {"obs_type": "ram"},
    }
    for match, env_config in refused.items():
        with pytest.raises(ConfigError, match=match):
            envpool_config("Pong-v5", env_config)
    # The settings reach EnvPool (18 actions with the full action space), and a refused one
    # stops build_algo() before anything compiles.
    assert env_spaces(resolve_env("Breakout-v5", ale))[1].n == 18
    with pytest.raises(ConfigError, match="frameskip"):
        PPOConfig().environment("Breakout-v5", env_config={"frameskip": 1}).build_algo()
