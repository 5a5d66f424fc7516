"""Dict / Tuple observations, MultiDiscrete actions and action masking: the encoders' shapes,
masked sampling, PPO's loss with masks by hand, and PPO end to end on RLlib's example envs."""

from __future__ import annotations

import json

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.losses import PPOBatch, PPOLossConfig, ppo_loss
from rljax.core.rl_module.default_model_config import DefaultModelConfig
from rljax.core.rl_module.rl_module import RLModule, RLModuleSpec
from rljax.env.spaces import zeros_batch
from rljax.examples.envs.classes.action_mask_env import ActionMaskEnv
from rljax.examples.envs.classes.random_env import RandomEnv
from rljax.networks.distributions import Categorical, MultiCategorical, make_distribution
from rljax.networks.models import MASKED_LOGIT, _LeafFeatures, build_module
from rljax.utils.errors import ConfigError

NESTED = gym.spaces.Dict(
    {
        "pos": gym.spaces.Box(-1, 1, (3,), np.float32),
        "grid": gym.spaces.Box(-1, 1, (2, 2), np.float32),  # rank 2: flattened
        "t": gym.spaces.Tuple((gym.spaces.Discrete(4), gym.spaces.MultiDiscrete([2, 3]))),
        "img": gym.spaces.Box(0, 255, (16, 16, 2), np.uint8),
    }
)


def test_nested_observations_are_encoded_per_leaf_and_concatenated():
    mc = DefaultModelConfig(fcnet_hiddens=(8,), conv_filters=((4, (4, 4), 2),))
    module = build_module(NESTED, 5, False, mc)
    obs = jax.tree.map(jnp.asarray, zeros_batch(NESTED, 7))
    params = module.init(jax.random.PRNGKey(0), obs)
    logits, value = module.apply(params, obs)
    assert logits.shape == (7, 5) and value.shape == (7,)
    # Leaves in key order: grid (4), img (a 4-filter CNN: 7x7x4 = 196), pos (3), then the
    # tuple's one-hots: Discrete(4) and MultiDiscrete([2, 3]) (2 + 3).
    leaves = _LeafFeatures(module.kinds, mc)
    feats = leaves.apply({"params": params["params"]["leaves"]}, obs)
    assert feats.shape == (7, 4 + 196 + 3 + 4 + 2 + 3)
    one = dict(obs, t=(jnp.full((7,), 2), jnp.tile(jnp.asarray([1, 2]), (7, 1))))
    hot = leaves.apply({"params": params["params"]["leaves"]}, one)[0, -9:]
    np.testing.assert_array_equal(hot, [0, 0, 1, 0, 0, 1, 0, 0, 1])


def _masked_module(n: int = 4):
    space = gym.spaces.Dict(
        {
            "action_mask": gym.spaces.Box(0, 1, (n,), np.float32),
            "observations": gym.spaces.Box(-1, 1, (3,), np.float32),
        }
    )
    module = build_module(space, n, False, DefaultModelConfig(fcnet_hiddens=(8,)))
    obs = jax.tree.map(jnp.asarray, zeros_batch(space, 1))
    return module, module.init(jax.random.PRNGKey(1), obs)


def test_masked_actions_are_never_sampled_nor_greedy():
    module, params = _masked_module()
    mask = np.asarray([[0, 1, 0, 1], [1, 0, 0, 0]], np.float32)
    obs = {"action_mask": jnp.asarray(mask), "observations": jnp.ones((2, 3))}
    logits, _ = module.apply(params, obs)
    assert np.all(np.asarray(logits)[mask == 0] == MASKED_LOGIT)
    dist = Categorical(4)
    draws = jax.vmap(lambda k: dist.sample(k, logits))(
        jax.random.split(jax.random.PRNGKey(0), 10_000)
    )
    draws = np.asarray(draws)
    assert set(draws[:, 0]) == {1, 3} and set(draws[:, 1]) == {0}
    assert 0.3 < np.mean(draws[:, 0] == 1) < 0.7  # both allowed actions are drawn
    assert mask[np.arange(2), np.asarray(dist.mode(logits))].all()


