"""batch_mode="complete_episodes": the episode buffer by hand, GAE over whole episodes, PPO
trained on batches of whole episodes, and what is refused."""

from __future__ import annotations

import tempfile

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import register_env
from rljax.algorithms.impala import IMPALAConfig
from rljax.algorithms.marwil import BCConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.ppo.learner import PPOHyperparams, make_ppo_postprocess
from rljax.connectors.env_to_module import MeanStdFilter
from rljax.env.jax_env import JaxEnv
from rljax.execution.complete_episodes import EpisodeBuffer, bucket_rows
from rljax.execution.population import population_refusal
from rljax.types import Transition
from rljax.utils.errors import ConfigError


def fragment(rewards, ends, env_ids, values, next_values, truncated=None, valid=None, counts=None):
    """A host fragment [T, K]: obs = reward * 10 (to follow rows), the given episode ends
    (terminated unless ``truncated`` says so), and ``episode_len`` as a runner counts it: the
    real rows of each sub-env's episode so far, carried across fragments in ``counts``."""
    r = np.asarray(rewards, np.float32)
    ends = np.asarray(ends, bool)
    trunc = np.zeros_like(ends) if truncated is None else np.asarray(truncated, bool)
    real = np.ones(r.shape, bool) if valid is None else np.asarray(valid, bool)
    ids = np.asarray(env_ids, np.int32)
    counts = {} if counts is None else counts
    lens = np.zeros(r.shape, np.int32)
    for t in range(r.shape[0]):
        for j in range(r.shape[1]):
            if real[t, j]:
                counts[int(ids[t, j])] = lens[t, j] = counts.get(int(ids[t, j]), 0) + 1
                if ends[t, j]:
                    counts[int(ids[t, j])] = 0
    return Transition(
        obs=(r * 10)[..., None],
        action=np.zeros(r.shape, np.int32),
        reward=r,
        terminated=ends & ~trunc,
        truncated=trunc,
        valid=real,
        env_id=ids,
        extras={
            "vf_preds": np.asarray(values, np.float32),
            "action_logp": np.zeros(r.shape, np.float32),
            "action_dist_inputs": np.zeros((*r.shape, 2), np.float32),
        },
        next_extras={"vf_preds": np.asarray(next_values, np.float32)},
        episode_return=np.zeros(r.shape, np.float32),
        episode_len=lens,
        episode_done=ends & real,
    )


def test_bucket_rows_are_a_few_multiples_of_the_minibatch():
    assert [bucket_rows(n, 10) for n in (1, 10, 11, 40, 41, 51, 61, 71, 81, 101, 121, 161)] == [
        10, 10, 20, 40, 50, 60, 70, 80, 90, 110, 130, 180,
    ]  # fmt: skip
    sizes = {bucket_rows(n, 128) for n in range(4000, 4600)}
    assert sizes == {4096, 4608}  # 32 and 36 minibatches: two programs over this range
    with pytest.raises(ValueError, match="rows=0"):
        bucket_rows(0, 128)


def test_episodes_are_kept_across_fragments_and_handed_out_whole():
    buf = EpisodeBuffer(min_rows=5, unit=4)
    zeros, counts = np.zeros((3, 2)), {}
    # Sub-env 0: an episode of rewards 1, 2 (ends), then 3, 4 (ends), ...; sub-env 1: 11 .. 15.
    buf.add(
        fragment(
            [[1, 11], [2, 12], [3, 13]],
            [[0, 0], [1, 0], [0, 0]],
            [[0, 1]] * 3,
            zeros,
            zeros,
            counts=counts,
        )
    )
    assert buf.finished_rows == 2 and buf.ongoing_rows == 4
    assert buf.take() is None  # 2 < 5 rows of finished episodes
    buf.add(
        fragment(
            [[4, 14], [5, 15], [6, 16]],
            [[1, 0], [0, 1], [0, 0]],
            [[0, 1]] * 3,
            zeros,
            zeros,
            counts=counts,
        )
    )
    # Finished: [1, 2] (2 rows), [3, 4] (2), [11 .. 15] (5): 9 rows; [5, 6] and [16] go on.
    assert buf.finished_rows == 9 and buf.ongoing_rows == 3
    traj = buf.take()
    assert traj is not None and traj.reward.shape == (12, 1)  # 9 rows padded to 3 x 4
    assert traj.reward[:9, 0].tolist() == [1, 2, 3, 4, 11, 12, 13, 14, 15]
    assert traj.env_id[:, 0].tolist() == [0] * 9 + [1] * 3  # one stream, then the padding
    assert traj.valid[:, 0].tolist() == [True] * 9 + [False] * 3
    assert traj.terminated[:, 0].tolist() == [0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]
    assert buf.take() is None and buf.finished_rows == 0
    # Rows that are no transition (a next-step reset) join no episode.
    buf.add(
        fragment(
            [[7, 17], [0, 18]],
            [[1, 1], [0, 0]],
            [[0, 1]] * 2,
            np.zeros((2, 2)),
            np.zeros((2, 2)),
            valid=[[1, 1], [0, 1]],
            counts=counts,
        )
    )
    assert buf.finished_rows == 3 + 2 and buf.ongoing_rows == 1  # [5, 6, 7], [16, 17]; 18 goes on


