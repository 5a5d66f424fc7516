"""RLlib 1.x's gym-style single-agent envs under the old API's trainers, and the new API's
fast refusal of them."""

from __future__ import annotations

import logging
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from rljax.agents.single_agent import OldGymEnv, OldGymEnvCreator, old_gym_env
from rljax.env.failures import EnvBugError, RepeatedFailures
from rljax.env.registry import register_env, registered_creator
from rljax.utils.errors import EnvAPIError


class OldEnv(gym.Env):
    """gym < 0.26: reset() -> obs, step -> (obs, reward, done, info); 3 steps an episode, the
    third cut by a time limit when ``config["cut"]``."""

    def __init__(self, config=None):
        self.cut = bool((config or {}).get("cut"))
        self.observation_space = gym.spaces.Box(-10, 10, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.seeded = None

    def seed(self, seed=None):
        self.seeded = seed

    def reset(self):
        self.t = 0
        return np.zeros(1, np.float32)

    def step(self, action):
        self.t += 1
        info = {"TimeLimit.truncated": True} if self.cut and self.t == 3 else {}
        return np.full(1, self.t, np.float32), 1.0, self.t >= 3, info


class NewEnv(OldEnv):
    def reset(self, *, seed=None, options=None):
        return super().reset(), {}

    def step(self, action):
        obs, reward, done, info = super().step(action)
        return obs, reward, done, False, info


@pytest.mark.parametrize(("cut", "flags"), [(False, (True, False)), (True, (False, True))])
def test_an_old_env_is_seen_through_gymnasiums_api(cut, flags):
    env = OldGymEnv(OldEnv({"cut": cut}))
    obs, info = env.reset(seed=7)
    assert obs.tolist() == [0.0] and info == {} and env.unwrapped.seeded == 7
    for _ in range(2):
        assert env.step(0)[2:4] == (False, False)
    _, reward, terminated, truncated, _ = env.step(0)
    assert reward == 1.0 and (terminated, truncated) == flags


def test_old_classes_and_creators_are_wrapped_new_ones_are_not():
    from rljax.env.jax_env import JaxEnv

    assert isinstance(old_gym_env(OldEnv), OldGymEnvCreator)
    assert old_gym_env(NewEnv) is NewEnv and old_gym_env(JaxEnv) is JaxEnv
    assert old_gym_env("CartPole-v1") == "CartPole-v1"  # an id: nothing registered
    creator = old_gym_env(lambda config: NewEnv(config))  # a function: told once built
    assert isinstance(creator({}), NewEnv)
    assert isinstance(OldGymEnvCreator(OldEnv)({}), OldGymEnv)
    register_env("old-env-by-name", lambda config: OldEnv(config))
    assert old_gym_env("old-env-by-name") == "old-env-by-name"
    assert isinstance(registered_creator("old-env-by-name")({}), OldGymEnv)


def test_an_api_mismatch_is_a_bug_at_its_first_occurrence():
    """Was: retried five times (a traceback each) before it was raised as a bug."""
    failures = RepeatedFailures()
    try:
        OldEnv().reset(seed=0)
    except TypeError as e:
        failures.record(e, 0)
    assert failures.is_bug and "does not follow gymnasium's API" in failures.bug_message("x")
    failures = RepeatedFailures()
    failures.record(EnvAPIError("env 'OldEnv': step() returned a tuple of 4 values"), 0)
    assert failures.is_bug
    failures = RepeatedFailures()
    failures.record(RuntimeError("at random"), 3)
    assert not failures.is_bug


@pytest.mark.slow  # builds and trains PPO
def test_an_old_env_trains_under_the_old_trainer_and_the_new_api_refuses_it_at_once(
    caplog, tmp_path
):
    from rljax.agents.ppo import PPOTrainer
    from rljax.algorithms.ppo import PPOConfig

    small = {"train_batch_size": 64, "sgd_minibatch_size": 32, "num_sgd_iter": 1}
    trainer = PPOTrainer(config={"env": OldEnv, "num_workers": 0, **small})
    try:
        result = trainer.train()
        assert result["episode_len_mean"] == 3.0 and result["timesteps_total"] == 64
        path = trainer.save()
        # RLlib 1.x's worker and policy calls.
        worker = trainer.workers.local_worker()
        policy = worker.get_policy()
        assert worker.worker_index == 0 and trainer.workers.remote_workers() == []
        assert trainer.workers.foreach_worker(lambda w: w.worker_index) == [0]
        obs = np.zeros((3, 1), np.float32)
        actions, states, extra = policy.compute_actions(obs)
        assert actions.shape == (3,) and states == [] and extra == {}
        np.testing.assert_array_equal(actions, trainer.compute_actions(obs))
        assert policy.config["minibatch_size"] == 32 and policy.model is not None
        exported = policy.export_model(tmp_path / "model")
        assert (Path(exported) / "policy.json").is_file()
        saved = trainer.export_policy_checkpoint(tmp_path / "policy")
        from rljax.core.rl_module import RLModule

        module = RLModule.from_checkpoint(
            Path(saved) / "learner_group" / "learner" / "rl_module" / "default_policy"
        )
        assert module.forward_inference({"obs": obs})["actions"].shape == (3,)
    finally:
        trainer.stop()
    # The trainer class loads its checkpoint as a trainer (was: a plain PPO, without the old
    # result keys and methods).
    restored = PPOTrainer.from_checkpoint(path, env=OldEnv)  # adapted again (it failed)
    try:
        assert isinstance(restored, PPOTrainer)
        assert restored.train()["timesteps_total"] == 128
    finally:
        restored.stop()
    config = (
        PPOConfig()
        .environment(OldEnv)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
    )
    with (
        caplog.at_level(logging.WARNING, logger="rljax"),
        pytest.raises(EnvBugError, match="does not follow gymnasium's API"),
    ):
        algo = config.build_algo()
        try:
            algo.train()
        finally:
            algo.stop()
    assert not [r for r in caplog.records if "rebuilding it" in r.getMessage()]
