"""ConnectorV2 pieces that read episodes, run in each gymnasium env on the host:
PrevActionsPrevRewards and FrameStackingEnvToModule by hand, a user's piece (RLlib's protobuf
decoder) through PPO, SYNC and ASYNC, checkpoints, and the refusals."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.ppo import PPOConfig
from rljax.connectors.env_to_module import (
    ConnectorV2,
    FlattenObservations,
    FrameStackingEnvToModule,
    MeanStdFilter,
    PrevActionsPrevRewards,
)
from rljax.connectors.env_to_module.episode_connector import (
    EpisodeConnectorEnv,
    bind_host_pieces,
)
from rljax.utils.errors import ConfigError


class CountEnv(gym.Env):
    """obs = [t, 10 t] (float32, shape (2, 1) for frame stacking), reward = t after step t,
    action space Discrete(3); ends after 4 steps."""

    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1e3, 1e3, (2, 1), np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self.t = 0

    def _obs(self):
        return np.array([[self.t], [10 * self.t]], np.float32)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(self.t), self.t >= 4, False, {}


def _wrapped(*pieces: ConnectorV2) -> EpisodeConnectorEnv:
    env = CountEnv()
    space = bind_host_pieces(list(pieces), env.observation_space, env.action_space)
    return EpisodeConnectorEnv(env, list(pieces), space)


def test_prev_actions_prev_rewards_by_hand():
    env = _wrapped(PrevActionsPrevRewards(n_prev_actions=2, n_prev_rewards=3))
    space = env.observation_space
    assert space["prev_n_actions"].shape == (6,) and space["prev_n_rewards"].shape == (3,)
    obs, _ = env.reset()
    # Before any step: zero-hot actions (RLlib's fill of a one-hot action), rewards 0.
    np.testing.assert_array_equal(obs["prev_n_actions"], [0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(obs["prev_n_rewards"], [0, 0, 0])
    np.testing.assert_array_equal(obs["_orig_obs"], [[0], [0]])
    obs, *_ = env.step(2)
    np.testing.assert_array_equal(obs["prev_n_actions"], [0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(obs["prev_n_rewards"], [0, 0, 1])
    obs, *_ = env.step(1)
    obs, *_ = env.step(0)
    np.testing.assert_array_equal(obs["prev_n_actions"], [0, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(obs["prev_n_rewards"], [1, 2, 3])
    np.testing.assert_array_equal(obs["_orig_obs"], [[3], [30]])
    assert space.contains(obs)
    # The episode keeps the env's own observations, not the dicts.
    assert env.episode is not None and env.episode.observations[-1].shape == (2, 1)
    obs, _ = env.reset()  # a new episode: the history starts again
    np.testing.assert_array_equal(obs["prev_n_rewards"], [0, 0, 0])


def test_frame_stacking_by_hand_zeros_before_the_start():
    env = _wrapped(FrameStackingEnvToModule(num_frames=3))
    assert env.observation_space.shape == (2, 3)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs, [[0, 0, 0], [0, 0, 0]])
    env.step(1)
    obs, *_ = env.step(1)
    np.testing.assert_array_equal(obs, [[0, 1, 2], [0, 10, 20]])
    obs, *_ = env.step(1)
    np.testing.assert_array_equal(obs, [[1, 2, 3], [10, 20, 30]])
    assert env.observation_space.contains(obs)


def test_a_users_piece_chained_before_a_builtin_one():
    class Double(ConnectorV2):
        def __call__(self, *, rl_module, batch, episodes, **kwargs):
            for ep in self.single_agent_episode_iterator(episodes):
                ep.set_observations(new_data=ep.get_observations(-1) * 2, at_indices=-1)
            return batch

    env = _wrapped(Double(), FrameStackingEnvToModule(num_frames=2))
    env.reset()
    env.step(0)
    obs, *_ = env.step(0)
    # The stack reads the doubler's outputs (its input episode), the latest two of them.
    np.testing.assert_array_equal(obs, [[2, 4], [20, 40]])
    assert env.episode is not None and env.episode.observations[-1].tolist() == [[2], [20]]

    class FirstRow(ConnectorV2):  # changes the shape: (2, 1) -> (1, 1)
        def recompute_output_observation_space(self, input_observation_space, input_action_space):
            return gym.spaces.Box(-1e3, 1e3, (1, 1), np.float32)

        def __call__(self, *, rl_module, batch, episodes, **kwargs):
            for ep in self.single_agent_episode_iterator(episodes):
                ep.set_observations(new_data=ep.get_observations(-1)[:1], at_indices=-1)
            return batch

    env = _wrapped(FirstRow(), FrameStackingEnvToModule(num_frames=3))
    assert env.observation_space.shape == (1, 3)
    env.reset()
    for _ in range(3):
        obs, *_ = env.step(0)
    np.testing.assert_array_equal(obs, [[1, 2, 3]])


def test_prev_actions_of_a_box_action_space_are_padded_with_zero_actions():
    class Push(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

        def reset(self, *, seed=None, options=None):
            return np.zeros(1, np.float32), {}

        def step(self, action):
            return np.zeros(1, np.float32), 1.0, False, False, {}

    inner = Push()
    pieces = [PrevActionsPrevRewards(n_prev_actions=2, n_prev_rewards=0)]
    space = bind_host_pieces(pieces, inner.observation_space, inner.action_space)
    env = EpisodeConnectorEnv(inner, pieces, space)
    assert space["prev_n_actions"].shape == (4,) and "prev_n_rewards" not in space.spaces
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs["prev_n_actions"], [0, 0, 0, 0])
    obs, *_ = env.step(np.array([0.5, -0.5], np.float32))
    np.testing.assert_array_equal(obs["prev_n_actions"], [0, 0, 0.5, -0.5])
    assert space.contains(obs)


def _protobuf_config(mode: str = "SYNC", runners: int = 0):
    from rljax.examples.connectors.classes.protobuf_cartpole_observation_decoder import (
        ProtobufCartPoleObservationDecoder,
    )
    from rljax.examples.envs.classes.cartpole_with_protobuf_observation_space import (
        CartPoleWithProtobufObservationSpace,
    )

    return (
        PPOConfig()
        .environment(CartPoleWithProtobufObservationSpace)
        .env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=2,
            gym_env_vectorize_mode=mode,
            env_to_module_connector=lambda env, spaces, device: [
                ProtobufCartPoleObservationDecoder(),
                MeanStdFilter(),
            ],
        )
        .training(train_batch_size=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


@pytest.mark.slow  # an ASYNC runner's processes (about 10 s)
@pytest.mark.parametrize("mode", ["SYNC", "ASYNC"])
def test_users_piece_decodes_protobuf_observations_in_ppo(mode, tmp_path):
    algo = _protobuf_config(mode, runners=1 if mode == "ASYNC" else 0).build_algo()
    try:
        assert algo.observation_space == gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] == 128
        assert result["env_runners"]["num_episodes"] >= 1
        if mode == "SYNC":
            algo.save(str(tmp_path))
    finally:
        algo.stop()
    if mode == "SYNC":
        # The config saved the piece by import path; a loader allowing its module rebuilds it.
        restored = Algorithm.from_checkpoint(
            str(tmp_path), allow_imports=["rljax.examples", "tests.connectors"]
        )
        try:
            assert restored.observation_space.shape == (4,)
            assert restored.train()["num_env_steps_sampled_lifetime"] == 256
        finally:
            restored.stop()


def test_prev_actions_prev_rewards_trains_and_restores_from_its_spec(tmp_path):
    from rljax.examples.envs.classes.stateless_cartpole import StatelessCartPole

    config = (
        PPOConfig()
        .environment(StatelessCartPole)
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=2,
            env_to_module_connector=lambda env, spaces, device: [
                PrevActionsPrevRewards(n_prev_actions=2),
                FlattenObservations(),
            ],
        )
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        # An evaluation env of its own (an env_config override) gets the pieces too.
        .evaluation(
            evaluation_interval=1, evaluation_duration=2, evaluation_config={"env_config": {}}
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        assert set(algo.observation_space.spaces) == {
            "_orig_obs",
            "prev_n_actions",
            "prev_n_rewards",
        }
        result = algo.train()
        assert result["num_env_steps_sampled_lifetime"] == 64
        assert result["evaluation"]["env_runners"]["num_episodes"] >= 2
        algo.save(str(tmp_path))
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(str(tmp_path), allow_imports=["rljax.examples"])
    try:
        piece = restored.config.env_to_module_connector[0]
        assert isinstance(piece, PrevActionsPrevRewards) and piece.n_prev_actions == 2
        assert restored.observation_space["prev_n_actions"].shape == (4,)
        assert restored.train()["num_env_steps_sampled_lifetime"] == 128
    finally:
        restored.stop()


def test_pieces_are_refused_where_they_cannot_run():
    cfg = PPOConfig().env_runners(num_env_runners=0)
    # EnvPool steps in C++: no Python per step.
    with pytest.raises(ConfigError, match="'CartPole-v1' runs on envpool"):
        cfg.copy().environment("CartPole-v1").env_runners(
            env_to_module_connector=lambda e, s, d: PrevActionsPrevRewards()
        ).build_algo()
    # A piece after a compiled connector.
    with pytest.raises(ConfigError, match="come before rljax's compiled connectors"):
        cfg.copy().environment(CountEnv).env_runners(
            env_to_module_connector=lambda e, s, d: [
                FlattenObservations(),
                FrameStackingEnvToModule(num_frames=2),
            ]
        ).build_algo()
    # A learner connector: only RLlib's frame stacking is accepted (it changes nothing here).
    from rljax.connectors.learner import FrameStackingLearner

    cfg.copy().training(learner_connector=lambda i, o: FrameStackingLearner(num_frames=4))
    with pytest.raises(ConfigError, match="learner_connector=.* is RLlib's"):
        cfg.copy().training(learner_connector=lambda i, o: MeanStdFilter())
