"""The ``env_runner`` episode hooks get: RLlib's view of the runner (``config`` with
``in_evaluation``, ``worker_index``, ``module``), also for a gymnasium env's runner threads."""

from __future__ import annotations

import gymnasium as gym
import pytest

from rljax import register_env
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.rllib_surface import EnvRunner


@pytest.mark.slow  # builds a small PPO with a runner thread (about 3 s)
def test_episode_hooks_get_the_env_runner_view_with_its_config():
    """Was: the runner thread's internals (``HostRunner``), which have no ``config``."""
    register_env("cartpole_hook_view", lambda cfg: gym.make("CartPole-v1"))
    seen = []

    def on_episode_end(*, env_runner, **kwargs):
        seen.append((type(env_runner), env_runner.config.in_evaluation, env_runner.worker_index))

    config = (
        PPOConfig()
        .environment("cartpole_hook_view")
        .env_runners(num_env_runners=1)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .callbacks(on_episode_end=on_episode_end)
    )
    with config.build_algo() as algo:
        algo.train()
    assert seen and set(seen) == {(EnvRunner, False, 1)}


@pytest.mark.slow  # builds a small PPO and evaluates twice (about 4 s)
def test_evaluation_episodes_run_the_episode_hooks_with_the_evaluation_config():
    """RLlib's evaluation runners call the episode hooks; their ``env_runner.config`` has
    ``in_evaluation`` True, and what the hooks log lands in the evaluation's results. Was: no
    hook ran for an evaluation episode."""
    seen = []

    def on_episode_end(*, env_runner, episode, metrics_logger, **kwargs):
        evaluating = env_runner.config.in_evaluation
        seen.append((evaluating, len(episode), episode.is_done))
        if evaluating:
            metrics_logger.log_value("eval_len", len(episode), reduce="max")

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .evaluation(evaluation_interval=1, evaluation_duration=3)
        .callbacks(on_episode_end=on_episode_end)
    )
    with config.build_algo() as algo:
        result = algo.train()
    evaluated = [s for s in seen if s[0]]
    assert len(evaluated) == 3 and all(done and n >= 1 for _, n, done in evaluated)
    assert any(not s[0] for s in seen)  # the training episodes' hooks too
    runners = result["evaluation"]["env_runners"]
    assert runners["eval_len"] == max(n for _, n, _ in evaluated)
    assert runners["num_episodes"] == 3
