"""Offline learning with no env: ``environment(observation_space=..., action_space=...)`` (as
RLlib's offline configs give the spaces of data recorded elsewhere), its refusals, and the
spaces' check against an env that is given."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pyarrow")

from rljax.algorithms.algorithm import Algorithm  # noqa: E402
from rljax.algorithms.cql import CQLConfig  # noqa: E402
from rljax.algorithms.marwil import BCConfig  # noqa: E402
from rljax.algorithms.ppo import PPOConfig  # noqa: E402
from rljax.offline import OfflineWriter  # noqa: E402
from rljax.utils.errors import ConfigError  # noqa: E402

OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
ACT = gym.spaces.Discrete(2)


def _sign_data(path) -> str:
    """Episodes whose action is 1 where the observation's first entry is positive."""
    writer = OfflineWriter(path, OBS, ACT)
    rng = np.random.default_rng(0)
    for _ in range(16):
        obs = [rng.uniform(-1, 1, 2).astype(np.float32) for _ in range(33)]
        actions = [int(o[0] > 0) for o in obs[:-1]]
        writer.add_episode(obs, actions, [1.0] * 32, True, False)
    writer.flush()
    return str(path)


@pytest.mark.slow  # BC's build and two train() calls, a save and a load (about 5 s)
def test_bc_learns_from_the_spaces_alone_and_saves_them(tmp_path):
    """Was: "no environment given" (and ``observation_space`` an unknown keyword)."""
    config = (
        BCConfig()
        .environment(observation_space=OBS, action_space=ACT)
        .offline_data(input_=_sign_data(tmp_path / "data"), dataset_num_iters_per_learner=100)
        .training(lr=3e-3, train_batch_size_per_learner=64)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        assert algo.env_spec is None and algo.observation_space == OBS
        algo.train()
        states = np.random.default_rng(1).uniform(-1, 1, (200, 2)).astype(np.float32)
        states = states[np.abs(states[:, 0]) > 0.1]  # away from the boundary
        actions = algo.compute_actions(states, explore=False)
        assert np.mean(actions == (states[:, 0] > 0)) > 0.95
        with pytest.raises(ConfigError, match="evaluation steps an env, and this algorithm has"):
            algo.evaluate()
        path = algo.save_to_path(tmp_path / "ckpt")
    finally:
        algo.stop()
    loaded = Algorithm.from_checkpoint(path)
    try:
        assert (loaded.observation_space, loaded.action_space) == (OBS, ACT)
        np.testing.assert_array_equal(loaded.compute_actions(states, explore=False), actions)
    finally:
        loaded.stop()


def test_the_spaces_round_trip_through_to_dict_as_data():
    data = BCConfig().environment(observation_space=OBS, action_space=ACT).to_dict()
    assert data["observation_space"] == {
        "__gym_space__": {"type": "Box", "shape": [2], "dtype": "float32", "low": -1.0, "high": 1.0}
    }
    back = BCConfig().update_from_dict(data)
    assert (back.observation_space, back.action_space) == (OBS, ACT)
    assert BCConfig().to_dict()["observation_space"] is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            PPOConfig().environment(observation_space=OBS, action_space=ACT),
            "PPO samples its env, so give one",
        ),
        (
            BCConfig().environment(observation_space=OBS).offline_data(input_="/nx"),
            r"environment\(observation_space=...\) with no env: give action_space too",
        ),
        (
            BCConfig()
            .environment(observation_space=OBS, action_space=ACT)
            .offline_data(input_="/nx")
            .evaluation(evaluation_interval=1),
            "evaluation steps an env; give one",
        ),
        (
            PPOConfig()
            .environment("CartPole-v1", observation_space=OBS)
            .multi_agent(policies={"a"}, policy_mapping_fn=lambda *a, **k: "a"),
            "a multi-agent config's spaces are each policy's",
        ),
    ],
    ids=["online", "one-space", "evaluation", "multi-agent"],
)
def test_env_less_spaces_are_refused_where_they_cannot_serve(config, message):
    with pytest.raises(ConfigError, match=message):
        config.validate()


def test_a_space_that_is_not_one_is_refused_at_once():
    with pytest.raises(ConfigError, match=r"observation_space=.*use None or a gymnasium space"):
        BCConfig().environment(observation_space=(2,))


def test_spaces_given_beside_an_env_must_be_the_envs():
    other = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    config = (
        CQLConfig().environment("Pendulum-v1", observation_space=other).offline_data(input_="/nx")
    )
    with pytest.raises(ConfigError, match=r"observation_space=Box.*differs from the env's Box"):
        config.build_algo()
