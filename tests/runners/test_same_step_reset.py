"""Same-step auto-reset on every backend: on-policy batches of N rows hold N env steps, as
RLlib's do, and a truncated episode bootstraps from its final observation."""

import gymnasium as gym
import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.env.vector import _reset_ended_rows, make_envpool, resolve_env


def test_envpool_reset_rows_start_the_next_episodes_at_once():
    env = make_envpool(resolve_env("CartPole-v1"), 4, 4, seed=3)
    try:
        obs, _ = env.reset()
        ids = np.arange(4, dtype=np.int32)
        for _ in range(200):  # always push right: episodes end within a few dozen steps
            obs, _, term, trunc, info = env.step(np.ones(4, np.int64), ids)
            done = term | trunc
            if done.any():
                break
        assert done.any() and not done.all()
        final = obs.copy()
        new = _reset_ended_rows(env, obs, info["env_id"], done)
        rows = np.flatnonzero(done)
        # A fresh CartPole state is uniform in [-0.05, 0.05]; an ended one has fallen over.
        assert np.all(np.abs(new[rows]) <= 0.05) and np.all(np.abs(final[rows, 2]) > 0.2)
        np.testing.assert_array_equal(new[~done], final[~done])
        # Every sub-env steps on together, the reset ones from their episode's first step.
        _, _, _, _, info = env.step(np.zeros(4, np.int64), ids)
        np.testing.assert_array_equal(info["elapsed_step"][rows], 1)
        assert np.all(info["elapsed_step"][~done] > 1)
    finally:
        env.close()


class _Count(gym.Env):
    """obs = (t, 1): episodes truncated at t == 3; the reset obs is (0, 0)."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t, 1.0], np.float32), 1.0, False, self.t >= 3, {}


def _ppo(env, runners=0, envs=4, batch=40, **env_config):
    return (
        PPOConfig()
        .environment(env, env_config=env_config)
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=envs)
        .training(train_batch_size_per_learner=batch, minibatch_size=batch // 2, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=1)
    )


@pytest.mark.slow  # integration (by hand: test_acting.py); in the README's full run
def test_truncated_rows_bootstrap_from_their_final_observation():
    with _ppo(_Count, runners=1, envs=2, batch=12).build_algo() as algo:
        traj = jax.device_get(algo._runners.sample().traj)
        params = algo._runner_params()
        assert np.all(traj.valid)  # the first row too: the runner's first step was taken
        trunc = np.asarray(traj.truncated)
        assert trunc.sum() == 4  # 6 steps of 2 sub-envs, episodes of 3
        # Truncated rows act on (2, 1) and bootstrap from the final (3, 1), not from (0, 0).
        np.testing.assert_array_equal(traj.obs[trunc], [[2, 1]] * 4)
        value = lambda o: algo.parts.act(params, np.asarray([o], np.float32), jax.random.key(0))[1]  # noqa: E731
        final, first = value([3, 1])["vf_preds"][0], value([0, 0])["vf_preds"][0]
        assert abs(final - first) > 1e-4
        np.testing.assert_allclose(traj.next_extras["vf_preds"][trunc], final, rtol=1e-5)
        # The rows after them start the next episodes from the reset observation.
        after = np.roll(trunc, 1, axis=0)
        after[0] = False
        np.testing.assert_array_equal(traj.obs[after], [[0, 0]] * after.sum())


@pytest.mark.slow  # integration; in the README's full run
@pytest.mark.parametrize(
    "env, runners",
    [("CartPole-v1", 0), ("CartPole-v1", 1), (lambda cfg: gym.make("CartPole-v1"), 0)],
    ids=["envpool-fused", "envpool-thread", "gymnasium"],
)
def test_each_iteration_samples_and_trains_exactly_the_batch(env, runners):
    with _ppo(env, runners=runners, envs=4, batch=200).build_algo() as algo:
        for it in (1, 2):
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled"] == 200
            assert result["env_runners"]["num_env_steps_sampled_lifetime"] == 200 * it
            assert result["env_runners"]["num_episodes"] > 0  # episodes ended in the batch
            trained = result["learners"]["__all_modules__"]["num_env_steps_trained"]
            assert trained == 200


def test_envpool_reset_round_trip_runs_only_in_steps_where_an_episode_ended():
    """The traced same-step reset calls the host (one more EnvPool step) once per step in which
    some sub-env's episode ended and never otherwise; counted through ``host_fn``."""
    import jax.numpy as jnp

    from rljax.env.envpool_vector import envpool_reset_ended

    env = make_envpool(resolve_env("CartPole-v1"), 4, 4, seed=5)
    calls = []

    def counted(env_, obs, env_id, done):
        calls.append(np.asarray(done).copy())
        return _reset_ended_rows(env_, obs, env_id, done)

    try:
        handle, _, _, xla_step = env.xla()
        env.async_reset()
        obs, _, _, _, info = env.recv()
        reset_ended = envpool_reset_ended(env, host_fn=counted)

        def rollout(handle, obs, ids):
            def body(carry, t):
                handle, obs, ids = carry
                # Push right for 40 steps (episodes end within a few dozen), then hold the
                # pole with a simple rule (no episode ends in the last steps).
                action = jnp.where(t < 40, 1, (obs[:, 2] + obs[:, 3] > 0).astype(jnp.int32))
                handle, (obs, _rew, term, trunc, info) = xla_step(handle, action, ids)
                done = term | trunc
                obs = reset_ended(obs, info["env_id"], done)
                return (handle, obs, info["env_id"]), done

            return jax.lax.scan(body, (handle, obs, ids), jnp.arange(60))[1]

        ids = jnp.asarray(info["env_id"], jnp.int32)
        done = np.asarray(jax.jit(rollout)(handle, jnp.asarray(obs), ids))
    finally:
        env.close()
    ended_steps = done.any(axis=1)
    assert 0 < ended_steps.sum() < len(done)  # some steps with an end, some without
    assert len(calls) == ended_steps.sum()
    np.testing.assert_array_equal(np.stack(calls), done[ended_steps])
