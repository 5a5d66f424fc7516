"""make_ppo_update's minibatch order: shuffled each epoch, or in batch order with
``shuffle_batch_per_epoch=False`` (RLlib's setting)."""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.learner import (
    POLICY_ID,
    PPOHyperparams,
    PPOTrainState,
    make_ppo_update,
)
from rljax.algorithms.ppo.losses import PPOBatch
from rljax.networks.distributions import Categorical

ROWS, EPOCHS = 6, 3
PADDING_ROW = 2  # an auto-reset step: mask 0


def _recorder() -> optax.GradientTransformation:
    """An optimizer that keeps the parameters and records each step's gradient of ``b``."""

    def init(params):
        return {"step": jnp.zeros((), jnp.int32), "grads": jnp.zeros((EPOCHS * ROWS,))}

    def update(grads, state, params=None):
        g = grads[POLICY_ID]["b"]
        grads_seen = state["grads"].at[state["step"]].set(g)
        new_state = {"step": state["step"] + 1, "grads": grads_seen}
        return jax.tree.map(jnp.zeros_like, grads), new_state

    return optax.GradientTransformation(init, update)


def _seen_rows(shuffle: bool, seed: int) -> np.ndarray:
    """The rows of each minibatch (of one row), read from the gradients the update took: the
    value is ``b`` (0) and row i's target is i + 1, so a row's value-loss gradient is
    ``-2 (i + 1)``; a minibatch of padding has none."""
    cfg = PPOConfig().training(
        minibatch_size=1,
        num_epochs=EPOCHS,
        vf_clip_param=None,
        shuffle_batch_per_epoch=shuffle,
    )
    hp = PPOHyperparams.from_config(cfg, num_shards=1, shard_size=ROWS)
    assert hp.shuffle_batch_per_epoch is shuffle

    def apply_fn(params, obs):
        return jnp.zeros((obs.shape[0], 2)), jnp.broadcast_to(params["b"], obs.shape[:1])

    optimizer = _recorder()
    update = jax.jit(make_ppo_update(apply_fn, Categorical(2), optimizer, hp))
    mask = np.ones((1, ROWS), np.float32)
    mask[0, PADDING_ROW] = 0.0
    zeros = jnp.zeros((1, ROWS))
    batch = PPOBatch(
        obs=jnp.zeros((1, ROWS, 1)),
        action=jnp.zeros((1, ROWS), jnp.int32),
        action_logp=jnp.full((1, ROWS), jnp.log(0.5)),
        action_dist_inputs=jnp.zeros((1, ROWS, 2)),
        vf_preds=zeros,
        advantages=zeros,
        value_targets=jnp.arange(1.0, ROWS + 1)[None],
        mask=jnp.asarray(mask),
    )
    params = {POLICY_ID: {"b": jnp.zeros(())}}
    state = PPOTrainState(
        params=params,
        opt_state=optimizer.init(params),
        kl_coeff=jnp.float32(hp.kl_coeff),
        step=jnp.zeros((), jnp.int32),
        key=jax.random.PRNGKey(seed),
    )
    state, _ = update(state, batch)
    grads = np.asarray(state.opt_state["grads"]).reshape(EPOCHS, ROWS)
    return np.rint(-grads / 2).astype(int) - 1  # row ids; -1 for a minibatch of padding


def test_without_shuffling_minibatches_take_the_rows_in_order():
    # Every epoch the same: the real rows in batch order, then the padding row (no gradient).
    expected = [[0, 1, 3, 4, 5, -1]] * EPOCHS
    for seed in (0, 1):
        np.testing.assert_array_equal(_seen_rows(False, seed), expected)


@pytest.mark.parametrize("seed", [0, 1])
def test_shuffling_permutes_the_real_rows_each_epoch(seed):
    seen = _seen_rows(True, seed)
    for epoch in seen:
        # Every real row once, in some order; the padding row still last.
        assert sorted(epoch[:-1]) == [0, 1, 3, 4, 5] and epoch[-1] == -1
    # Over three epochs of five rows, an unshuffled or repeated order would be a 1-in-14,400
    # coincidence (two epochs equal: 1 in 120 each); these seeds give distinct orders.
    assert len({tuple(e) for e in seen}) == EPOCHS
    assert not (seen == [0, 1, 3, 4, 5, -1]).all(axis=1).any()


