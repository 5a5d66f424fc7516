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


PONG = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)  # rljax's Atari frames, stacked last


def test_conv_stack_counts_by_hand():
    # The Nature CNN on 84x84 frames: 8x8/4 -> 20x20x32, 4x4/2 -> 9x9x64, 3x3/1 -> 7x7x64.
    params, features, activations = memory.conv_encoder(PONG, None)
    assert params == (8 * 8 * 4 * 32 + 32) + (4 * 4 * 32 * 64 + 64) + (3 * 3 * 64 * 64 + 64)
    assert features == 7 * 7 * 64 == 3136
    assert activations == 4 * 84 * 84 + 20 * 20 * 32 + 9 * 9 * 64 + 7 * 7 * 64
    # Channels last, a non-square kernel: 60x40x3 -> (60-5)//2+1 = 28 by (40-3)//2+1 = 19.
    rgb = gym.spaces.Box(0, 255, (60, 40, 3), np.uint8)
    assert memory.conv_encoder(rgb, ((8, (5, 3), 2),)) == (
        5 * 3 * 3 * 8 + 8,
        28 * 19 * 8,
        7200 + 4256,
    )
    # 1x1 convs keep the frame's size: 84 x 84 x 4096 features for the first dense layer.
    assert memory.conv_encoder(PONG, ((4096, (1, 1), 1),))[1] == 84 * 84 * 4096
    # A kernel larger than the frame: no features (building the network then fails by name:
    # test_the_built_network_reads_every_feature_and_a_stack_that_does_not_fit_is_refused).
    assert memory.conv_encoder(PONG, ((8, (100, 100), 1),))[1] == 0


MINATAR = gym.spaces.Box(0.0, 1.0, (10, 10, 4), np.float32)  # gymnax's MinAtar grids


def test_images_too_small_for_the_nature_cnn_get_minatars_network_by_default():
    # The Nature CNN leaves nothing of 10x10 (8x8/4 -> 1x1, then 4x4 does not fit): a 3x3
    # conv of 16 channels, stride 1 -> 8x8x16.
    assert memory.conv_encoder(MINATAR, None) == (3 * 3 * 4 * 16 + 16, 8 * 8 * 16, 400 + 1024)
    # 36x36 is the smallest image the Nature CNN reads: 8x8/4 -> 8, 4x4/2 -> 3, 3x3/1 -> 1.
    assert memory.conv_encoder(gym.spaces.Box(0, 255, (36, 36, 1), np.uint8), None)[1] == 64
    assert (
        memory.conv_encoder(gym.spaces.Box(0, 255, (35, 35, 1), np.uint8), None)[1] == 33 * 33 * 16
    )


def test_the_built_network_reads_every_feature_and_a_stack_that_does_not_fit_is_refused():
    import jax
    import jax.numpy as jnp

    from rljax.algorithms.ppo.ppo import build_policy
    from rljax.networks.q_models import build_q_network
    from rljax.utils.errors import ConfigError

    act = gym.spaces.Discrete(3)
    ppo = PPOConfig().environment("CartPole-v1")
    module = build_policy(MINATAR, act, ppo)[1]
    shapes = jax.eval_shape(module.init, jax.random.PRNGKey(0), jnp.zeros((1, 10, 10, 4)))
    kernels = {x.shape for x in jax.tree.leaves(shapes)}
    # The head (128 units, MinAtar's) reads all 8x8x16 features.
    assert (3, 3, 4, 16) in kernels and (1024, 128) in kernels
    # Before, the Nature CNN was built on 10x10 and its head read a (0, 512) kernel: nothing.
    assert not any(0 in shape for shape in kernels)
    count = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(shapes))
    assert ppo.network_params(MINATAR, act) == count
    dqn = DQNConfig().environment("CartPole-v1")
    q = build_q_network(MINATAR, 3, dqn.model_config, dqn.dueling, dqn.num_atoms)
    q_shapes = jax.eval_shape(q.init, jax.random.PRNGKey(0), jnp.zeros((1, 10, 10, 4)))
    assert (1024, 128) in {x.shape for x in jax.tree.leaves(q_shapes)}
    assert dqn.network_params(MINATAR, act) == sum(
        int(np.prod(x.shape)) for x in jax.tree.leaves(q_shapes)
    )
    ppo.rl_module(model_config={"conv_filters": [[16, [3, 3], 1], [32, [9, 9], 1]]})
    module = build_policy(MINATAR, act, ppo)[1]
    with pytest.raises(ConfigError, match=r"layer 1's 9x9 kernel does not fit its 8x8 input"):
        jax.eval_shape(module.init, jax.random.PRNGKey(0), jnp.zeros((1, 10, 10, 4)))


@pytest.mark.parametrize("conv_filters", [None, [[16, [3, 5], 2], [8, 2, 3]], [[4096, 1, 1]]])
@pytest.mark.parametrize("shared", [True, False])
def test_image_network_estimates_are_the_built_networks_sizes(conv_filters, shared):
    import jax
    import jax.numpy as jnp

    from rljax.algorithms.ppo.ppo import build_policy
    from rljax.networks.q_models import build_q_network

    def count(module):  # abstract: nothing is allocated, even for 29 billion parameters
        shapes = jax.eval_shape(module.init, jax.random.PRNGKey(0), jnp.zeros((1, 84, 84, 4)))
        return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(shapes))

    act = gym.spaces.Discrete(6)
    model = {"conv_filters": conv_filters, "vf_share_layers": shared, "head_fcnet_hiddens": [64]}
    ppo = PPOConfig().environment("Pong-v5").rl_module(model_config=model)
    assert ppo.network_params(PONG, act) == count(build_policy(PONG, act, ppo)[1])
    dqn = DQNConfig().environment("Pong-v5").rl_module(model_config=model)
    dqn.training(dueling=shared, num_atoms=3)
    q = build_q_network(PONG, 6, dqn.model_config, dqn.dueling, dqn.num_atoms)
    assert dqn.network_params(PONG, act) == count(q)


