"""DQN with a Flax module of the user's as its Q-network (``RLModuleSpec(module_class=...)``,
RLlib's ``"custom_model"``), Dict observations through replay, epsilon-greedy exploration that
keeps to the valid actions, and the other off-policy algorithms' refusal of a module."""

from __future__ import annotations

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.dqn.dqn import epsilon_greedy
from rljax.algorithms.sac import SACConfig
from rljax.core.rl_module.spec import RLModuleSpec
from rljax.examples._old_api_stack.models.parametric_actions_model import (
    ParametricActionsModel,
    ParametricActionsModelThatLearnsEmbeddings,
    TorchParametricActionsModel,
)
from rljax.examples.envs.classes.parametric_actions_cartpole import (
    ParametricActionsCartPole,
    ParametricActionsCartPoleNoEmbeddings,
)
from rljax.utils.errors import ConfigError

LOWEST = float(jnp.finfo(jnp.float32).min)


class _Linear(nn.Module):
    """Q-values from one dense layer, biased towards action 1 at the start."""

    num_outputs: int

    @nn.compact
    def __call__(self, obs):
        bias = nn.initializers.constant(jnp.arange(self.num_outputs, dtype=jnp.float32) * 10.0)
        q = nn.Dense(self.num_outputs, kernel_init=nn.initializers.zeros, bias_init=bias)(obs)
        return q  # a bare array: the Q-values


def _dqn(env="CartPole-v1", module=_Linear, **training) -> DQNConfig:
    return (
        DQNConfig()
        .environment(env)
        .training(
            **{
                "dueling": False,
                "train_batch_size_per_learner": 16,
                "num_steps_sampled_before_learning_starts": 32,
                "replay_buffer_config": {"capacity": 1000},
                **training,
            }
        )
        .reporting(min_sample_timesteps_per_iteration=64)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=module))
        .debugging(seed=0)
    )


def test_dqn_builds_and_trains_the_users_module():
    """Was: the module was ignored and DQN trained its default network (silently)."""
    with _dqn().build_algo() as algo:
        params = algo.state.learner.params["params"]
        assert set(params) == {"module"} and set(params["module"]) == {"Dense_0"}
        np.testing.assert_allclose(params["module"]["Dense_0"]["bias"], [0.0, 10.0])
        obs = np.zeros(4, np.float32)
        assert algo.compute_single_action(obs, explore=False) == 1  # argmax of its Q-values
        algo.train()
        after = algo.state.learner.params["params"]["module"]["Dense_0"]["kernel"]
        assert np.abs(np.asarray(after)).sum() > 0  # trained from its zero start


@pytest.mark.parametrize(
    "heads, shown",
    [({"dueling": True}, "dueling=True"), ({"num_atoms": 51}, "num_atoms=51")],
)
def test_a_users_q_module_refuses_the_default_heads(heads, shown):
    config = _dqn(**heads)
    with pytest.raises(ConfigError, match=f"module_class=_Linear.*{shown}.*dueling=False"):
        config.validate()


def test_a_q_module_of_the_wrong_width_is_refused():
    """Was: a module giving 2 Q-values on 4 actions trained, and actions 2 and 3 were never
    taken, not even by random exploration."""

    class Two(nn.Module):
        num_outputs: int

        @nn.compact
        def __call__(self, obs):
            return nn.Dense(2)(obs)

    from rljax.examples.envs.classes.random_env import RandomEnv

    config = _dqn(RandomEnv, Two).environment(
        env_config={
            "action_space": gym.spaces.Discrete(4),
            "observation_space": gym.spaces.Box(-1, 1, (3,), np.float32),
        }
    )
    with pytest.raises(ConfigError, match=r"shape \(1, 2\); DQN needs \[batch, 4\]"):
        config.build_algo()


def test_a_multi_agent_off_policy_config_refuses_a_module():
    """Was: multi-agent DQN and SAC built their default networks over a plain
    RLModuleSpec(module_class=...) without a word."""
    config = _dqn().multi_agent(policies=["p0"], policy_mapping_fn=lambda aid, *a, **kw: "p0")
    with pytest.raises(ConfigError, match="multi-agent DQN builds its networks"):
        config.validate()


def test_old_stack_hiddens_with_a_q_module_are_refused():
    """RLlib's old stack puts a Q head of ``hiddens`` on a custom model's outputs; rljax's
    module gives the Q-values itself, so a head is refused rather than dropped."""
    config = _dqn().rl_module(model_config={"head_fcnet_hiddens": [256]})
    with pytest.raises(ConfigError, match=r"head_fcnet_hiddens=\[256\]"):
        config.validate()


def test_sac_refuses_a_module_before_building():
    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .rl_module(rl_module_spec=RLModuleSpec(module_class=_Linear))
    )
    with pytest.raises(ConfigError, match="module_class=_Linear.*SAC builds its networks"):
        config.validate()


def test_epsilon_greedy_draws_only_valid_actions():
    """A masked Q-value (the float's lowest, as log(mask) clipped there gives) is never drawn,
    as in RLlib's EpsilonGreedy; a row with none valid draws among all."""
    q = jnp.tile(jnp.array([[0.0, LOWEST, 2.0, LOWEST]]), (4000, 1))
    actions = np.asarray(epsilon_greedy(jax.random.PRNGKey(0), q, jnp.asarray(1.0), masked=True))
    # The default networks mask nothing: all actions are drawn (and the stream is as before).
    unmasked = np.asarray(epsilon_greedy(jax.random.PRNGKey(0), q, jnp.asarray(1.0)))
    assert set(np.unique(unmasked)) == {0, 1, 2, 3}
    np.testing.assert_allclose(
        np.bincount(actions, minlength=4) / 4000, [0.5, 0, 0.5, 0], atol=0.03
    )
    none_valid = jnp.full((4000, 4), LOWEST)
    drawn = np.asarray(
        epsilon_greedy(jax.random.PRNGKey(1), none_valid, jnp.asarray(1.0), masked=True)
    )
    assert set(np.unique(drawn)) == {0, 1, 2, 3}