def test_a_batch_of_whole_episodes_gets_gae_by_hand():
    """gamma 0.5, lambda 1: value targets are each episode's discounted return, bootstrapped
    from the last observation's value where it was truncated, never at a fragment's end."""
    buf = EpisodeBuffer(min_rows=4, unit=2)
    counts: dict = {}
    values = np.full((2, 2), 7.0)  # what the critic said; lambda 1 makes targets returns
    # Sub-env 0: rewards 1, 2 | 4 (terminated at 4). Sub-env 1: 8, 16 (truncated at 16, the
    # next observation's value 10).
    buf.add(
        fragment(
            [[1, 8], [2, 16]],
            [[0, 0], [0, 1]],
            [[0, 1]] * 2,
            values,
            [[7, 7], [7, 10]],
            truncated=[[0, 0], [0, 1]],
            counts=counts,
        )
    )
    buf.add(
        fragment(
            [[4, 0], [0, 0]],
            [[1, 0], [0, 0]],
            [[0, 1]] * 2,
            values,
            values,
            valid=[[1, 0], [0, 0]],
            counts=counts,
        )
    )
    traj = buf.take()
    assert traj is not None
    hp = PPOHyperparams.from_config(
        PPOConfig().training(gamma=0.5, lambda_=1.0, minibatch_size=2), 1, traj.reward.shape[0]
    )
    # [8, 16] finished first (truncated: 16 + 0.5 * 10 = 21, 8 + 0.5 * 21 = 18.5), then
    # [1, 2, 4] (1 + 0.5 * 2 + 0.25 * 4 = 3, 2 + 0.5 * 4 = 4, 4). Both of the postprocess's
    # paths: time-major (one sub-env in the run) and flat (several).
    for num_envs in (1, 2):
        batch = make_ppo_postprocess(hp, num_envs=num_envs)(traj)
        mask = np.asarray(batch.mask[0]) > 0
        assert mask.tolist() == [True] * 5 + [False]
        targets = np.asarray(batch.value_targets[0])[mask]
        np.testing.assert_allclose(targets, [18.5, 21.0, 3.0, 4.0, 4.0])


def test_restart_drops_the_episodes_whose_start_it_never_saw():
    buf = EpisodeBuffer(min_rows=1, unit=1)
    zeros, counts = np.zeros((2, 1)), {}
    buf.add(fragment([[1], [2]], [[0], [0]], [[0]] * 2, zeros, zeros, counts=counts))
    buf.restart()  # the runner's count goes on: [1, 2, 3] ends with length 3
    buf.add(fragment([[3], [4]], [[1], [0]], [[0]] * 2, zeros, zeros, counts=counts))
    assert buf.finished_rows == 0 and buf.ongoing_rows == 1 and buf.num_dropped_rows == 1
    buf.add(fragment([[5], [6]], [[1], [0]], [[0]] * 2, zeros, zeros, counts=counts))
    traj = buf.take()
    assert traj is not None and traj.reward[:, 0].tolist() == [4, 5]
    # Envs that start afresh after a restart (their state was not saved) count from 0: their
    # first episode is whole and kept.
    buf.restart()
    buf.add(fragment([[7], [8]], [[0], [1]], [[0]] * 2, zeros, zeros))
    assert buf.finished_rows == 2


