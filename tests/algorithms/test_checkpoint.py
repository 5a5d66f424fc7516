import json
import pickle

import jax
import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.ppo import PPOConfig
from rljax.utils.errors import CheckpointError


class _Payload:
    """Unpickling this creates a file: what a malicious checkpoint would do."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


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
    # A file of the checkpoint (was: "no such directory"): the directory to give instead.
    version = path / (path / "LATEST").read_text().strip()
    state_file = next(p for p in version.iterdir() if p.is_file())
    with pytest.raises(CheckpointError, match=rf"is a file, not a checkpoint: .*'{path}'"):
        Algorithm.from_checkpoint(state_file)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="not an rljax checkpoint"):
        Algorithm.from_checkpoint(tmp_path / "empty")
    # A planted pickle payload in place of the state: refused, never unpickled (unpickling it
    # would create the marker file).
    bad = tmp_path / "planted"
    algo.save_to_path(bad)
    latest = (bad / "LATEST").read_text()
    marker = tmp_path / "pwned"
    (bad / latest / "state.msgpack").write_bytes(pickle.dumps(_Payload(str(marker))))
    with pytest.raises(CheckpointError, match="holds a Python pickle, which rljax never loads"):
        algo.restore_from_path(bad)
    with pytest.raises(CheckpointError, match="holds a Python pickle"):
        Algorithm.from_checkpoint(bad)
    assert not marker.exists()
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


KILL_SCRIPT = """
import signal, sys, numpy as np
from rljax.utils import checkpoint as ckpt
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if this test's runner ignores it
path = sys.argv[1]
for i in range(1, 10**6):
    # 4 MB of state whose every value is the save's number: a torn write would show.
    ckpt.save_checkpoint(path, {"i": i}, {"w": np.full(1 << 20, i, np.float32)}, num_to_keep=2)
"""


@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("delay_s", [0.05, 0.13, 0.31])
def test_kill_9_or_ctrl_c_during_saves_leaves_a_loadable_consistent_checkpoint(
    tmp_path, delay_s, signal_name
):
    # SIGKILL: no cleanup runs. SIGINT: a KeyboardInterrupt somewhere in a save, which unwinds
    # through it (a half-written temporary directory stays behind for the next save to clear).
    import signal
    import subprocess
    import sys
    import time

    from rljax.utils import checkpoint as ckpt

    path = tmp_path / "ckpt"
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(path)])
    try:
        deadline = time.monotonic() + 60
        while not (path / "LATEST").exists():  # the first save finished
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.01)
        time.sleep(delay_s)  # somewhere in a later save
        proc.send_signal(getattr(signal, signal_name))
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -getattr(signal, signal_name)  # it ended by the signal
    meta, version_dir = ckpt.load_metadata(path)
    state = ckpt.load_state(version_dir, {"w": np.zeros(1 << 20, np.float32)})
    assert meta["i"] >= 1
    np.testing.assert_array_equal(state["w"], np.full(1 << 20, meta["i"], np.float32))
    # Every version directory is complete (removals rename first), the kept older one included.
    versions = sorted(p for p in path.iterdir() if p.name.startswith("v-"))
    assert 1 <= len(versions) <= 3  # two kept, and at most one more about to be removed
    for version in versions:
        v_meta, v_dir = ckpt.load_metadata(version)
        v_state = ckpt.load_state(v_dir, {"w": np.zeros(1 << 20, np.float32)})
        # At most one version is newer than the one LATEST names: a kill between renaming the
        # new version into place and updating LATEST leaves it complete but not yet named.
        assert v_state["w"][-1] == v_meta["i"] <= meta["i"] + 1


def test_num_to_keep_keeps_the_newest_versions_and_each_loads(trained, tmp_path):
    algo, _ = trained
    path = tmp_path / "kept"
    for _ in range(3):
        algo.save_to_path(path, num_to_keep=2)
    versions = sorted(p.name for p in path.iterdir() if p.name.startswith("v-"))
    assert versions == ["v-000002", "v-000003"]
    assert (path / "LATEST").read_text() == "v-000003"
    restored = Algorithm.from_checkpoint(path / "v-000002")  # an older version, by its directory
    restored.stop()
    with pytest.raises(CheckpointError, match="num_to_keep=0"):
        algo.save_to_path(path, num_to_keep=0)


def test_a_complete_version_that_latest_does_not_name_does_not_block_saves(tmp_path):
    # A crash between renaming v-N+1 into place and updating LATEST leaves v-N+1 complete but
    # unnamed; the next save must go past it (it used to fail on the existing directory).
    from rljax.utils import checkpoint as ckpt

    path = tmp_path / "c"
    ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(3)})
    (path / "v-000002").mkdir()  # the crashed save's directory
    ckpt.save_checkpoint(path, {"i": 2}, {"w": np.ones(3)}, num_to_keep=3)
    assert (path / "LATEST").read_text() == "v-000003"
    assert ckpt.load_metadata(path)[0]["i"] == 2


def test_absent_state_parts_save_and_load_as_none(tmp_path):
    # A uniform replay buffer's state has no min tree (None): saving it used to fail in msgpack.
    from rljax.utils import checkpoint as ckpt

    path = tmp_path / "c"
    ckpt.save_checkpoint(path, {}, {"w": np.ones(3, np.float32), "min_tree": None})
    _, version_dir = ckpt.load_metadata(path)
    state = ckpt.load_state(version_dir, {"w": np.zeros(3, np.float32), "min_tree": None})
    assert state["min_tree"] is None and np.array_equal(state["w"], np.ones(3))
    # An array where this algorithm has nothing is refused, as any mismatch is; and the reverse.
    other = tmp_path / "d"
    ckpt.save_checkpoint(other, {}, {"w": np.ones(3, np.float32), "min_tree": np.ones(2)})
    _, other_dir = ckpt.load_metadata(other)
    with pytest.raises(CheckpointError, match="/min_tree holds a ndarray; this algorithm has no"):
        ckpt.load_state(other_dir, {"w": np.zeros(3, np.float32), "min_tree": None})
    with pytest.raises(CheckpointError, match="/min_tree holds a NoneType"):
        ckpt.load_state(version_dir, {"w": np.zeros(3, np.float32), "min_tree": np.zeros(2)})
