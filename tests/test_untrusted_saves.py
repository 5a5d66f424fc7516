"""Saving into a directory that holds other things, or that someone else saves to at once: a
save removes only what saves write, every version a save reports loads, and misuse gets a named
error before anything changes.

One table of directories. Each row makes a directory (a good checkpoint's, or a new one, with
other entries beside it), saves into it twice as a user would (``algo.save_to_path(d)``, keeping
one version), and then: every entry that is not a save's (``is_checkpoint_entry``) is exactly as
it was (names, kinds, bytes, link targets), ``LATEST`` names the version the row expects, which
loads (``restore_from_path``) with the algorithm's state, and no temporary entry is left.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import rljax
from rljax.algorithms import algorithm
from rljax.algorithms.ppo import PPOConfig
from rljax.utils import checkpoint as ckpt
from rljax.utils.errors import AlgorithmBusyError, CheckpointBusyError, CheckpointError

ENV = "untrusted-saves-cartpole"
rljax.register_env(ENV, lambda config: gym.make("CartPole-v1"))
REPO = Path(__file__).resolve().parents[1]


def _config():
    return (
        PPOConfig()
        .environment(ENV)
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=32, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=5)
    )


@pytest.fixture(scope="module")
def algo():
    algo = _config().build_algo()
    yield algo
    algo.stop()


def _tree(path: Path) -> dict[str, object]:
    """Every entry under ``path`` that is not a save's, as (kind, bytes or link target)."""
    out: dict[str, object] = {}
    for child in sorted(path.iterdir()):
        if ckpt.is_checkpoint_entry(child.name) and not (
            ckpt.is_version_name(child.name)
            and (child.is_symlink() or not (child / ckpt.META_FILE).is_file())
        ):
            continue  # a save's own entry (a version holding a checkpoint, LATEST, temporaries)
        out.update(_entry(child, child.name))
    return out


def _entry(path: Path, name: str) -> dict[str, object]:
    if path.is_symlink():
        return {name: ("link", os.readlink(path))}
    if path.is_dir():
        out: dict[str, object] = {name: ("dir",)}
        for child in sorted(path.iterdir()):
            out.update(_entry(child, f"{name}/{child.name}"))
        return out
    return {name: ("file", path.read_bytes())}


def _temporaries(path: Path) -> list[str]:
    return sorted(
        c.name for c in path.iterdir() if c.name.startswith((".rljax-tmp-", ".tmp-", ".LATEST."))
    )


# ---------------------------------------------------------------------- directory makers
def _dir_with(name: str, make: Callable[[Path], object]) -> Callable[[Path], Path]:
    """A new directory ``root/ckpt`` holding ``name``, made by ``make(path_of_name)``."""

    def build(root: Path) -> Path:
        path = root / "ckpt"
        path.mkdir()
        make(path / name)
        return path

    return build


def _mkdir_with_file(path: Path) -> None:
    path.mkdir()
    (path / "notes.txt").write_text("the user's own notes")


def _user_version_dir(path: Path) -> None:  # named like a version, holding no checkpoint
    path.mkdir()
    (path / "results.csv").write_text("step,return\n1,10\n")


def _linked_checkpoint(path: Path) -> None:  # a link named like a version, to a real checkpoint
    target = path.parent.parent / "elsewhere"
    ckpt.save_checkpoint(target, {"owner": "elsewhere"}, {"w": np.ones(2)})
    os.symlink(target / "v-000001", path)


def _killed_save(path: Path) -> None:
    """What a save killed (SIGKILL) before it replaced LATEST leaves: its new version, and
    LATEST's replacement written but not yet renamed."""
    script = (
        "import os, signal, sys, numpy as np\n"
        "from rljax.utils import checkpoint as ckpt\n"
        "ckpt.save_checkpoint(sys.argv[1], {'i': 1}, {'w': np.ones(2)})\n"
        "real = os.replace\n"
        "def replace(src, dst):\n"
        "    if str(dst).endswith('LATEST'):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(src, dst)\n"
        "os.replace = replace\n"
        "ckpt.save_checkpoint(sys.argv[1], {'i': 2}, {'w': np.ones(2)})\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", script, str(path.parent)], env=env, timeout=60)
    assert proc.returncode == -9
    left = _temporaries(path.parent)
    assert len(left) == 1 and left[0].startswith(".rljax-tmp-latest-"), left
    assert (path.parent / "LATEST").read_text() == "v-000001"


