import jax
import jax.numpy as jnp
import numpy as np

from rljax.algorithms.ppo.learner import PPOHyperparams, make_ppo_postprocess
from rljax.algorithms.ppo.losses import PPOLossConfig
from rljax.runners.acting import Transition

HP = PPOHyperparams(
    gamma=0.9,
    lambda_=0.8,
    kl_coeff=0.0,
    kl_target=0.01,
    num_epochs=1,
    minibatch_size=4,
    shuffle_batch_per_epoch=True,
    loss=PPOLossConfig(
        clip_param=0.2, vf_clip_param=None, vf_loss_coeff=0.5, entropy_coeff=0.0, use_kl_loss=False
    ),
    num_shards=1,
    shard_size=12,
)


def _traj(env_id):
    rng = np.random.default_rng(0)
    t, k = env_id.shape
    f = lambda: jnp.asarray(rng.normal(size=(t, k)), jnp.float32)  # noqa: E731
    return Transition(
        obs=f()[..., None],
        action=jnp.zeros((t, k), jnp.int32),
        reward=f(),
        terminated=jnp.asarray(rng.random((t, k)) < 0.2),
        truncated=jnp.asarray(rng.random((t, k)) < 0.1),
        valid=jnp.asarray(rng.random((t, k)) < 0.9),
        env_id=jnp.asarray(env_id, jnp.int32),
        extras={"vf_preds": f(), "action_logp": f(), "action_dist_inputs": f()[..., None]},
        next_extras={"vf_preds": f()},
        episode_return=f(),
        episode_len=jnp.zeros((t, k), jnp.int32),
        episode_done=jnp.zeros((t, k), bool),
    )


def test_time_major_and_flat_gae_paths_agree():
    # 4 steps of 3 sub-envs reporting in a different order at every step (as EnvPool may).
    env_id = np.array([[0, 1, 2], [2, 0, 1], [1, 2, 0], [0, 2, 1]])
    traj = _traj(env_id)
    time_major = jax.jit(make_ppo_postprocess(HP, num_envs=3))(traj)
    flat = jax.jit(make_ppo_postprocess(HP, num_envs=4))(traj)  # forces the flat path
    for a, b in zip(jax.tree.leaves(time_major), jax.tree.leaves(flat), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # Rows come out grouped by sub-env, in time order: env 0's observations first.
    order = np.argsort(env_id.reshape(-1) * 4 + np.repeat(np.arange(4), 3), kind="stable")
    np.testing.assert_array_equal(time_major.obs[0, :, 0], np.asarray(traj.obs).reshape(-1)[order])
    mask = np.asarray(time_major.mask[0])
    adv = np.asarray(time_major.advantages[0])
    np.testing.assert_allclose(adv[mask > 0].mean(), 0.0, atol=1e-5)
    np.testing.assert_allclose(adv[mask > 0].std(), 1.0, atol=1e-4)


def test_each_policy_discounts_its_rows_with_its_own_gamma_and_lambda():
    # 2 sub-env slots, 3 steps each, every reward 1 and every value 0, the episode ending at
    # the last step; slot 0 plays policy 0 (gamma 0.5), slot 1 policy 1 (gamma 0.9), lambda 1.
    # The value targets are then the discounted returns: 1.75, 1.5, 1 and 2.71, 1.9, 1.
    t, k = 3, 2
    zeros = jnp.zeros((t, k), jnp.float32)
    traj = Transition(
        obs={"obs": zeros[..., None], "policy": jnp.tile(jnp.arange(k, dtype=jnp.int32), (t, 1))},
        action=jnp.zeros((t, k), jnp.int32),
        reward=jnp.ones((t, k), jnp.float32),
        terminated=jnp.asarray([[False, False], [False, False], [True, True]]),
        truncated=jnp.zeros((t, k), bool),
        valid=jnp.ones((t, k), bool),
        env_id=jnp.tile(jnp.arange(k, dtype=jnp.int32), (t, 1)),
        extras={"vf_preds": zeros, "action_logp": zeros, "action_dist_inputs": zeros[..., None]},
        next_extras={"vf_preds": zeros},
        episode_return=zeros,
        episode_len=jnp.zeros((t, k), jnp.int32),
        episode_done=jnp.zeros((t, k), bool),
    )
    discounts = ((0.5, 0.9), (1.0, 1.0))
    for num_envs in (k, k + 1):  # the time-major and the flat GAE paths
        post = make_ppo_postprocess(HP, num_envs, num_policies=2, policy_discounts=discounts)
        targets = np.asarray(jax.jit(post)(traj).value_targets[0])
        np.testing.assert_allclose(targets, [1.75, 1.5, 1.0, 2.71, 1.9, 1.0], rtol=1e-6)
    # Without per-policy discounts both slots take the config's gamma (0.9) and lambda (0.8).
    same = np.asarray(jax.jit(make_ppo_postprocess(HP, k, num_policies=2))(traj).value_targets[0])
    np.testing.assert_allclose(same[:3], same[3:])