def test_shuffle_batch_per_epoch_is_a_per_policy_setting_with_rllibs_default():
    assert PPOConfig().shuffle_batch_per_epoch is True
    assert "shuffle_batch_per_epoch" in PPOConfig._PER_MODULE_KEYS
    cfg = PPOConfig.from_dict({"shuffle_batch_per_epoch": False})
    assert cfg.to_dict()["shuffle_batch_per_epoch"] is False


def test_flat_params_updates_give_the_same_numbers_as_the_tree():
    """PPO's update with the parameters carried as one vector (``flat_params``) against the
    scanned per-layer tree: the same parameters, optimizer state and metrics after 2 epochs of
    4 minibatches on a random batch (a 2-layer MLP, the flattened Adam PPO builds)."""
    from rljax.algorithms.ppo.learner import make_optimizer

    cfg = PPOConfig().training(minibatch_size=8, num_epochs=2, vf_clip_param=None)
    hp = PPOHyperparams.from_config(cfg, num_shards=1, shard_size=32)
    keys = jax.random.split(jax.random.PRNGKey(3), 8)

    def apply_fn(params, obs):
        h = jnp.tanh(obs @ params["w1"] + params["b1"])
        return h @ params["pi"], (h @ params["vf"])[:, 0]

    params = {
        POLICY_ID: {
            "w1": jax.random.normal(keys[0], (3, 8)),
            "b1": jnp.zeros((8,)),
            "pi": 0.1 * jax.random.normal(keys[1], (8, 2)),
            "vf": jax.random.normal(keys[2], (8, 1)),
        }
    }
    n = 32
    batch = PPOBatch(
        obs=jax.random.normal(keys[3], (1, n, 3)),
        action=jax.random.randint(keys[4], (1, n), 0, 2),
        action_logp=jnp.full((1, n), jnp.log(0.5)),
        action_dist_inputs=jnp.zeros((1, n, 2)),
        vf_preds=jnp.zeros((1, n)),
        advantages=jax.random.normal(keys[5], (1, n)),
        value_targets=jax.random.normal(keys[6], (1, n)),
        mask=(jax.random.uniform(keys[7], (1, n)) > 0.2).astype(jnp.float32),
    )
    optimizer = make_optimizer(0.01, None)
    state = PPOTrainState(
        params=params,
        opt_state=optimizer.init(params),
        kl_coeff=jnp.float32(0.0),
        step=jnp.zeros((), jnp.int32),
        key=jax.random.PRNGKey(0),
    )
    out = {
        flat: jax.jit(make_ppo_update(apply_fn, Categorical(2), optimizer, hp, flat_params=flat))(
            state, batch
        )
        for flat in (False, True)
    }
    tree_state, tree_metrics = out[False]
    for variant in (True,):
        other_state, other_metrics = out[variant]
        assert jax.tree.structure(other_state) == jax.tree.structure(tree_state)
        for x, y in zip(jax.tree.leaves(other_state), jax.tree.leaves(tree_state), strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)
        assert tree_metrics.keys() == other_metrics.keys()
        for k in tree_metrics:
            np.testing.assert_allclose(other_metrics[k], tree_metrics[k], rtol=1e-6, err_msg=k)
    moved = jax.tree.leaves(out[True][0].params)[0] - jax.tree.leaves(params)[0]
    assert float(jnp.max(jnp.abs(moved))) > 1e-3  # the update did train


