"""Resuming from a checkpoint continues exactly as the uninterrupted run: the learner state, the
counters and the env runners' mid-episode state (gymnasium envs, SYNC) are all restored."""

from __future__ import annotations

import logging

import gymnasium as gym
import jax
import numpy as np
import pytest

import rljax
from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.execution import checkpoints

# Each test trains twice (checkpointed and resumed, and uninterrupted) to compare the runs: 30 s
# to 2 min each on 2 cores, so none is in the fast tier.
pytestmark = pytest.mark.slow

rljax.register_env("resume-cartpole", lambda config: gym.make("CartPole-v1"))


def _ppo(num_env_runners=0, mode="SYNC"):
    # ASYNC steps each sub-env in a process of its own: 2 of them (fewer process starts), with
    # fragments twice as long (the same 256 env steps an iteration).
    envs = 2 if mode == "ASYNC" else 4
    return (
        PPOConfig()
        .environment("resume-cartpole")  # gymnasium's CartPole (a registered creator), not EnvPool
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=envs,
            gym_env_vectorize_mode=mode,
            rollout_fragment_length=256 // envs,
        )
        .training(train_batch_size_per_learner=256 * max(1, num_env_runners), minibatch_size=64)
        .training(num_epochs=2)
        .evaluation(evaluation_interval=2, evaluation_duration=2)  # its env seeds continue too
        .debugging(seed=3)
    )


def _dqn():
    return (
        DQNConfig()
        .environment("resume-cartpole")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=8)
        .training(
            num_steps_sampled_before_learning_starts=32,
            train_batch_size=16,
            n_step=3,
            replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 2000},
            store_buffer_in_checkpoints=True,
        )
        .reporting(min_sample_timesteps_per_iteration=64)
        .debugging(seed=5)
    )


def _figures(result):
    """What must match: the learner's metrics, the episodes and the counters."""
    runners = result["env_runners"]
    learner = dict(result["learners"]["default_policy"])
    return (
        learner,
        {
            k: runners[k]
            for k in (
                "episode_return_mean",
                "episode_len_max",
                "num_episodes",
                "num_episodes_lifetime",
                "num_env_steps_sampled",
            )
        },
        result["num_env_steps_sampled_lifetime"],
        result["num_env_steps_trained_lifetime"],
        result["training_iteration"],
        result.get("evaluation"),
    )


def _params(algo):
    state = algo.state
    return jax.device_get(getattr(state, "params", None) or state.learner)


def _run(config, iterations, tmp_path=None, save_after=None, restore_envs=True, monkeypatch=None):
    """Trains ``iterations``; with ``save_after``, saves after that many, stops, and goes on in
    an algorithm built from the checkpoint."""
    algo = config.build_algo()
    figures = []
    try:
        for i in range(iterations):
            if save_after is not None and i == save_after:
                path = algo.save_to_path(tmp_path / "ckpt")
                algo.stop()
                if not restore_envs:
                    monkeypatch.setattr(checkpoints, "restore_runner_state", lambda *a: None)
                algo = Algorithm.from_checkpoint(path)
            figures.append(_figures(algo.train()))
        return figures, _params(algo)
    finally:
        algo.stop()


def _same_params(a, b):
    return all(
        np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


@pytest.mark.parametrize("num_env_runners, mode", [(0, "SYNC"), (2, "SYNC"), (0, "ASYNC")])
def test_ppo_resumed_mid_episode_continues_bit_for_bit(
    tmp_path, num_env_runners, mode, monkeypatch
):
    config = _ppo(num_env_runners, mode)
    straight, straight_params = _run(config, 5)
    resumed, resumed_params = _run(config, 5, tmp_path, save_after=3)
    assert resumed == straight  # iterations 1-3 before the save, 4-5 after it
    assert _same_params(resumed_params, straight_params)
    if num_env_runners == 0 and mode == "SYNC":
        # The control: the same resume with the runners' state left out starts new episodes
        # and no longer matches (the exact match is not an accident).
        blind, blind_params = _run(
            config, 5, tmp_path / "blind", save_after=3, restore_envs=False, monkeypatch=monkeypatch
        )
        assert blind[:3] == straight[:3]
        assert blind[3:] != straight[3:]
        assert not _same_params(blind_params, straight_params)


def test_dqn_resumed_with_its_replay_buffer_continues_bit_for_bit(tmp_path):
    config = _dqn()
    straight, straight_params = _run(config, 6)
    resumed, resumed_params = _run(config, 6, tmp_path, save_after=4)
    assert resumed == straight
    assert _same_params(resumed_params, straight_params)


def _train_once_and_save(algo, tmp_path, before_save=None):
    """Trains one iteration, saves; returns the path and the checkpoint's metadata."""
    try:
        algo.train()
        if before_save is not None:
            before_save(algo)
        path = algo.save_to_path(tmp_path / "ckpt")
    finally:
        algo.stop()
    return path, rljax.utils.checkpoint.load_metadata(path)[0]


class OpaqueEnv(gym.Env):
    """An env holding an object that is not plain data: its state cannot be saved."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.handle = object()
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), 1.0, False, self.t >= 5, {}


def test_an_env_whose_state_cannot_be_saved_resumes_with_new_episodes(tmp_path, caplog):
    config = (
        PPOConfig()
        .environment(OpaqueEnv)
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(minibatch_size=16, num_epochs=1)
    )
    path, meta = _train_once_and_save(config.build_algo(), tmp_path)
    assert meta["includes_env_state"] is False
    assert "OpaqueEnv.handle holds a builtins.object" in meta["env_state_missing_because"]
    with caplog.at_level(logging.INFO, logger="rljax"):
        algo = Algorithm.from_checkpoint(path, env=OpaqueEnv)  # a class of this test: opted in
    try:
        assert "starts new episodes" in caplog.text and "OpaqueEnv.handle" in caplog.text
        assert algo.train()["training_iteration"] == 2
    finally:
        algo.stop()


def test_a_runner_caught_mid_fragment_is_not_saved_as_if_at_rest(tmp_path):
    def interrupted(algo):
        algo._runners.runners[0].busy = True  # as after a sample() interrupted by Ctrl-C

    _, meta = _train_once_and_save(_ppo().build_algo(), tmp_path, before_save=interrupted)
    assert meta["includes_env_state"] is False
    assert "in the middle of a fragment" in meta["env_state_missing_because"]
