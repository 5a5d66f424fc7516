"""The memory estimate: hand-computed terms, and the refusal that names the largest ones."""

import gymnasium as gym
import numpy as np
import pytest

from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.utils import memory
from rljax.utils.errors import ConfigError

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)  # CartPole: 16 bytes
ACT = gym.spaces.Discrete(2)


def test_dense_stack_parameters():
    # 4 -> 8: 32 weights + 8 biases; 8 -> 2: 16 + 2.
    assert memory.mlp_params(4, [8], 2) == 58
    assert memory.mlp_params(3, [], 1) == 4


def test_ppo_terms_by_hand():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=16)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    terms = dict(config.memory_terms(OBS, ACT))
    assert terms["num_envs_per_env_runner=2 x 1 runner(s)"] == 2 * (16 * 1024 + 2 * 16)
    # 16 steps x 2 envs, each row the observation and 64 bytes of extras, four copies.
    assert (
        terms["the sampled batch of 32 env steps (rollout_fragment_length x envs)"] == 32 * 80 * 4
    )
    # One shared network of 58 float32 parameters, five copies (parameters, gradients, two Adam
    # moments, the runners' copy).
    assert terms["the networks (model_config.fcnet_hiddens=[8])"] == 58 * 4 * 5
    config.rl_module(model_config={"fcnet_hiddens": [8], "vf_share_layers": False})
    assert dict(config.memory_terms(OBS, ACT))["the networks (model_config.fcnet_hiddens=[8])"] == (
        2 * 58 * 4 * 5
    )


def test_replay_term_by_hand():
    config = (
        DQNConfig().environment("CartPole-v1").training(replay_buffer_config={"capacity": 1000})
    )
    terms = dict(config.memory_terms(OBS, ACT))
    # A row: the observation (16), the action (Discrete: one int64, 8) and 16 bytes of flags.
    assert terms["replay_buffer_config capacity=1,000"] == 1000 * 40


def test_refusal_names_the_total_and_the_largest_terms():
    memory.check_fits([("a", 10), ("b", 20)], "X", available=30)  # fits exactly
    with pytest.raises(ConfigError) as info:
        memory.check_fits([("a", 10), ("b", 20), ("c", 1)], "PPO on X", available=30)
    message = str(info.value)
    assert message.startswith("PPO on X would need about 31 B of memory (b: ~20 B; a: ~10 B; c")
    assert "more than this machine's 30 B" in message


def test_the_machine_memory_is_read():
    assert memory.machine_memory_bytes() > 1 << 30