def test_a_sub_env_restarted_mid_episode_does_not_join_two_episodes():
    """The runner drops a broken episode's rows of the fragment where its sub-env restarted,
    and counts the new episode from 0; rows of the broken one kept from earlier fragments are
    not part of it."""
    buf = EpisodeBuffer(min_rows=1, unit=1)
    zeros, counts = np.zeros((2, 1)), {}
    buf.add(fragment([[1], [2]], [[0], [0]], [[0]] * 2, zeros, zeros, counts=counts))
    counts[0] = 0  # restarted: the act step's count starts again
    buf.add(fragment([[5], [6]], [[0], [1]], [[0]] * 2, zeros, zeros, counts=counts))
    traj = buf.take()
    assert traj is not None and traj.reward[:, 0].tolist() == [5, 6]
    assert buf.num_dropped_rows == 2


def test_an_episode_that_never_ends_is_an_error_not_a_hang():
    buf = EpisodeBuffer(min_rows=10, unit=1, max_episode_rows=5)
    zeros = np.zeros((3, 1))
    buf.add(fragment([[1], [1], [1]], [[0]] * 3, [[0]] * 3, zeros, zeros))
    with pytest.raises(RuntimeError, match=r"sub-env 0 has run 6 env steps without ending"):
        buf.add(fragment([[1], [1], [1]], [[0]] * 3, [[0]] * 3, zeros, zeros))