def test_ppo_loss_with_masked_logits_by_hand():
    """Masked actions drop out of the log-probabilities, the entropy and the KL; the
    gradient reaches the allowed logits only, and nothing is NaN."""
    raw = jnp.asarray([[0.5, 2.0, -1.0]])
    mask = jnp.asarray([[1.0, 0.0, 1.0]])
    logits = jnp.where(mask > 0, raw, MASKED_LOGIT)
    dist = Categorical(3)
    batch = PPOBatch(
        obs=None,
        action=jnp.asarray([2]),
        action_logp=jnp.asarray([np.log(0.5)]),
        action_dist_inputs=jnp.asarray([[0.0, MASKED_LOGIT, 0.0]]),  # sampler: 50/50
        vf_preds=jnp.zeros(1),
        advantages=jnp.asarray([1.0]),
        value_targets=jnp.zeros(1),
        mask=jnp.ones(1),
    )
    cfg = PPOLossConfig(
        clip_param=10.0, vf_clip_param=None, vf_loss_coeff=0.0, entropy_coeff=0.1, use_kl_loss=True
    )
    # The allowed actions 0 and 2 only: p = softmax([0.5, -1.0]).
    p = np.exp([0.5, -1.0]) / np.exp([0.5, -1.0]).sum()
    entropy = -np.sum(p * np.log(p))
    kl = np.sum(0.5 * (np.log(0.5) - np.log(p)))
    ratio = p[1] / 0.5
    expected = -ratio * 1.0 - 0.1 * entropy + 0.2 * kl
    total, m = ppo_loss(logits, jnp.zeros(1), batch, dist, jnp.asarray(0.2), cfg)
    np.testing.assert_allclose(total, expected, rtol=1e-5)
    np.testing.assert_allclose(m["entropy"], entropy, rtol=1e-5)
    np.testing.assert_allclose(m["mean_kl_loss"], kl, rtol=1e-5)

    def loss_of(raw_logits):
        masked = jnp.where(mask > 0, raw_logits, MASKED_LOGIT)
        return ppo_loss(masked, jnp.zeros(1), batch, dist, jnp.asarray(0.2), cfg)[0]

    grad = np.asarray(jax.grad(loss_of)(raw))
    assert np.all(np.isfinite(grad)) and grad[0, 1] == 0.0 and np.all(grad[0, [0, 2]] != 0)


def test_multi_categorical_by_hand():
    dist = make_distribution(gym.spaces.MultiDiscrete([2, 3]))
    assert isinstance(dist, MultiCategorical) and dist.num_outputs == 5
    inputs = jnp.asarray([[0.0, 1.0, 0.0, 0.0, 2.0]])
    a = jnp.asarray([[1, 2]])
    l1 = np.log(np.exp(1) / (1 + np.exp(1)))
    l2 = np.log(np.exp(2) / (2 + np.exp(2)))
    np.testing.assert_allclose(dist.log_prob(inputs, a), [l1 + l2], rtol=1e-6)
    np.testing.assert_array_equal(dist.mode(inputs), [[1, 2]])
    p1 = np.exp([0, 1]) / np.exp([0, 1]).sum()
    p2 = np.exp([0, 0, 2]) / np.exp([0, 0, 2]).sum()
    h = -np.sum(p1 * np.log(p1)) - np.sum(p2 * np.log(p2))
    np.testing.assert_allclose(dist.entropy(inputs), [h], rtol=1e-6)
    np.testing.assert_allclose(dist.kl(inputs, inputs), [0.0], atol=1e-7)
    sample = dist.sample(jax.random.PRNGKey(0), jnp.tile(inputs, (1000, 1)))
    assert sample.shape == (1000, 2) and set(np.unique(sample[:, 1])) == {0, 1, 2}
    with pytest.raises(ConfigError, match="non-zero starts"):
        make_distribution(gym.spaces.MultiDiscrete([2, 3], start=[1, 0]))


