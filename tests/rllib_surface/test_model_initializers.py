"""DefaultModelConfig's initializers (RLlib's torch names) and layer norms, by hand."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.networks.initializers import make_initializer
from rljax.networks.models import build_module
from rljax.networks.q_models import build_q_network
from rljax.utils.errors import ConfigError

KEY = jax.random.PRNGKey(0)


def _draw(name, kwargs=None, shape=(256, 128)):
    return np.asarray(make_initializer(name, kwargs)(KEY, shape, jnp.float32))


def test_initializers_draw_torchs_distributions():
    fan_in, fan_out = 256, 128
    assert (_draw("zeros") == 0).all() and (_draw("ones") == 1).all()
    assert (_draw("constant", {"val": 0.5}) == 0.5).all()
    w = _draw("uniform", {"a": -0.1, "b": 0.3})
    assert w.min() >= -0.1 and w.max() < 0.3 and abs(w.mean() - 0.1) < 0.005
    # Glorot: U(+-gain * sqrt(6 / (fan_in + fan_out))).
    bound = 2.0 * np.sqrt(6.0 / (fan_in + fan_out))
    w = _draw("xavier_uniform", {"gain": 2.0})
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    w = _draw("xavier_normal")
    assert abs(w.std() - np.sqrt(2.0 / (fan_in + fan_out))) < 0.003
    # He, ReLU's gain sqrt(2) over fan_in; leaky_relu with a=0 is the same.
    for kwargs in ({"nonlinearity": "relu"}, {}):
        assert abs(_draw("kaiming_normal", kwargs).std() - np.sqrt(2.0 / fan_in)) < 0.003
    w = _draw("kaiming_uniform", {"nonlinearity": "tanh", "mode": "fan_out"})
    assert np.abs(w).max() <= 5.0 / 3.0 * np.sqrt(3.0 / fan_out)
    w = _draw("normal", {"mean": 1.0, "std": 0.1})
    assert abs(w.mean() - 1.0) < 0.002 and abs(w.std() - 0.1) < 0.002
    w = _draw("trunc_normal", {"std": 1.0, "a": -0.5, "b": 0.5})
    assert w.min() >= -0.5 and w.max() <= 0.5
    q = _draw("orthogonal", {"gain": 0.01}, (64, 64))
    np.testing.assert_allclose(q.T @ q, 1e-4 * np.eye(64), atol=1e-9)


def test_the_model_uses_the_initializers_and_layer_norms_it_is_given():
    def xavier_uniform_(tensor, gain=1.0):  # a torch nn.init function stands for its name
        raise AssertionError("never called")

    mc = DefaultModelConfig(
        fcnet_hiddens=[8, 8],
        fcnet_kernel_initializer="zeros_",
        fcnet_bias_initializer="constant_",
        fcnet_bias_initializer_kwargs={"val": 0.5},
        fcnet_use_layernorm=True,
        head_fcnet_hiddens=[4],
        head_fcnet_kernel_initializer=xavier_uniform_,
        head_fcnet_bias_initializer="ones",
        vf_share_layers=True,
    )
    assert mc.head_fcnet_kernel_initializer == "xavier_uniform"
    module = build_module(gym.spaces.Box(-1, 1, (3,)), 2, False, mc)
    params = module.init(KEY, jnp.zeros((1, 3)))["params"]
    enc = params["pi_encoder"]
    assert set(enc) == {"Dense_0", "LayerNorm_0", "Dense_1", "LayerNorm_1"}
    assert (enc["Dense_0"]["kernel"] == 0).all() and (enc["Dense_1"]["bias"] == 0.5).all()
    head = params["pi_head_mlp"]["Dense_0"]
    assert np.abs(head["kernel"]).max() <= np.sqrt(6.0 / (8 + 4)) and (head["bias"] == 1).all()
    # The head's initializers reach the output layers too (RLlib's), here the value's.
    assert (params["vf"]["bias"] == 1).all()
    # Zero encoder kernels and biases 0.5: LayerNorm of a constant row is 0, tanh(0) = 0,
    # so the heads see zeros and output their biases (1) through a ReLU.
    inputs, value = module.apply({"params": params}, jnp.ones((2, 3)))
    np.testing.assert_allclose(value, (1.0 + params["vf"]["kernel"].sum()) * np.ones(2), rtol=1e-6)
    # rljax's defaults: orthogonal, 0.01 for the policy's outputs.
    plain = build_module(
        gym.spaces.Box(-1, 1, (3,)), 2, False, DefaultModelConfig(fcnet_hiddens=[8])
    )
    pi = np.asarray(plain.init(KEY, jnp.zeros((1, 3)))["params"]["pi"]["kernel"])
    np.testing.assert_allclose(pi.T @ pi, 1e-4 * np.eye(2), atol=1e-9)


def test_q_networks_take_the_head_initializer_for_their_outputs():
    mc = DefaultModelConfig(fcnet_hiddens=[8], head_fcnet_kernel_initializer="ones")
    q = build_q_network(gym.spaces.Box(-1, 1, (3,)), 2, mc, dueling=False)
    params = q.init(KEY, jnp.zeros((1, 3)))["params"]
    assert (params["q"]["kernel"] == 1).all()


def test_fusionnet_builds_rllibs_multi_stream_q_network():
    from rljax.networks.q_models import TwinCritic

    mc = DefaultModelConfig(
        fcnet_hiddens=[8],
        fusionnet_hiddens=[6, 5],
        head_fcnet_hiddens=[],
        fcnet_kernel_initializer="ones",
        fusionnet_kernel_initializer="ones",
        fusionnet_activation=None,
        fcnet_activation=None,
        head_fcnet_kernel_initializer="ones",
    )
    critic = TwinCritic(mc, 1)
    obs, action = jnp.array([[1.0, 2.0, 3.0]]), jnp.array([[0.5]])
    params = critic.init(KEY, obs, action)
    shapes = jax.tree.map(lambda x: x.shape[1:], params["params"]["critics"])
    # The observation's encoder (3 -> 8), the action joined (8 + 1 -> 6 -> 5), the output.
    assert shapes["obs_encoder"]["Dense_0"]["kernel"] == (3, 8)
    assert shapes["fusion"]["Dense_0"]["kernel"] == (9, 6)
    assert shapes["fusion"]["Dense_1"]["kernel"] == (6, 5)
    assert shapes["q"]["kernel"] == (5, 1)
    # All-ones linear layers, zero biases: each encoder unit 1 + 2 + 3 = 6; each first fusion
    # unit 8 * 6 + 0.5 = 48.5; each second 6 * 48.5 = 291; the output 5 * 291 = 1455.
    np.testing.assert_allclose(critic.apply(params, obs, action), [[1455.0]])
    assert DefaultModelConfig.from_any(mc.to_dict()) == mc


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"fcnet_kernel_initializer": "he_magic"}, "is not an initializer rljax has"),
        ({"fcnet_kernel_initializer": 3}, "use an initializer's name"),
        ({"fcnet_bias_initializer": "constant"}, "needs {'val': <number>}"),
        (
            {"fcnet_kernel_initializer": "zeros", "fcnet_kernel_initializer_kwargs": {"gain": 2}},
            "'zeros' takes no arguments; got 'gain'",
        ),
        ({"fcnet_kernel_initializer_kwargs": {"gain": 2}}, "is set but its initializer is not"),
        (
            {
                "head_fcnet_kernel_initializer": "kaiming_normal",
                "head_fcnet_kernel_initializer_kwargs": {"mode": "fan_avg"},
            },
            "use 'fan_in' or 'fan_out'",
        ),
    ],
)
def test_bad_initializer_settings_are_refused_when_the_config_is_made(settings, message):
    with pytest.raises(
        ConfigError,
        match=message.replace("(", r"\(")
        .replace(")", r"\)")
        .replace("{", r"\{")
        .replace("}", r"\}"),
    ):
        DefaultModelConfig(**settings)
