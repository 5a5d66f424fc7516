"""RLlib's example RLModules that rljax ports to Flax at their paths: ``TinyAtariCNN`` and
``LSTMContainingRLModule`` (RLlib's ``custom_cnn_rl_module.py`` and
``custom_lstm_rl_module.py`` plug them in with ``RLModuleSpec(module_class=...)``)."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.examples.rl_modules.classes.lstm_containing_rlm import LSTMContainingRLModule
from rljax.examples.rl_modules.classes.tiny_atari_cnn_rlm import TinyAtariCNN
from rljax.runners.acting import RecurrentInput

RLLIB_FILTERS = [[16, 4, 2, "same"], [32, 4, 2, "same"], [256, 11, 1, "valid"]]


def _sizes(params):
    return {
        "/".join(str(k.key) for k in path): tuple(x.shape)
        for path, x in jax.tree_util.tree_flatten_with_path(params)[0]
    }


def test_tiny_atari_cnn_is_rllibs_network():
    net = TinyAtariCNN(num_outputs=6, conv_filters=RLLIB_FILTERS)  # a list, as scripts give
    shapes = jax.eval_shape(net.init, jax.random.key(0), jnp.zeros((1, 42, 42, 4)))["params"]
    sizes = _sizes(shapes)
    assert sizes["Conv_2/kernel"] == (11, 11, 32, 256)
    assert sizes["logits/kernel"] == (1, 1, 256, 6) and sizes["values/kernel"] == (256, 1)
    # RLlib's count for Pong's 6 actions: 4*16*16+16 + 16*32*16+32 + 32*256*121+256
    # + 256*6+6 + 256+1.
    assert sum(int(np.prod(s)) for s in sizes.values()) == 1_002_551

    # The same sums as XLA's "SAME" / "VALID" convolutions on the same weights (a smaller
    # stack: 10 -> 5 -> 1).
    filters = [[4, 3, 2, "same"], [8, 5, 1, "valid"]]
    net = TinyAtariCNN(num_outputs=3, conv_filters=filters)
    frames = np.random.default_rng(0).uniform(-1, 1, (3, 10, 10, 2)).astype(np.float32)
    params = net.init(jax.random.key(0), frames[:1])["params"]
    # normc_initializer(0.01): the value head's incoming weights have norm 0.01.
    np.testing.assert_allclose(np.linalg.norm(params["values"]["kernel"]), 0.01, rtol=1e-5)
    assert not np.any(params["Conv_0"]["bias"])  # zero biases
    logits, value = net.apply({"params": params}, frames)
    assert logits.shape == (3, 3) and value.shape == (3,)
    dims = ("NHWC", "HWIO", "NHWC")
    x = jnp.asarray(frames)
    for i, (_, _, stride, padding) in enumerate(filters):
        layer = params[f"Conv_{i}"]
        x = jax.lax.conv_general_dilated(
            x, layer["kernel"], (stride, stride), padding.upper(), dimension_numbers=dims
        )
        x = jax.nn.relu(x + layer["bias"])
    embeddings = x.reshape((3, 8))
    expected_logits = embeddings @ params["logits"]["kernel"][0, 0] + params["logits"]["bias"]
    expected_value = embeddings @ params["values"]["kernel"][:, 0] + params["values"]["bias"]
    np.testing.assert_allclose(logits, expected_logits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(value, expected_value, rtol=1e-4, atol=1e-5)


def test_tiny_atari_cnn_says_when_its_filters_do_not_reach_one_pixel():
    with pytest.raises(ValueError, match=r"leave a 11x11 image; they must reduce 84x84"):
        jax.eval_shape(
            TinyAtariCNN(num_outputs=2).init, jax.random.key(0), jnp.zeros((1, 84, 84, 4))
        )
    with pytest.raises(ValueError, match=r"padding 'full'; use 'same' or 'valid'"):
        net = TinyAtariCNN(num_outputs=2, conv_filters=[[4, 3, 1, "full"]])
        jax.eval_shape(net.init, jax.random.key(0), jnp.zeros((1, 8, 8, 1)))


def test_lstm_containing_module_carries_its_state_and_restarts_it_at_episode_starts():
    net = LSTMContainingRLModule(num_outputs=2, lstm_cell_size=5, dense_layers=[7])
    rng = np.random.default_rng(1)
    obs = jnp.asarray(rng.normal(size=(2, 3, 4)).astype(np.float32))
    zeros = net.initial_state(2)
    assert set(zeros) == {"h", "c"} and zeros["h"].shape == (2, 5)
    first = jnp.asarray([[True, False, False], [True, False, True]])
    params = net.init(jax.random.key(0), RecurrentInput(obs[:, :1], zeros, first[:, :1]))
    assert _sizes(params["params"])["fc_0/kernel"] == (5, 7)
    apply = jax.jit(net.apply)
    logits, value, state = apply(params, RecurrentInput(obs, zeros, first))
    assert logits.shape == (2, 3, 2) and value.shape == (2, 3) and state["c"].shape == (2, 5)
    # Step by step, carrying the state, restarting from zeros where an episode starts.
    carried = jax.tree.map(lambda s: s + 3.0, zeros)  # whatever came before step 0 is dropped
    for t in range(3):
        if t == 2:  # row 1 starts a new episode here
            carried = jax.tree.map(lambda s: s.at[1].set(0.0), carried)
        step_logits, step_value, carried = apply(
            params, RecurrentInput(obs[:, t : t + 1], carried, first[:, t : t + 1] & (t == 0))
        )
        np.testing.assert_allclose(step_logits[:, 0], logits[:, t], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(step_value[:, 0], value[:, t], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(carried["h"], state["h"], rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # two PPO builds and iterations (a CNN's and an LSTM's programs)
def test_ppo_trains_with_rllibs_example_modules(tmp_path):
    from rljax.algorithms.algorithm import Algorithm
    from rljax.algorithms.ppo import PPOConfig
    from rljax.core.rl_module import RLModuleSpec
    from rljax.examples.envs.classes.random_env import RandomEnv
    from rljax.examples.envs.classes.stateless_cartpole import StatelessCartPole

    small = {"train_batch_size_per_learner": 64, "minibatch_size": 32, "num_epochs": 1}
    image = gym.spaces.Box(-1.0, 1.0, (42, 42, 4), np.float32)
    cnn = (
        PPOConfig()
        .environment(RandomEnv, env_config={"observation_space": image})
        .env_runners(num_envs_per_env_runner=2)
        .training(**small)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=TinyAtariCNN))
    )
    with cnn.build_algo() as algo:
        assert algo.train()["num_env_steps_sampled_lifetime"] == 64
        out = algo.get_module().forward_inference({"obs": np.zeros((2, 42, 42, 4), np.float32)})
        assert out["action_dist_inputs"].shape == (2, 2)
    spec = RLModuleSpec(
        module_class=LSTMContainingRLModule,
        model_config={"lstm_cell_size": 8, "dense_layers": [8], "max_seq_len": 4},
    )
    lstm = (
        PPOConfig()
        .environment(StatelessCartPole)
        .env_runners(num_envs_per_env_runner=2)
        .training(**small)
        .rl_module(rl_module_spec=spec)
    )
    obs = np.random.default_rng(0).normal(size=(3, 2)).astype(np.float32)
    with lstm.build_algo() as algo:
        assert algo.train()["num_env_steps_sampled_lifetime"] == 64
        out = algo.get_module().forward_inference({"obs": obs})
        assert out["state_out"]["h"].shape == (3, 8)
        path = algo.save_to_path(tmp_path / "lstm")
    # rljax's own example modules load from a checkpoint without opting in to imports.
    with Algorithm.from_checkpoint(path) as loaded:
        again = loaded.get_module().forward_inference({"obs": obs})
    np.testing.assert_array_equal(again["action_dist_inputs"], out["action_dist_inputs"])