def _ppo(env, env_config) -> PPOConfig:
    return (
        PPOConfig()
        .environment(env, env_config=env_config)
        .env_runners(num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16], "conv_filters": [[4, [4, 4], 2]]})
        .debugging(seed=0)
    )


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (12 s alone)
def test_ppo_on_rllibs_action_mask_env_end_to_end(tmp_path):
    """ActionMaskEnv raises on a masked action, so a run that trains and evaluates sampled
    none; the config's spaces (RLlib's env_config form) go through the checkpoint."""
    env_config = {
        "action_space": gym.spaces.Discrete(5),
        "observation_space": gym.spaces.Box(-1, 1, (3,), np.float32),
        "max_episode_len": 20,
    }
    with _ppo(ActionMaskEnv, env_config).build_algo() as algo:
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] > 100  # 128 rows, less auto-resets
        assert algo.evaluate()["env_runners"]["num_episodes"] > 0
        ckpt = algo.save_to_path(tmp_path / "ckpt")
        eye = np.eye(5, dtype=np.float32)
        obs = {"action_mask": eye, "observations": np.zeros((5, 3), np.float32)}
        np.testing.assert_array_equal(algo.compute_actions(obs), np.arange(5))
        one = {"action_mask": eye[3], "observations": np.zeros(3, np.float32)}
        assert algo.compute_single_action(one, explore=True) == 3
        with pytest.raises(ValueError, match="keys \\['action_mask', 'observations'\\]"):
            algo.compute_single_action({"observations": np.zeros(3)})
        exported = algo.export_policy(tmp_path / "policy", platforms=("cpu",))
    meta = json.loads(next((tmp_path / "ckpt").rglob("rljax_checkpoint.json")).read_text())
    assert meta["config"]["env_config"]["action_space"] == {
        "__gym_space__": {"type": "Discrete", "n": 5, "start": 0}
    }
    with Algorithm.from_checkpoint(ckpt) as restored:
        assert restored.config.env_config["action_space"] == gym.spaces.Discrete(5)
        np.testing.assert_array_equal(restored.compute_actions(obs), np.arange(5))
    module = RLModule.from_checkpoint(ckpt)
    np.testing.assert_array_equal(module.forward_inference({"obs": obs})["actions"], np.arange(5))
    from jax import export

    program = export.deserialize((tmp_path / "policy" / "policy_greedy.stablehlo").read_bytes())
    np.testing.assert_array_equal(np.asarray(program.call(obs)), np.arange(5))
    assert json.loads((tmp_path / "policy" / "policy.json").read_text())["observation_dtype"] == {
        "action_mask": "float32",
        "observations": "float32",
    }
    assert exported


ACTIONS = gym.spaces.Dict(
    {
        "move": gym.spaces.Discrete(3),
        "force": gym.spaces.Box(-1, 1, (2,), np.float32),
        "grid": gym.spaces.Tuple((gym.spaces.MultiDiscrete([3, 2]),)),
    }
)


def test_composite_actions_by_hand():
    """A Dict action space's distribution: the parts' inputs concatenated in key order (force,
    grid, move), log-probabilities and entropies summed over the parts."""
    dist = make_distribution(ACTIONS)
    assert dist.num_outputs == 4 + 5 + 3
    inputs = jnp.asarray([[0.5, -0.5, 0.0, np.log(2.0), 0, 1, 0, 0, 0, 2, 0, 0]], jnp.float32)
    action = {
        "force": jnp.asarray([[0.5, 0.0]]),
        "grid": (jnp.asarray([[1, 0]]),),
        "move": jnp.asarray([0]),
    }
    gauss = -0.5 * 0**2 - 0 - 0.5 * np.log(2 * np.pi)  # force[0]: mean 0.5, std 1, at 0.5
    gauss += -0.5 * (0.5 / 2) ** 2 - np.log(2.0) - 0.5 * np.log(2 * np.pi)  # std 2, at 0
    grid = np.log(np.e / (np.e + 2)) + np.log(0.5)  # [0, 1, 0] at 1; [0, 0] at 0
    move = np.log(np.exp(2) / (np.exp(2) + 2))  # [2, 0, 0] at 0
    np.testing.assert_allclose(dist.log_prob(inputs, action), [gauss + grid + move], rtol=1e-5)
    mode = dist.mode(inputs)
    assert int(mode["move"][0]) == 0 and mode["grid"][0].tolist() == [[1, 0]]
    np.testing.assert_allclose(mode["force"], [[0.5, -0.5]])
    samples = dist.sample(jax.random.PRNGKey(0), jnp.tile(inputs, (500, 1)))
    # (Box parts are clipped to the space by to_env_action, as single Box actions are.)
    assert samples["force"].shape == (500, 2) and samples["grid"][0].shape == (500, 2)
    assert set(np.unique(samples["move"]).tolist()) == {0, 1, 2}
    assert np.isfinite(float(dist.entropy(inputs)[0]))
    np.testing.assert_allclose(dist.kl(inputs, inputs), [0.0], atol=1e-6)


