import json
import pickle

import jax
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.ppo import PPOConfig
from rljax.utils.errors import CheckpointError


def _config(seed=0):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=8, rollout_fragment_length=32)
        .training(lr=1e-3, minibatch_size=64, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=seed)
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    algo = _config().build_algo()
    for _ in range(3):
        algo.train()
    path = tmp_path_factory.mktemp("ckpt") / "ppo"
    algo.save_to_path(path)
    yield algo, path
    algo.stop()


def _obs(n=64):
    return np.random.default_rng(0).uniform(-0.5, 0.5, (n, 4)).astype(np.float32)


def test_round_trip_gives_identical_actions_and_state(trained):
    algo, path = trained
    restored = Algorithm.from_checkpoint(path)
    try:
        np.testing.assert_array_equal(
            algo.compute_actions(_obs()), restored.compute_actions(_obs())
        )
        same = jax.tree.map(
            lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)), algo.state, restored.state
        )
        assert all(jax.tree.leaves(same))
        assert restored.iteration == 3
        assert restored.num_env_steps_sampled_lifetime == algo.num_env_steps_sampled_lifetime
        result = restored.train()  # training continues from the restored counters
        assert result["training_iteration"] == 4
        assert result["num_env_steps_sampled_lifetime"] > algo.num_env_steps_sampled_lifetime
    finally:
        restored.stop()


def test_restore_into_a_fresh_algorithm(trained):
    algo, path = trained
    fresh = _config(seed=5).build_algo()
    try:
        assert not np.array_equal(
            fresh.get_module().forward_inference({"obs": _obs()})["action_dist_inputs"],
            algo.get_module().forward_inference({"obs": _obs()})["action_dist_inputs"],
        )
        fresh.restore_from_path(path)
        np.testing.assert_array_equal(
            fresh.get_module().forward_inference({"obs": _obs()})["action_dist_inputs"],
            algo.get_module().forward_inference({"obs": _obs()})["action_dist_inputs"],
        )
    finally:
        fresh.stop()


def test_checkpoint_holds_no_pickle_and_is_versioned(trained):
    _, path = trained
    latest = (path / "LATEST").read_text()
    files = sorted(p.name for p in (path / latest).iterdir())
    assert files == ["rljax_checkpoint.json", "state.msgpack"]
    meta = json.loads((path / latest / "rljax_checkpoint.json").read_text())
    assert (
        meta["format_version"] == 2
        and meta["algo"] == "PPO"
        and meta["policy_ids"] == ["default_policy"]
    )
    assert meta["config"]["env"] == "CartPole-v1"
    raw = (path / latest / "state.msgpack").read_bytes()
    assert b"\x80\x04\x95" not in raw[:3]  # not a pickle stream


def test_saving_twice_keeps_one_complete_version(trained, tmp_path):
    algo, _ = trained
    path = tmp_path / "twice"
    algo.save_to_path(path)
    algo.save_to_path(path)
    versions = sorted(p.name for p in path.iterdir() if p.name.startswith("v-"))
    assert versions == ["v-000002"] and (path / "LATEST").read_text() == "v-000002"


def test_bad_checkpoints_are_refused_clearly(trained, tmp_path):
    algo, path = trained
    with pytest.raises(CheckpointError, match="no such directory"):
        Algorithm.from_checkpoint(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="not an rljax checkpoint"):
        Algorithm.from_checkpoint(tmp_path / "empty")
    # A planted pickle payload in place of the state: refused, never unpickled.
    bad = tmp_path / "planted"
    algo.save_to_path(bad)
    latest = (bad / "LATEST").read_text()
    (bad / latest / "state.msgpack").write_bytes(pickle.dumps({"params": 1}))
    with pytest.raises(CheckpointError):
        algo.restore_from_path(bad)
    # A checkpoint from an incompatible format version.
    old = tmp_path / "old"
    algo.save_to_path(old)
    meta_path = old / (old / "LATEST").read_text() / "rljax_checkpoint.json"
    meta = json.loads(meta_path.read_text())
    meta["format_version"] = 99
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="format 99"):
        Algorithm.from_checkpoint(old)


def test_architecture_mismatch_is_refused(trained, tmp_path):
    _, path = trained
    other = _config().rl_module(model_config={"fcnet_hiddens": [8]}).build_algo()
    try:
        with pytest.raises(CheckpointError, match="shape"):
            other.restore_from_path(path)
    finally:
        other.stop()


def test_compute_single_action_checks_the_observation(trained):
    algo, _ = trained
    assert algo.compute_single_action(np.zeros(4, np.float32)) in (0, 1)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        algo.compute_single_action(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="policy_id"):
        algo.compute_single_action(np.zeros(4, np.float32), policy_id="other")