def _earlier_leftovers(path: Path) -> None:  # what interrupted saves of earlier rljax left
    (path.parent / "v-000003").mkdir()  # a complete version LATEST never came to name
    (path.parent / "v-000003" / ckpt.META_FILE).write_text("{}")
    (path.parent / ".tmp-v-000002-0a1b2c3d").mkdir()
    (path.parent / ".tmp-old-v-000001-0a1b2c3d").mkdir()
    (path.parent / ".LATEST.0a1b2c3d").write_text("v-000002")
    (path.parent / ".rljax-tmp-new-4242-0a1b2c3d-v-000003").mkdir()
    (path.parent / ".rljax-tmp-latest-4242-0a1b2c3d").write_text("v-000003")


# (name, how to make the directory, the version the second save must be LATEST at,
#  entries that must be gone after it)
CASES = [
    (".tmp-build/ of the user's", _dir_with(".tmp-build", _mkdir_with_file), "v-000002", []),
    ("v-0.9-backup/ of the user's", _dir_with("v-0.9-backup", _mkdir_with_file), "v-000002", []),
    (
        "v-20241201123456/ (too many digits)",
        _dir_with("v-20241201123456", _mkdir_with_file),
        "v-000002",
        [],
    ),
    ("v-² (a non-ASCII digit)", _dir_with("v-²", _mkdir_with_file), "v-000002", []),
    ("v-١٢٣٤٥٦ (Arabic-Indic digits)", _dir_with("v-١٢٣٤٥٦", _mkdir_with_file), "v-000002", []),
    ("v-000007/ holding no checkpoint", _dir_with("v-000007", _user_version_dir), "v-000009", []),
    ("v-000003 a file", _dir_with("v-000003", lambda p: p.write_text("mine")), "v-000005", []),
    (
        "v-000005 a link to a checkpoint elsewhere",
        _dir_with("v-000005", _linked_checkpoint),
        "v-000007",
        [],
    ),
    (
        ".LATEST.backup of the user's",
        _dir_with(".LATEST.backup", lambda p: p.write_text("x")),
        "v-000002",
        [],
    ),
    (
        ".rljax-tmp-mine/ of the user's",
        _dir_with(".rljax-tmp-mine", _mkdir_with_file),
        "v-000002",
        [],
    ),
    (
        "LATEST.txt of the user's",
        _dir_with("LATEST.txt", lambda p: p.write_text("v-000001")),
        "v-000002",
        [],
    ),
    ("a killed save's leftovers", _dir_with("v-000001", _killed_save), "v-000004", ["v-000002"]),
    (
        "earlier rljax versions' leftovers",
        _dir_with("x", _earlier_leftovers),
        "v-000005",
        [
            "v-000003",
            ".tmp-v-000002-0a1b2c3d",
            ".tmp-old-v-000001-0a1b2c3d",
            ".LATEST.0a1b2c3d",
            ".rljax-tmp-new-4242-0a1b2c3d-v-000003",
            ".rljax-tmp-latest-4242-0a1b2c3d",
        ],
    ),
]


@pytest.mark.parametrize("name, make, version, gone", CASES, ids=[c[0] for c in CASES])
def test_a_save_removes_only_what_saves_write(algo, tmp_path, name, make, version, gone):
    path = make(tmp_path)
    before = _tree(path)
    assert before or gone  # something of the user's to keep, or a save's leftover to go
    start = time.perf_counter()
    for _ in range(2):
        assert algo.save_to_path(path) == str(path)
    elapsed = time.perf_counter() - start
    assert _tree(path) == before, name
    assert (path / "LATEST").read_text() == version
    own = [c.name for c in path.iterdir() if (c / ckpt.META_FILE).is_file() and not c.is_symlink()]
    assert own == [version], own  # num_to_keep=1: the older own version went
    for entry in gone:
        assert not os.path.lexists(path / entry)
    assert [t for t in _temporaries(path) if ckpt.is_checkpoint_entry(t)] == []
    meta, version_dir = ckpt.load_metadata(path)
    assert version_dir == path / version and meta["counters"]["training_iteration"] == 0
    algo.restore_from_path(path)
    assert elapsed < 5.0, f"{name}: {elapsed:.2f} s"


def test_the_linked_checkpoint_elsewhere_is_untouched(algo, tmp_path):
    path = _dir_with("v-000005", _linked_checkpoint)(tmp_path)
    for _ in range(3):
        algo.save_to_path(path)
    assert ckpt.load_metadata(tmp_path / "elsewhere")[0]["owner"] == "elsewhere"
    assert os.readlink(path / "v-000005") == str(tmp_path / "elsewhere" / "v-000001")


def test_at_least_ten_directories():
    assert len(CASES) >= 10