def test_pong_with_4096_channel_convs_is_refused_and_tuned_breakout_fits_24_gb():
    from rljax.env.vector import env_spaces, resolve_env

    config = (
        PPOConfig().environment("Pong-v5").rl_module(model_config={"conv_filters": [[4096, 1, 1]]})
    )
    obs, act = env_spaces(resolve_env("Pong-v5"))
    assert obs == PONG
    terms = dict(config.memory_terms(obs, act))
    # 84*84*4096 features into the policy's and the value's 512-unit heads: ~29.6 billion
    # float32 parameters, five copies.
    networks = terms["the networks (model_config.conv_filters=[[4096, [1, 1], 1]])"]
    assert networks == config.network_params(obs, act) * 4 * 5 > 500e9
    with pytest.raises(ConfigError, match=r"conv_filters=\[\[4096, \[1, 1\], 1\]\]"):
        memory.check_fits(config.memory_terms(obs, act), "PPO on Pong-v5", available=24 * 10**9)
    tuned = DQNConfig.from_yaml("rljax/tuned_examples/dqn_breakout.yaml")
    tuned.validate()
    obs, act = env_spaces(resolve_env(tuned.env, tuned.env_config))
    total = sum(b for _, b in tuned.memory_terms(obs, act))
    assert 700e6 < total < 1e9  # the 100,000-frame replay buffer (706 MB) is most of it
    memory.check_fits(tuned.memory_terms(obs, act), "DQN on Breakout-v5", available=24 * 10**9)


def test_conv_activation_term_by_hand():
    config = (
        DQNConfig()
        .environment("Pong-v5")
        .env_runners(num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=8)
    )
    terms = dict(config.memory_terms(PONG, gym.spaces.Discrete(6)))
    # Three passes of the batch of 8 (obs and next obs online, next obs on the target), kept and
    # differentiated (x 2), plus one acting row per env; float32. Learning on the CPU, each
    # layer's slices too (patch_conv's [H', W', kh * kw * C]).
    floats = 4 * 84 * 84 + 20 * 20 * 32 + 9 * 9 * 64 + 7 * 7 * 64
    floats += 20 * 20 * 8 * 8 * 4 + 9 * 9 * 4 * 4 * 32 + 7 * 7 * 3 * 3 * 64
    name = "the conv activations of 24 rows (model_config.conv_filters=None (the defaults: the Nature CNN's, MinAtar's below 36x36))"
    assert terms[name] == (2 * 24 + 2) * floats * 4


def test_distributional_and_n_step_terms_by_hand():
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=32, num_atoms=51, n_step=(2, 5))
    )
    terms = dict(config.memory_terms(OBS, ACT))
    # categorical_projection's float32 [batch, atoms, atoms] weights.
    assert (
        terms["num_atoms=51 (the projection's [batch, num_atoms, num_atoms])"] == 32 * 51 * 51 * 4
    )
    # Windows of the longest n: [batch, 5] when sampling and [4 envs, 5] when adding, 24 bytes
    # an element.
    assert terms["n_step=(2, 5) (windows of [batch, 5])"] == (32 + 4) * 5 * 24
    config.training(num_atoms=1, n_step=1)
    assert not [n for n in dict(config.memory_terms(OBS, ACT)) if "atoms" in n or "n_step" in n]
    config.training(num_atoms=100_000, n_step=1)
    with pytest.raises(ConfigError, match="num_atoms=100,000"):
        memory.check_fits(config.memory_terms(OBS, ACT), "DQN", available=1 << 40)


def test_process_and_thread_terms_by_hand():
    from gymnasium.envs.classic_control import CartPoleEnv

    from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=3, num_envs_per_env_runner=5, gym_env_vectorize_mode="ASYNC")
    )
    terms = dict(config.memory_terms(OBS, ACT))
    assert terms["num_env_runners=3 runner threads"] == 3 * 8 * 2**20
    # EnvPool's ASYNC sub-envs are threads of one C++ pool: no process term.
    assert not [n for n in terms if "processes" in n]
    name = (
        "gym_env_vectorize_mode='ASYNC': 15 env processes (num_envs_per_env_runner=5 x 3 runner(s))"
    )
    config.environment(CartPoleEnv)  # gymnasium's CartPole: a process per sub-env
    assert dict(config.memory_terms(OBS, ACT))[name] == 15 * 64 * 2**20
    # Multi-agent copies in ASYNC mode are processes too.
    config.environment(MultiAgentCartPole, env_config={"num_agents": 2})
    assert dict(config.memory_terms(OBS, ACT))[name] == 15 * 64 * 2**20
    config.env_runners(gym_env_vectorize_mode="SYNC", num_env_runners=0)
    assert not [
        n for n in dict(config.memory_terms(OBS, ACT)) if "processes" in n or "threads" in n
    ]
