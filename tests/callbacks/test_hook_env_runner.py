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
