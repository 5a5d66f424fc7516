"""RLlib's ``RLModule`` attributes on an algorithm's module (spaces, ``model_config``,
``is_stateful``, ``forward_train``) and its action distribution classes."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.action_dist import ActionDistributionClass
from rljax.networks.distributions import Categorical, DiagGaussian


def test_a_categorical_distribution_class_by_hand():
    dist = ActionDistributionClass(Categorical(2)).from_logits([[0.0, math.log(3.0)]])
    np.testing.assert_allclose(dist.logp([1]), [math.log(0.75)], rtol=1e-6)
    np.testing.assert_allclose(
        dist.entropy(), [-(0.25 * math.log(0.25) + 0.75 * math.log(0.75))], rtol=1e-6
    )
    assert dist.to_deterministic().sample().tolist() == [1]
    draws = dist.sample(key=None)
    assert draws.shape == (1,) and draws[0] in (0, 1)
    uniform = ActionDistributionClass(Categorical(2)).from_logits([[0.0, 0.0]])
    # KL(p || uniform) = sum p log(p / 0.5)
    want = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
    np.testing.assert_allclose(dist.kl(uniform), [want], rtol=1e-5)


def test_a_gaussian_distribution_class_by_hand():
    # mean 1, log std 0: the density of 1 is 1/sqrt(2 pi); the mode is the mean.
    dist = ActionDistributionClass(DiagGaussian(1)).from_logits([[1.0, 0.0]])
    np.testing.assert_allclose(dist.logp([[1.0]]), [-0.5 * math.log(2 * math.pi)], rtol=1e-6)
    np.testing.assert_allclose(dist.deterministic_sample(), [[1.0]])


@pytest.mark.slow  # builds a small PPO (about 2 s)
def test_an_algorithms_module_has_rllibs_attributes():
    """Was: AttributeError for each (RLlib's docs read them on algo.get_module())."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .rl_module(model_config={"fcnet_hiddens": [8], "fcnet_activation": "relu"})
    )
    with config.build_algo() as algo:
        module = algo.get_module()
        assert module.observation_space == gym.make("CartPole-v1").observation_space
        assert module.action_space == gym.spaces.Discrete(2)
        assert module.model_config["fcnet_hiddens"] == [8]
        assert module.model_config["fcnet_activation"] == "relu"
        assert module.inference_only is False and module.is_stateful() is False
        obs = np.array([[0.01, 0.02, 0.03, 0.04]], np.float32)
        logits = module.forward_train({"obs": obs})["action_dist_inputs"]
        np.testing.assert_allclose(
            logits, module.forward_inference({"obs": obs})["action_dist_inputs"]
        )
        # RLlib's documented inference: the dist class from the module, its greedy sample.
        dist = module.get_inference_action_dist_cls().from_logits(logits)
        assert dist.to_deterministic().sample().tolist() == [int(np.argmax(logits[0]))]
        np.testing.assert_allclose(
            np.exp(dist.logp([0])) + np.exp(dist.logp([1])), [1.0], rtol=1e-6
        )