class FiveSteps(gym.Env):
    """Episodes of exactly ``length`` (5) steps, reward 1 each, obs the step."""

    length = 5
    observation_space = gym.spaces.Box(-1.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(1, self.t, np.float32), 1.0, self.t >= self.length, False, {}


register_env("five-steps-complete", lambda cfg: FiveSteps(cfg))


def _five(**training):
    return (
        PPOConfig()
        .environment("five-steps-complete")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=4)
        .env_runners(batch_mode="complete_episodes")
        .training(train_batch_size=12, minibatch_size=4, num_epochs=1, **training)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def test_ppo_trains_on_whole_episodes_and_counts_them():
    algo = _five().build_algo()
    try:
        assert not algo.fused  # episodes are gathered from a runner thread's fragments
        sampled = trained = 0
        for _ in range(4):
            r = algo.train()
            # Fragments of 4 steps x 2 sub-envs until the finished 5-step episodes hold 12
            # steps or more: 20 steps (four episodes) each time, 8 or 16 steps buffered.
            assert r["num_env_steps_trained_lifetime"] - trained == 20
            trained = r["num_env_steps_trained_lifetime"]
            sampled = r["num_env_steps_sampled_lifetime"]
            assert r["env_runners"]["episode_return_mean"] == 5.0
        assert 0 <= sampled - trained < 2 * 5
        buffer = algo._loop.complete.buffer
        assert buffer.ongoing_rows == sampled - trained and buffer.finished_rows == 0
        with tempfile.TemporaryDirectory() as d:
            algo.save_to_path(d)
            algo.train()
            algo.restore_from_path(d)  # episodes in progress are forgotten, training goes on
            assert buffer.ongoing_rows == 0 and buffer.finished_rows == 0
            assert algo.train()["num_env_steps_trained_lifetime"] > trained
    finally:
        algo.stop()


def test_rows_past_the_last_full_minibatch_wait_for_another_epoch():
    """20 rows of whole episodes in minibatches of 8: two full minibatches an epoch; the third
    (4 rows and padding) is no gradient step, as a fixed batch's remainder is none."""
    algo = _five().training(minibatch_size=8, num_epochs=3).build_algo()
    try:
        algo.train()
        paths = jax.tree_util.tree_flatten_with_path(algo.state.opt_state)[0]
        counts = {int(v) for p, v in paths if "count" in jax.tree_util.keystr(p)}
        assert max(counts) == 2 * 3  # Adam's step count (9 with the partial minibatches)
    finally:
        algo.stop()


def test_episode_callbacks_replay_the_episodes_as_sampled():
    ended = []

    def on_episode_end(*, episode, env_index, **kwargs):
        ended.append((env_index, episode))

    with _five().callbacks(on_episode_end=on_episode_end).build_algo() as algo:
        results = [algo.train() for _ in range(2)]
    # Every group of fragments sampled is replayed in order, however many make a batch.
    assert sum(r["env_runners"]["num_episodes"] for r in results) == len(ended) >= 8
    assert sorted({i for i, _ in ended}) == [0, 1]
    for _, ep in ended:
        assert len(ep) == 5 and ep.is_terminated
        np.testing.assert_allclose(np.stack(ep.get_observations())[:, 0], np.arange(6))


class TenStepsBreaksOnce(FiveSteps):
    """Episodes of 10 steps, obs the step; the sixth step of the process raises once."""

    length = 10
    observation_space = gym.spaces.Box(-1.0, 100.0, (1,), np.float32)
    calls = 0

    def step(self, action):
        TenStepsBreaksOnce.calls += 1
        if TenStepsBreaksOnce.calls == 6:
            raise RuntimeError("the sub-env broke")
        return super().step(action)


register_env("ten-steps-breaks-once", lambda cfg: TenStepsBreaksOnce(cfg))


def test_a_restarted_sub_env_s_broken_episode_is_not_trained(monkeypatch):
    taken = []
    take = EpisodeBuffer.take

    def keep(self):
        traj = take(self)
        if traj is not None:
            taken.append(traj)
        return traj

    monkeypatch.setattr(EpisodeBuffer, "take", keep)
    config = (
        PPOConfig()
        .environment("ten-steps-breaks-once")
        .env_runners(
            num_env_runners=0,
            rollout_fragment_length=4,
            batch_mode="complete_episodes",
        )
        .fault_tolerance(restart_failed_sub_environments=True)
        .training(train_batch_size=20, minibatch_size=4, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        algo.train()
    traj = taken[0]
    real = traj.valid[:, 0]
    # The broken episode's 5 steps (2 fragments) are not in it: two whole episodes of 10.
    assert traj.obs[real, 0, 0].tolist() == [*range(10), *range(10)]
    assert np.flatnonzero(traj.terminated[real, 0]).tolist() == [9, 19]


class CountdownJax(JaxEnv):
    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1e3, 1e3, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, key):
        return jnp.zeros((), jnp.int32), jnp.zeros((1,), jnp.float32)

    def step(self, state, action, key):
        t = state + 1
        obs = t.astype(jnp.float32)[None]
        return t, obs, jnp.float32(1.0), t >= 3, jnp.asarray(False), {}


register_env("countdown-jax-complete", CountdownJax)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        (lambda: IMPALAConfig().environment("CartPole-v1"), "IMPALA, which samples fixed-length"),
        (lambda: _five().rl_module(model_config={"use_lstm": True}), "use_lstm=True"),
        (lambda: _five().learners(num_learners=2), "2 learners"),
        (
            lambda: _five().multi_agent(policies={"p"}, policy_mapping_fn=lambda a, *_, **__: "p"),
            "a multi-agent config",
        ),
        (lambda: _five().environment("countdown-jax-complete"), "the JAX env"),
        (
            lambda: _five().env_runners(
                env_to_module_connector=lambda env, spaces, device: MeanStdFilter()
            ),
            "env_to_module_connector",
        ),
        (
            lambda: BCConfig().environment("CartPole-v1").offline_data(input_="/tmp/none"),
            "BC, which learns from offline data",
        ),
    ],
)
def test_what_cannot_train_on_whole_episodes_is_refused_by_name(config, named):
    with pytest.raises(ConfigError, match=f"batch_mode='complete_episodes' with {named}"):
        config().env_runners(batch_mode="complete_episodes").validate()


def test_a_population_refuses_it_and_a_bad_value_is_named():
    assert "complete_episodes" in population_refusal([_five(), _five()])
    with pytest.raises(ConfigError, match="batch_mode='whole'.*complete_episodes"):
        PPOConfig().environment("CartPole-v1").env_runners(batch_mode="whole").validate()


@pytest.mark.slow  # trains CartPole for a few seconds
def test_ppo_learns_cartpole_on_whole_episodes():
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4, batch_mode="complete_episodes")
        .training(train_batch_size=1000, minibatch_size=128, num_epochs=6, lr=3e-4)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=1)
        .build_algo()
    )
    try:
        best = max(algo.train()["env_runners"]["episode_return_mean"] for _ in range(20))
        assert best >= 150.0
    finally:
        algo.stop()