class _Frames(gym.Env):
    """8x8x2 images, 2 actions, episodes of 10 steps."""

    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(0, 1, (8, 8, 2), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros((8, 8, 2), np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.full((8, 8, 2), self.t / 10, np.float32)
        return obs, float(action), self.t >= 10, False, {}


def test_patch_conv_is_xlas_valid_convolution():
    """The CPU form of the networks' convs: by hand on a 3x3 image, and against
    ``lax.conv_general_dilated`` with strides, non-square kernels and several channels."""
    from rljax.networks.models import patch_conv, xla_conv

    x = jnp.arange(9.0).reshape(1, 3, 3, 1)  # rows [0 1 2], [3 4 5], [6 7 8]
    kernel = jnp.array([[1.0, 0.0], [0.0, -1.0]]).reshape(2, 2, 1, 1)  # x[i, j] - x[i+1, j+1]
    np.testing.assert_array_equal(
        patch_conv(x, kernel, 1)[0, :, :, 0], [[-4.0, -4.0], [-4.0, -4.0]]
    )
    np.testing.assert_array_equal(patch_conv(x, kernel, 2)[0, :, :, 0], [[-4.0]])
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    x = jax.random.normal(keys[0], (2, 11, 9, 3))
    for shape, stride in (((3, 3, 3, 5), 1), ((4, 2, 3, 2), 2), ((5, 5, 3, 4), 3)):
        kernel = jax.random.normal(keys[1], shape)
        want = xla_conv(x, kernel, stride)
        np.testing.assert_allclose(patch_conv(x, kernel, stride), want, rtol=1e-5, atol=1e-5)


def test_the_networks_conv_is_flaxs_conv_and_exports_for_other_platforms():
    """``ValidConv`` against ``nn.Conv``: the same parameter tree and initialisation from one key,
    the same outputs (a checkpoint of either loads into the other); an integer image exported
    for the CPU and CUDA traces both forms, with Flax's dtype promotion."""
    import flax.linen as nn

    from rljax.networks.models import ValidConv, _ortho

    key = jax.random.PRNGKey(0)
    ours = ValidConv(8, (3, 2), 2, kernel_init=_ortho(np.sqrt(2)), bias_init=nn.initializers.zeros)
    flax_conv = nn.Conv(8, (3, 2), (2, 2), padding="VALID", kernel_init=_ortho(np.sqrt(2)))
    x = jax.random.normal(key, (2, 9, 7, 3))
    params, flax_params = ours.init(key, x), flax_conv.init(key, x)
    assert jax.tree.structure(params) == jax.tree.structure(flax_params)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(flax_params), strict=True):
        np.testing.assert_array_equal(a, b)
    want = flax_conv.apply(flax_params, x)
    np.testing.assert_allclose(jax.jit(ours.apply)(params, x), want, rtol=1e-5, atol=1e-5)
    frames = jnp.ones((2, 9, 7, 3), jnp.int8)
    exported = jax.export.export(jax.jit(ours.apply), platforms=("cpu", "cuda"))(params, frames)
    assert exported.platforms == ("cpu", "cuda")
    assert exported.out_avals[0].shape == (2, 4, 3, 8)


@pytest.mark.slow  # a conv network's programs (9 s)
def test_conv_ppo_on_the_cpu_trains_and_resumes(tmp_path):
    config = (
        PPOConfig()
        .environment(_Frames)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
        .training(train_batch_size_per_learner=32, minibatch_size=8, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [8], "conv_filters": [[4, [3, 3], 2]]})
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        before = jax.tree.leaves(algo.get_weights())
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] == 32
        moved = [
            float(jnp.max(jnp.abs(a - b)))
            for a, b in zip(before, jax.tree.leaves(algo.get_weights()), strict=True)
        ]
        assert max(moved) > 0
        path = algo.save_to_path(tmp_path / "ckpt")
    with config.build_algo() as again:
        again.restore_from_path(path)
        assert again.train()["num_env_steps_sampled_lifetime"] == 64


def test_a_short_fragment_trains_one_round_and_says_rllib_samples_more(caplog, monkeypatch):
    # RLlib's PPO samples rounds of rollout_fragment_length until it has the train batch;
    # rljax trains on one round, and says so once.
    from rljax.algorithms.ppo import PPOConfig
    from rljax.utils import once

    monkeypatch.setitem(once.SAID, "ppo_rounds", set())
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=32)
        .training(train_batch_size_per_learner=128, minibatch_size=32)
    )
    with caplog.at_level("WARNING", logger="rljax"):
        config.validate()
        config.validate()
    said = [r.getMessage() for r in caplog.records if "rounds of fragments" in r.getMessage()]
    assert len(said) == 1 and "samples 64 env steps per iteration, fewer than" in said[0]
    assert config.sampled_batch_size == 64