def test_parametric_actions_model_scores_offered_actions_and_masks_the_rest():
    """RLlib's ParametricActionsModel: logits = avail_actions . intent, masked to the lowest
    float where action_mask is 0; the torch name is the same network."""
    assert issubclass(TorchParametricActionsModel, ParametricActionsModel)
    model = ParametricActionsModel(num_outputs=3)
    avail = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]], np.float32)
    obs = {
        "cart": np.ones((1, 4), np.float32),
        "avail_actions": avail,
        "action_mask": np.array([[1, 0, 1]], np.int8),
    }
    params = model.init(jax.random.PRNGKey(0), obs)
    logits, value = model.apply(params, obs)
    assert logits.shape == (1, 3) and value.shape == (1,)
    intent = _intent(params, obs["cart"])  # [2]: the cart's intent vector
    np.testing.assert_allclose(logits[0, [0, 2]], [intent[0], intent[0] + intent[1]], rtol=1e-5)
    assert float(logits[0, 1]) <= LOWEST / 2


def _intent(params, cart):
    from rljax.examples._old_api_stack.models.parametric_actions_model import (
        _FullyConnectedNetwork,
    )

    net = _FullyConnectedNetwork(2)
    intent, _ = net.apply({"params": params["params"]["action_embed_model"]}, cart)
    return np.asarray(intent[0])


def test_learned_embeddings_model_masks_invalid_actions():
    model = ParametricActionsModelThatLearnsEmbeddings(num_outputs=4)
    obs = {
        "cart": np.zeros((2, 4), np.float32),
        "valid_avail_actions_mask": np.array([[1, 1, 0, 0], [0, 1, 0, 1]], np.int8),
    }
    params = model.init(jax.random.PRNGKey(0), obs)
    logits, _ = model.apply(params, obs)
    assert params["params"]["action_embed_matrix"]["embedding"].shape == (5, 2)
    np.testing.assert_array_equal(
        np.asarray(logits) > LOWEST / 2, obs["valid_avail_actions_mask"] == 1
    )


@pytest.mark.slow  # builds, trains, evaluates and restores DQN twice (about 6 s)
@pytest.mark.parametrize(
    "env, module",
    [
        (ParametricActionsCartPole, ParametricActionsModel),
        (ParametricActionsCartPoleNoEmbeddings, ParametricActionsModelThatLearnsEmbeddings),
    ],
)
def test_dqn_trains_on_dict_observations_without_an_invalid_action(tmp_path, env, module):
    """The env raises on an action it did not offer; exploring, greedy, evaluated and restored
    runs take none. Was: DQN refused a Dict observation space ("has no fixed shape")."""
    from rljax import register_env

    steps: list[bool] = []  # per env step: whether the action was one the env offered

    class Counted(env):
        def step(self, action):
            steps.append(int(action) in (self.left_idx, self.right_idx))
            return super().step(action)

    register_env("pa_test", lambda _: Counted(10))
    config = _dqn("pa_test", module).evaluation(evaluation_duration=2)
    with config.build_algo() as algo:
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] > 32
        assert algo.evaluate()["env_runners"]["num_episodes"] >= 2
        assert len(steps) > 64 and all(steps)
        probe = env(10)
        obs, _ = probe.reset(seed=3)
        action = algo.compute_single_action(obs, explore=False)
        valid = np.flatnonzero(obs.get("action_mask", obs.get("valid_avail_actions_mask")))
        assert action in valid
        algo.save_to_path(tmp_path / "ckpt")
    # The module class is passed: a checkpoint names code, which loading never imports itself.
    with Algorithm.from_checkpoint(tmp_path / "ckpt", module_class=module) as restored:
        assert restored.compute_single_action(obs, explore=False) == action


def test_rllibs_auto_included_model_config_keys_set_dqns_settings():
    """RLlib's DQN module reads ``epsilon``, ``dueling``, ``num_atoms``, ... from its
    model_config (``_model_config_auto_includes``). Was: "unknown model_config key"."""
    from rljax.algorithms.cql import CQLConfig
    from rljax.algorithms.ppo import PPOConfig

    config = DQNConfig().rl_module(
        model_config={"fcnet_hiddens": [64], "epsilon": [(0, 1.0), (10_000, 0.02)], "std_init": 0.3}
    )
    assert config.epsilon == [(0, 1.0), (10_000, 0.02)] and config.sigma0 == 0.3
    assert config.model_config.fcnet_hiddens == (64,)
    spec = DQNConfig().environment("CartPole-v1")
    spec.rl_module(rl_module_spec=RLModuleSpec(model_config={"dueling": False, "v_min": -5.0}))
    spec.checked_algo_class()
    assert spec.dueling is False and spec.v_min == -5.0
    assert CQLConfig().rl_module(model_config={"num_actions": 4}).num_actions == 4
    with pytest.raises(ConfigError, match=r"model_config\['num_atoms'\]=0"):
        DQNConfig().rl_module(model_config={"num_atoms": 0})
    with pytest.raises(ConfigError, match="unknown model_config key 'epsilon'"):
        PPOConfig().rl_module(model_config={"epsilon": 0.1})  # not PPO's
