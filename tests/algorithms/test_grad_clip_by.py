"""RLlib's ``grad_clip_by`` reaches each algorithm's optimizer (the clips' arithmetic is in
``tests/learners/test_update.py``)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.impala import IMPALAConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.algorithms.sac import SACConfig
from rljax.utils.errors import ConfigError


def _largest_move(config, grad_clip: float) -> float:
    """The largest change of any network weight over one iteration with ``grad_clip``."""
    algo = config.copy().debugging(seed=0).training(grad_clip=grad_clip).build_algo()
    try:
        before = jax.tree.leaves(algo.get_weights())
        algo.train()
        after = jax.tree.leaves(algo.get_weights())
    finally:
        algo.stop()
    # The networks' arrays only: DQN's weights also hold its exploration epsilon, a scalar
    # that its schedule moves.
    moves = [np.max(np.abs(a - b)) for a, b in zip(after, before, strict=True) if np.ndim(a)]
    return float(max(moves))


def _ppo(clip_by: str):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(
            lr=1e-3,
            grad_clip_by=clip_by,
            train_batch_size_per_learner=64,
            minibatch_size=32,
            num_epochs=1,
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )


# A clip of 1e-12 leaves Adam gradients of at most 1e-12 per element (by value, or by a norm of
# 1e-12), so with its eps (1e-5 for PPO, 1e-8 for the others) each step moves a weight by at
# most lr x 1e-12 / (1e-12 + eps) <= 1e-7 at lr 1e-3: the tens of steps of an iteration stay
# below 1e-5. A clip that never binds lets each step move weights by about lr, and so would a
# path that dropped the clip.
@pytest.mark.parametrize("clip_by", ["norm", "value"])
def test_ppo_clips_by_each_arrays_norm_or_by_value(clip_by):
    assert _largest_move(_ppo(clip_by), 1e-12) < 1e-5
    assert _largest_move(_ppo(clip_by), 1e9) > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize(
    "config",
    [
        IMPALAConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .training(lr=1e-3, grad_clip_by="value"),
        DQNConfig()
        .environment("CartPole-v1")
        .training(
            lr=1e-3,
            grad_clip_by="norm",
            num_steps_sampled_before_learning_starts=32,
            train_batch_size_per_learner=32,
        )
        .reporting(min_sample_timesteps_per_iteration=64),
        SACConfig()
        .environment("Pendulum-v1")
        .training(
            actor_lr=1e-3,
            critic_lr=1e-3,
            grad_clip_by="value",
            num_steps_sampled_before_learning_starts=32,
            train_batch_size_per_learner=32,
        )
        .reporting(min_sample_timesteps_per_iteration=64),
    ],
    ids=["IMPALA-value", "DQN-norm", "SAC-value"],
)
def test_the_other_algorithms_take_the_clip_too(config):
    assert _largest_move(config, 1e-12) < 1e-5
    assert _largest_move(config, 1e9) > 1e-4


def test_an_unknown_grad_clip_by_is_refused_naming_rllibs_three():
    with pytest.raises(ConfigError, match="'global_norm', 'norm' or 'value'"):
        PPOConfig().environment("CartPole-v1").training(grad_clip_by="l2").validate()
