"""First-ready gymnasium vector envs (``rljax.env.first_ready``): same-step auto-reset inside
each sub-env's process, one message per step, and the batches a runner builds from them."""

import gymnasium as gym
import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.env.first_ready import FirstReadyVectorEnv


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
        return np.array([self.t, 1.0], np.float32), float(action), False, self.t >= 3, {}


def _lock_step_results(same_step: bool, steps: int):
    env = FirstReadyVectorEnv([_Count, _Count], batch_size=2, seed=0, same_step=same_step)
    try:
        results = [env.reset()]
        for _ in range(steps):
            ids = results[-1].env_id
            results.append(env.step(np.ones(len(ids), np.int64), ids))
        return results, env.num_messages_sent
    finally:
        env.close()


def test_same_step_reset_happens_in_the_step_that_ends_the_episode():
    results, messages = _lock_step_results(same_step=True, steps=4)
    assert messages == 2 * 5  # a reset, then one message per step: no extra reset message
    first = results[0]
    np.testing.assert_array_equal(first.final_obs, first.obs)  # nothing ended yet
    obs = [np.asarray(r.obs)[np.argsort(r.env_id)] for r in results]
    final = [np.asarray(r.final_obs)[np.argsort(r.env_id)] for r in results]
    trunc = [np.asarray(r.truncated)[np.argsort(r.env_id)] for r in results]
    # Steps 1, 2 go on; step 3 ends the episode and already returns the reset observation, with
    # the ended one as final_obs; step 4 is the next episode's first step.
    np.testing.assert_array_equal(obs[1], [[1, 1], [1, 1]])
    np.testing.assert_array_equal(obs[3], [[0, 0], [0, 0]])
    np.testing.assert_array_equal(final[3], [[3, 1], [3, 1]])
    np.testing.assert_array_equal(trunc[3], [True, True])
    np.testing.assert_array_equal(final[2], obs[2])
    np.testing.assert_array_equal(obs[4], [[1, 1], [1, 1]])
    assert all(np.all(r.reward == 1.0) for r in results[1:])  # every step is a transition


def test_next_step_reset_spends_a_step_on_the_reset():
    results, messages = _lock_step_results(same_step=False, steps=4)
    assert messages == 2 * 5
    assert results[3].final_obs is None
    np.testing.assert_array_equal(
        np.asarray(results[3].obs)[np.argsort(results[3].env_id)], [[3, 1]] * 2
    )
    # The step after the end only resets: the first observation, reward 0.
    np.testing.assert_array_equal(results[4].obs, [[0, 0], [0, 0]])
    np.testing.assert_array_equal(results[4].reward, [0.0, 0.0])


def test_a_batch_size_outside_the_sub_envs_is_refused():
    with pytest.raises(ValueError, match="batch_size=3: it must be 1 .. 2"):
        FirstReadyVectorEnv([_Count, _Count], batch_size=3, seed=0)


@pytest.mark.slow  # four sub-env processes
def test_reset_serves_every_sub_envs_first_observation_before_a_step():
    env = FirstReadyVectorEnv([_Count] * 4, batch_size=2, seed=0, same_step=True)
    try:
        first = env.reset()
        second = env.step(np.ones(2, np.int64), first.env_id)
        # The second batch is the other two sub-envs' resets, not the first two's steps.
        assert set(first.env_id.tolist()) | set(second.env_id.tolist()) == {0, 1, 2, 3}
        np.testing.assert_array_equal(second.obs, [[0, 0], [0, 0]])
    finally:
        env.close()


@pytest.mark.slow  # PPO with sub-env processes
@pytest.mark.parametrize("envs, batch", [(2, 1), (4, 2), (3, 2)])
def test_ppo_first_ready_batches_hold_as_many_env_steps_as_rows(envs, batch):
    config = (
        PPOConfig()
        .environment(_Count)
        .env_runners(
            num_env_runners=1,
            num_envs_per_env_runner=envs,
            gym_env_vectorize_mode="ASYNC",
            async_batch_size=batch,
        )
        .training(train_batch_size_per_learner=24, minibatch_size=12, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=1)
    )
    with config.build_algo() as algo:
        traj = jax.device_get(algo._runners.sample().traj)
        valid = np.asarray(traj.valid)
        assert valid.shape == (24 // batch, batch)
        if envs % batch == 0:
            assert np.all(valid)  # the first rows too: no row is spent on a reset
        else:
            # 3 sub-envs in batches of 2: the second batch is sub-env 2's reset and sub-env 0's
            # first step, a real transition, so that row is kept with one entry not a step.
            assert valid.sum() == 24 - 1 and not valid[0].all() and valid[1:].all()
        obs, ids, trunc = np.asarray(traj.obs), np.asarray(traj.env_id), np.asarray(traj.truncated)
        for k in range(envs):
            rows = (ids == k) & valid
            # Each sub-env's transitions in order: (0, 0) -> (1, 1) -> (2, 1) -> truncated, again.
            t = obs[rows][:, 0]
            np.testing.assert_array_equal(t, np.arange(len(t)) % 3)
            np.testing.assert_array_equal(trunc[rows], t == 2)
        algo._runners.publish(algo._runner_params())
        result = algo.train()  # later fragments go on where the first ended: all steps
        assert result["env_runners"]["num_env_steps_sampled"] == 24
