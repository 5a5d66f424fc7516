"""RLlib's result-key constants name keys rljax's results hold, at the paths RLlib's scripts
read them from."""

from __future__ import annotations

import pytest

import rljax.utils.metrics as M
from rljax.algorithms.ppo import PPOConfig
from rljax.core import ALL_MODULES, DEFAULT_MODULE_ID


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (5 s alone)
def test_every_constant_names_a_key_of_a_result():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .evaluation(evaluation_interval=1, evaluation_duration=1)
        .debugging(seed=0)
    )
    with config.build_algo() as algo:
        result = algo.train()
    runners = result[M.ENV_RUNNER_RESULTS]
    for key in (
        M.EPISODE_RETURN_MEAN,
        M.EPISODE_RETURN_MAX,
        M.EPISODE_RETURN_MIN,
        M.EPISODE_LEN_MEAN,
        M.EPISODE_LEN_MAX,
        M.EPISODE_LEN_MIN,
        M.NUM_EPISODES,
        M.NUM_EPISODES_LIFETIME,
        M.NUM_ENV_STEPS_SAMPLED,
        M.NUM_ENV_STEPS_SAMPLED_PER_SECOND,
    ):
        assert key in runners, key
    assert M.EPISODE_RETURN_MEAN in result[M.EVALUATION_RESULTS][M.ENV_RUNNER_RESULTS]
    for key in (M.NUM_ENV_STEPS_SAMPLED_LIFETIME, M.NUM_ENV_STEPS_TRAINED_LIFETIME):
        assert key in result, key
    learners = result[M.LEARNER_RESULTS]
    assert M.NUM_ENV_STEPS_TRAINED in learners[ALL_MODULES] and DEFAULT_MODULE_ID in learners
    assert M.FAULT_TOLERANCE_STATS in result
    assert {M.TRAINING_ITERATION_TIMER, M.TRAINING_STEP_TIMER} <= set(result[M.TIMERS])
    # No constant outside __all__, and each of them is read above.
    assert set(M.__all__) == {n for n in dir(M) if n.isupper()}
