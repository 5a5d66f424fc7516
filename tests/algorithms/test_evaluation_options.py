"""RLlib's evaluation options: evaluation in parallel to training with the weights the
iteration starts from, evaluation_config's explore and env overrides, evaluation runners."""

from __future__ import annotations

import numpy as np
import pytest

from rljax.algorithms.ppo import PPOConfig
from rljax.utils.errors import ConfigError


def _config(**evaluation):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=2)
        .evaluation(evaluation_interval=1, evaluation_duration=300, **evaluation)
        .evaluation(evaluation_duration_unit="timesteps")
        .debugging(seed=0)
    )


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (9 s alone)
def test_parallel_evaluation_sees_the_weights_the_iteration_starts_from():
    parallel = _config(evaluation_parallel_to_training=True).build_algo()
    serial = _config().evaluation(evaluation_interval=None).build_algo()
    try:
        for _ in range(2):
            got = parallel.train()
            expected = serial.evaluate()  # before training, as the parallel one ran
            trained = serial.train()
            np.testing.assert_equal(got["evaluation"], expected)  # NaN where no episode ended
            assert got["env_runners"]["episode_return_mean"] == pytest.approx(
                trained["env_runners"]["episode_return_mean"]
            )
        assert got["evaluation"]["env_runners"]["num_env_steps_sampled"] >= 300

        # explore=True samples: the same observations get different actions; greedy does not.
        obs = np.zeros((256, 4), np.float32)
        greedy = serial._evaluation_actions(False)
        sampled = serial._evaluation_actions(True)
        assert len(set(greedy(obs).tolist())) == 1
        assert set(sampled(obs).tolist()) == {0, 1}
    finally:
        parallel.stop()
        serial.stop()


def test_evaluation_env_overrides_and_runners(monkeypatch):
    config = _config(
        evaluation_config=PPOConfig.overrides(env_config={"max_episode_steps": 20}),
        evaluation_num_env_runners=2,
    )
    algo = config.build_algo()
    built = []
    original = algo._evaluation_env

    def spy(num_envs, seed, spec=None):
        built.append((num_envs, spec.env_config))
        return original(num_envs, seed, spec)

    monkeypatch.setattr(algo, "_evaluation_env", spy)
    try:
        out = algo.evaluate()["env_runners"]
    finally:
        algo.stop()
    # 2 runners x 4 envs, the override's env; 300 steps are met exactly on the 6 copies (of
    # those 8) that divide them, 50 steps each.
    assert built == [(6, {"max_episode_steps": 20})]
    assert out["num_env_steps_sampled"] == 300
    assert out["episode_len_mean"] <= 20 and out["num_episodes"] >= 300 // 20 - 6


def test_evaluation_settings_are_checked():
    with pytest.raises(ConfigError, match=r"evaluation_config\['lr'\]: evaluation honours"):
        _config(evaluation_config={"lr": 0.1}).validate()
    with pytest.raises(ConfigError, match="explore=False: training always samples"):
        _config().env_runners(explore=False).validate()
    with pytest.raises(ConfigError, match=r"evaluation_config\['explore'\]"):
        _config(evaluation_config={"explore": "yes"}).validate()
    with pytest.raises(ConfigError, match="did you mean 'CartPole-v1'"):
        _config(evaluation_config={"env": "CartPol-v1"}).validate()
    algo = _config(evaluation_config={"env": "Acrobot-v1"}).build_algo()
    try:
        with pytest.raises(ConfigError, match="Acrobot-v1' has spaces"):
            algo.evaluate()
    finally:
        algo.stop()