# ---------------------------------------------------------------------- one name rule
@pytest.mark.parametrize(
    "name, is_version",
    [
        ("v-000001", True),
        ("v-999999999999", True),
        ("v-1000000", True),
        ("v-00001", False),
        ("v-0000000000001", False),
        ("v-²", False),
        ("v-000001\n", False),
        ("v-0.9-backup", False),
        ("V-000001", False),
    ],
)
def test_one_rule_names_versions_for_save_clean_and_load(tmp_path, name, is_version):
    assert ckpt.is_version_name(name) is is_version
    if "\n" in name:
        return  # no such directory to make; LATEST's own trailing newline is stripped
    # The loader follows the same rule: LATEST naming it loads, or is refused as corrupt.
    path = tmp_path / "c"
    ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(2)})
    os.replace(path / "v-000001", path / name)
    (path / "LATEST").write_text(name)
    if is_version:
        assert ckpt.load_metadata(path)[0]["i"] == 1
    else:
        with pytest.raises(CheckpointError, match="LATEST is corrupt"):
            ckpt.load_metadata(path)


def test_versions_past_six_digits_keep_the_newest(tmp_path):
    # Kept by number, not by name: v-1000000 is newer than v-999999.
    path = tmp_path / "c"
    ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(2)})
    os.replace(path / "v-000001", path / "v-999999")
    final = ckpt.save_checkpoint(path, {"i": 2}, {"w": np.ones(2)})
    assert final.name == "v-1000000"
    assert sorted(c.name for c in path.iterdir()) == [".rljax-lock", "LATEST", "v-1000000"]
    assert ckpt.load_metadata(path)[0]["i"] == 2


def test_the_last_version_number_is_refused_by_name_changing_nothing(tmp_path):
    path = tmp_path / "c"
    (path / "v-999999999999").mkdir(parents=True)
    with pytest.raises(CheckpointError, match=r"holds v-999999999999, the highest version"):
        ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(2)})
    assert sorted(c.name for c in path.iterdir()) == [".rljax-lock", "v-999999999999"]


# ---------------------------------------------------------------------- named errors
def test_saving_to_a_file_is_refused_and_the_file_stays(algo, tmp_path):
    target = tmp_path / "model.bin"
    target.write_bytes(b"the user's model")
    with pytest.raises(CheckpointError) as info:
        algo.save_to_path(target)
    assert f"cannot save to {str(target)!r}: it is a file, not a directory" in str(info.value)
    assert target.read_bytes() == b"the user's model"
    assert sorted(tmp_path.iterdir()) == [target]
    with pytest.raises(CheckpointError, match="the directory cannot be created"):
        algo.save_to_path(target / "sub")
    assert sorted(tmp_path.iterdir()) == [target]


def test_a_lock_file_that_is_a_link_is_refused_and_its_target_stays(tmp_path):
    path = tmp_path / "c"
    path.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    os.symlink(victim, path / ".rljax-lock")
    with pytest.raises(CheckpointError, match=r"save lock .*\.rljax-lock cannot be opened"):
        ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(2)})
    assert victim.read_text() == "keep me"
    assert sorted(c.name for c in path.iterdir()) == [".rljax-lock"]


# ---------------------------------------------------------------------- concurrency
def _hold_lock(path: Path) -> int:
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path / ".rljax-lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, b"4242\n", 0)
    return fd


def test_a_second_saver_waits_for_the_lock_then_saves(tmp_path):
    path = tmp_path / "c"
    fd = _hold_lock(path)
    threading.Timer(0.3, os.close, (fd,)).start()
    start = time.perf_counter()
    final = ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(2)}, lock_timeout_s=5.0)
    waited = time.perf_counter() - start
    assert 0.25 < waited < 2.0, waited
    assert final == path / "v-000001" and ckpt.load_metadata(path)[0]["i"] == 1


def test_a_lock_held_too_long_is_a_named_error_changing_nothing(tmp_path):
    path = tmp_path / "c"
    ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(2)})
    before = sorted(c.name for c in path.iterdir())
    fd = _hold_lock(path)
    try:
        start = time.perf_counter()
        with pytest.raises(CheckpointBusyError) as info:
            ckpt.save_checkpoint(path, {"i": 2}, {"w": np.ones(2)}, lock_timeout_s=0.2)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
    message = str(info.value)
    assert f"cannot save to {path}: another save (pid 4242) has held its lock" in message
    assert "for 0.2 s" in message
    assert 0.15 < elapsed < 1.5, elapsed
    assert sorted(c.name for c in path.iterdir()) == before
    assert ckpt.load_metadata(path)[0]["i"] == 1