@pytest.mark.slow  # integration: in the README's full run
def test_ppo_trains_nested_observations_and_composite_actions():
    """RandomEnv checks every action against its Dict space (check_action_bounds)."""
    env_config = {
        "action_space": ACTIONS,
        "observation_space": NESTED,
        "max_episode_len": 10,
        "check_action_bounds": True,
    }
    with _ppo(RandomEnv, env_config).build_algo() as algo:
        algo.train()
        action = algo.compute_single_action(NESTED.sample())
        assert ACTIONS.contains(action)
        assert algo.evaluate()["env_runners"]["num_episodes"] > 0
        batch = {"a": NESTED.sample(), "b": NESTED.sample()}
        by_id = algo.compute_actions(batch)
        assert set(by_id) == {"a", "b"} and all(ACTIONS.contains(a) for a in by_id.values())


def test_a_mask_that_does_not_fit_the_actions_is_refused():
    space = gym.spaces.Dict(
        {
            "action_mask": gym.spaces.Box(0, 1, (3,), np.float32),
            "observations": gym.spaces.Box(-1, 1, (3,), np.float32),
        }
    )
    with pytest.raises(ConfigError, match="one entry per action"):
        build_module(space, 4, False, DefaultModelConfig())


class _DictModule(nn.Module):
    """A user module for a Dict observation, as the README's advice says to write one."""

    num_outputs: int

    @nn.compact
    def __call__(self, obs):
        x = jnp.concatenate([obs["observations"], obs["action_mask"]], axis=-1)
        return nn.Dense(self.num_outputs)(x), nn.Dense(1)(x)[..., 0]


def test_a_user_module_gets_the_dict_observation():
    env_config = {
        "action_space": gym.spaces.Discrete(3),
        "observation_space": gym.spaces.Box(-1, 1, (2,), np.float32),
        "max_episode_len": 5,
    }
    config = _ppo(ActionMaskEnv, env_config).rl_module(
        rl_module_spec=RLModuleSpec(module_class=_DictModule)
    )
    with config.build_algo() as algo:
        params = algo.state.params["default_policy"]["params"]
        assert params["Dense_0"]["kernel"].shape == (2 + 3, 3)  # observations (2) + mask (3)
        obs = {"action_mask": np.ones(3, np.float32), "observations": np.zeros(2, np.float32)}
        assert algo.compute_single_action(obs) in (0, 1, 2)


def test_a_recurrent_network_masks_actions_too():
    """Was: with use_lstm=True the action mask was read as one more input and masked
    nothing (masked actions were sampled)."""
    from rljax.networks.models import MaskedRecurrentActorCritic
    from rljax.runners.acting import RecurrentInput

    space = gym.spaces.Dict(
        {
            "action_mask": gym.spaces.Box(0, 1, (3,), np.float32),
            "observations": gym.spaces.Box(-1, 1, (2,), np.float32),
        }
    )
    mc = DefaultModelConfig(use_lstm=True, lstm_cell_size=4, fcnet_hiddens=(8,))
    module = build_module(space, 3, False, mc)
    assert isinstance(module, MaskedRecurrentActorCritic)
    obs = {
        "action_mask": jnp.asarray([[[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]]),  # [B=1, L=2, 3]
        "observations": jnp.zeros((1, 2, 2)),
    }
    rin = RecurrentInput(
        obs=obs, state_in=module.initial_state(1), first=jnp.asarray([[True, False]])
    )
    params = module.init(jax.random.PRNGKey(0), rin)
    logits, value, _ = module.apply(params, rin)
    assert logits.shape == (1, 2, 3) and value.shape == (1, 2)
    masked = np.asarray(logits) == MASKED_LOGIT
    np.testing.assert_array_equal(masked, np.asarray(obs["action_mask"]) == 0)