SAVER = """
import json, os, sys, time
import numpy as np
from rljax.utils import checkpoint as ckpt
one, all_, go, out, n = sys.argv[1:6]
while not os.path.exists(go):
    time.sleep(0.001)
reported, errors = [], []
for i in range(int(n)):
    for path, keep in ((one, 1), (all_, 10_000)):
        meta = {"pid": os.getpid(), "i": i}
        try:
            final = ckpt.save_checkpoint(path, meta, {"w": np.full(3, i, np.float32)}, keep)
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")
        else:
            if keep > 1:
                reported.append([final.name, i])
json.dump({"pid": os.getpid(), "reported": reported, "errors": errors}, open(out, "w"))
"""


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (6 s alone)
def test_two_processes_saving_to_one_directory_all_succeed_and_load(tmp_path):
    one, all_, go = tmp_path / "keep-one", tmp_path / "keep-all", tmp_path / "go"
    n = 50
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outs = [tmp_path / f"out{k}.json" for k in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAVER, str(one), str(all_), str(go), str(out), str(n)],
            env=env,
        )
        for out in outs
    ]
    time.sleep(0.5)
    go.touch()  # both start saving together (imports done or nearly)
    for p in procs:
        assert p.wait(timeout=120) == 0
    results = [json.loads(out.read_text()) for out in outs]
    assert [r["errors"] for r in results] == [[], []]
    # Every version a save reported is there, loads, and holds what that save wrote.
    reported = [(name, r["pid"], i) for r in results for name, i in r["reported"]]
    assert len(reported) == 2 * n and len({name for name, _, _ in reported}) == 2 * n
    for name, pid, i in reported:
        meta, version_dir = ckpt.load_metadata(all_ / name)
        assert (meta["pid"], meta["i"]) == (pid, i)
        state = ckpt.load_state(version_dir, {"w": np.zeros(3, np.float32)})
        assert state["w"].tolist() == [i] * 3
    latest = (all_ / "LATEST").read_text()
    assert latest == max(name for name, _, _ in reported)
    # Keeping one: exactly the newest stays, and nothing temporary.
    assert sorted(c.name for c in one.iterdir()) == [".rljax-lock", "LATEST", "v-000100"]
    assert ckpt.load_metadata(one)[0]["i"] == n - 1
    assert _temporaries(one) == [] and _temporaries(all_) == []


# ---------------------------------------------------------------------- one train() at a time
def test_train_and_save_from_a_second_thread_are_refused_while_one_trains(tmp_path):
    inside, release = threading.Event(), threading.Event()
    saved_inside: list[str] = []

    def on_train_result(algorithm, result, **kwargs):
        # A save from a callback (train()'s own thread) works.
        saved_inside.append(algorithm.save_to_path(tmp_path / "from-callback"))
        inside.set()
        assert release.wait(30)

    algo = _config().callbacks(on_train_result=on_train_result).build_algo()
    try:
        errors: list[BaseException] = []

        def run() -> None:
            try:
                algo.train()
            except BaseException as e:
                errors.append(e)

        worker = threading.Thread(target=run)
        worker.start()
        assert inside.wait(60)
        start = time.perf_counter()
        with pytest.raises(AlgorithmBusyError) as info:
            algo.train()
        assert "train() while another thread runs this PPO's train(): one at a time" in str(
            info.value
        )
        with pytest.raises(AlgorithmBusyError, match=r"save_to_path\(.*\) while another thread"):
            algo.save_to_path(tmp_path / "from-main")
        assert time.perf_counter() - start < 1.0  # refused at once, no waiting
        assert not (tmp_path / "from-main").exists()
        release.set()
        worker.join(60)
        assert errors == [] and algo.iteration == 1
        assert saved_inside == [str(tmp_path / "from-callback")]  # the first iteration's
        assert (
            ckpt.load_metadata(tmp_path / "from-callback")[0]["counters"]["training_iteration"] == 1
        )
        # Once it is done, this thread trains and saves.
        assert algo.train()["training_iteration"] == 2
        algo.save_to_path(tmp_path / "from-main")
    finally:
        release.set()
        assert algo in algorithm._LIVE  # stopped at interpreter exit unless stopped before
        algo.stop()
    assert algo not in algorithm._LIVE  # let go of at stop()


def test_stop_lets_go_of_an_algorithm_under_the_live_set_lock():
    """The exit handler copies the set of live algorithms under its lock; a stop() in another
    thread meanwhile waits, rather than changing the set while it is read."""
    algo = algorithm.Algorithm.__new__(algorithm.Algorithm)
    algo._runners = algo._env = None
    with algorithm._LIVE_LOCK:
        algorithm._LIVE.add(algo)
        stopping = threading.Thread(target=algo.stop)
        stopping.start()
        stopping.join(0.2)
        assert stopping.is_alive() and algo in algorithm._LIVE
    stopping.join(10)
    assert not stopping.is_alive() and algo not in algorithm._LIVE
