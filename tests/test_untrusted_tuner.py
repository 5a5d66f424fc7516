"""Experiment directories and tune files from someone else: ``Tuner.restore`` and
``rljax tune --resume`` read only the experiment's own files, with bounds, and change nothing
before every file is checked; tune files and search spaces are counted before any variant is
made.

One table of crafted inputs. Each row makes one (a copy of a good interrupted experiment with one
thing changed, a tune file or a search space), uses it as a user would (``Tuner.restore(...)
.fit()``, ``rljax tune --config FILE [--resume]`` or ``tune.Tuner(...)``), and must raise (or
exit with) the named error with the named words within 2 seconds, compile nothing (counted
through ``jax.monitoring``), allocate no large array (the process's peak memory stays put),
run no trial, show no secret, and change no file: neither in the experiment nor in the other
run or the secret file its links lead to.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from refusal_cost import measured

from rljax import tune
from rljax.tune import experiment_state as es
from rljax.utils.errors import ConfigError

SECRET = "rljax-tuner-secret-value-5d1e"
CALLS: list[tuple[int, int]] = []


class Interrupted(BaseException):
    """Stands for a Ctrl-C: nothing in fit() catches it."""


def trainable(config):
    """Two steps, a checkpoint at each; ``a=3`` raises at its first step, ``a=2`` is
    interrupted at its second while ``config["interrupt"]`` is set."""
    checkpoint = tune.get_checkpoint()
    start = int(Path(checkpoint.path, "step").read_text()) if checkpoint else 0
    for step in range(start + 1, 3):
        CALLS.append((config["a"], step))
        if config["a"] == 3:
            raise ValueError("trial a=3 fails at its first step")
        if config["a"] == 2 and step == 2 and INTERRUPT:
            raise Interrupted
        src = SOURCES / f"{config['a']}_{step}_{time.monotonic_ns()}"
        src.mkdir(parents=True)
        (src / "step").write_text(str(step))
        tune.report({"score": config["a"] * step}, checkpoint=src)


INTERRUPT = True
SOURCES = Path()


def _experiment(root: Path, name: str) -> Path:
    """An interrupted experiment: trial 0 TERMINATED (two results, two checkpoints), trial 1
    ERROR (error.txt), trial 2 RUNNING (one result, checkpoint_000001)."""
    tuner = tune.Tuner(
        trainable,
        param_space={"a": tune.grid_search([1, 3, 2])},
        run_config=tune.RunConfig(name=name, storage_path=str(root), verbose=0),
    )
    with pytest.raises(Interrupted):
        tuner.fit()
    return root / name


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    global SOURCES, INTERRUPT
    root = tmp_path_factory.mktemp("untrusted-tuner")
    SOURCES = root / "sources"
    # Set again: pytest-xdist may interleave another module's tests, which tears this fixture
    # down and makes it anew in the same process.
    INTERRUPT = True
    good = _experiment(root, "good")
    other = _experiment(root, "other")  # another user's run, which links may lead to
    secret = root / "secret.txt"
    secret.write_text(SECRET + "\n")
    os.environ["RLJAX_TEST_SECRET"] = SECRET
    statuses = [t["status"] for t in es.ExperimentState.load(good).trials]
    assert statuses == [es.TERMINATED, es.ERROR, es.RUNNING]
    INTERRUPT = False
    yield {"root": root, "good": good, "other": other, "secret": secret}
    os.environ.pop("RLJAX_TEST_SECRET", None)


# ---------------------------------------------------------------------- crafting helpers
def _copy(w, name: str) -> Path:
    dst = w["root"] / "crafted" / name
    shutil.copytree(w["good"], dst, symlinks=True)
    return dst


def _trial_dir(path: Path, index: int) -> Path:
    return path / es.ExperimentState.load(path).trials[index]["dir"]


def _other_trial_dir(w, index: int) -> Path:
    state = json.loads((w["other"] / es.STATE_FILE).read_text())
    return w["other"] / state["trials"][index]["dir"]


def _trial_link(index: int) -> Callable:
    """Trial ``index``'s directory replaced by a link to the other run's."""

    def make(w, name):
        path = _copy(w, name)
        trial = path / json.loads((path / es.STATE_FILE).read_text())["trials"][index]["dir"]
        shutil.rmtree(trial)
        os.symlink(_other_trial_dir(w, index), trial)
        return path

    return make


def _trial_file(index: int, filename: str, kind: str) -> Callable:
    """Trial ``index``'s ``filename`` replaced: a link to the secret, to /dev/zero, to another
    run's file, a FIFO, a sparse file of 1 GiB, or text given as ``kind`` itself."""

    def make(w, name):
        path = _copy(w, name)
        target = _trial_dir(path, index) / filename
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        if kind == "secret":
            os.symlink(w["secret"], target)
        elif kind == "zero":
            os.symlink("/dev/zero", target)
        elif kind == "other":
            os.symlink(_other_trial_dir(w, index) / filename, target)
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "sparse":
            with open(target, "wb") as f:
                f.truncate(1 << 30)
        else:
            target.write_text(kind)
        return path

    return make


def _edit_state(fn: Callable[[dict], None]) -> Callable:
    def make(w, name):
        path = _copy(w, name)
        data = json.loads((path / es.STATE_FILE).read_text())
        fn(data)
        (path / es.STATE_FILE).write_text(json.dumps(data))
        return path

    return make


def _many_trials_two_sharing(data: dict) -> None:
    n = 20_000  # one pass: about 0.2 s; the quadratic check took 7 s here
    data["trials"] = [{"trial_id": f"t{i}", "dir": f"d{i}", "status": "PENDING"} for i in range(n)]
    data["trials"][-1]["dir"] = "d0"
    data["variants"] = [{"a": 1}] * n


def _trial_dir_is_a_file(w, name):
    path = _copy(w, name)
    trial = _trial_dir(path, 2)
    shutil.rmtree(trial)
    trial.write_text("not a directory")
    return path


def _state_link(w, name):
    path = _copy(w, name)
    outside = w["root"] / "crafted" / f"{name}-state.json"
    (path / es.STATE_FILE).rename(outside)
    os.symlink(outside, path / es.STATE_FILE)
    return path


def _state_text(text: str) -> Callable:
    def make(w, name):
        path = _copy(w, name)
        (path / es.STATE_FILE).write_text(text)
        return path

    return make


DEEP = "[" * 200_000 + "]" * 200_000
GOOD_LINE = json.dumps({"score": 1, "training_iteration": 1})


def _tune_file(text: str) -> Callable:
    def make(w, name):
        path = w["root"] / "crafted" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text.replace("STORAGE", str(w["root"] / "crafted" / f"{name}-runs")))
        return path

    return make


TUNE_BASE = """\
algo: PPO
param_space:
  env: CartPole-v1
  num_envs_per_env_runner: 2
  rollout_fragment_length: 16
  train_batch_size_per_learner: 32
  minibatch_size: 32
  num_epochs: 1
run_config:
  name: resumed
  storage_path: STORAGE
  stop: {training_iteration: 1}
  verbose: 0
"""
GRID_1000 = "[" + ", ".join(str(i) for i in range(1000)) + "]"  # three of them: 16 KB
THREE_GRIDS = TUNE_BASE.replace(
    "  num_epochs: 1\n",
    "  num_epochs: 1\n"
    f"  lr: {{grid_search: {GRID_1000}}}\n"
    f"  gamma: {{grid_search: {GRID_1000}}}\n"
    f"  entropy_coeff: {{grid_search: {GRID_1000}}}\n",
)
BILLION_SAMPLES = TUNE_BASE.replace(
    "  num_epochs: 1\n", "  num_epochs: 1\n  lr: {uniform: [0.0001, 0.001]}\n"
) + ("tune_config: {num_samples: 1000000000}\n")


def _resume_experiment(link: bool) -> Callable:
    """A tune file and its interrupted experiment (state written, no trial trained) whose
    RUNNING trial's directory is a link to the other run's trial (``link``) or holds a
    result.json line nested 200,000 deep."""

    def make(w, name):
        from rljax.tune.experiment_file import read_experiment_file, tuner_from_data

        grid = "num_epochs: 1\n  lr: {grid_search: [0.001, 0.0003]}"
        path = _tune_file(TUNE_BASE.replace("num_epochs: 1", grid))(w, name)
        tuner = tuner_from_data(read_experiment_file(path))
        experiment = tuner._experiment_path()
        experiment.mkdir(parents=True)
        state = tuner._new_state(experiment)
        state.set_status(0, es.RUNNING)
        trial = experiment / state.trials[0]["dir"]
        if link:
            os.symlink(_other_trial_dir(w, 2), trial)
        else:
            trial.mkdir()
            (trial / "result.json").write_text(DEEP + "\n")
        return path

    return make


RESTORE, RESUME, TUNE_FILE, PYTHON = "restore", "rljax tune --resume", "rljax tune", "Tuner(...)"
LINKED = ["is a symbolic link", "trial directories must be plain directories"]

CASES: list[tuple[str, Callable, str, type[Exception], list[str]]] = [
    # ------------------------------------------------ trial directories that are not the run's
    (
        "a running trial's directory links to another run",
        _trial_link(2),
        RESTORE,
        ConfigError,
        LINKED,
    ),
    (
        "a finished trial's directory links to another run",
        _trial_link(0),
        RESTORE,
        ConfigError,
        LINKED,
    ),
    (
        "an errored trial's directory links to another run",
        _trial_link(1),
        RESTORE,
        ConfigError,
        LINKED,
    ),
    (
        "a trial directory is a file",
        _trial_dir_is_a_file,
        RESTORE,
        ConfigError,
        ["is not a directory"],
    ),
    (
        "a checkpoint directory links to another run's",
        _trial_file(2, "checkpoint_000001", "other"),
        RESTORE,
        ConfigError,
        ["checkpoint_000001", "is a symbolic link"],
    ),
    (
        "the state names a directory outside the experiment",
        _edit_state(lambda d: d["trials"][2].update(dir="../other")),
        RESTORE,
        ConfigError,
        ["trials[2]", "a directory name"],
    ),
    (
        # 20,000 trials, the last two in one directory: found in one pass, not 20,000
        "20,000 trials, two sharing a directory",
        _edit_state(_many_trials_two_sharing),
        RESTORE,
        ConfigError,
        ["several trials share the directory ['d0']"],
    ),
    (
        "the state names one directory for two trials",
        _edit_state(lambda d: d["trials"][2].update(dir=d["trials"][0]["dir"])),
        RESTORE,
        ConfigError,
        ["several trials share the directory"],
    ),
    (
        "experiment_state.json links outside the experiment",
        _state_link,
        RESTORE,
        ConfigError,
        ["experiment_state.json", "leads outside"],
    ),
    (
        "experiment_state.json nested 200,000 deep",
        _state_text(DEEP),
        RESTORE,
        ConfigError,
        ["experiment_state.json", "nested deeper than 64"],
    ),
    # ------------------------------------------------ error.txt
    (
        "error.txt links to a secret",
        _trial_file(1, "error.txt", "secret"),
        RESTORE,
        ConfigError,
        ["error.txt", "leads outside its trial directory"],
    ),
    (
        "error.txt links to /dev/zero",
        _trial_file(1, "error.txt", "zero"),
        RESTORE,
        ConfigError,
        ["error.txt", "leads outside"],
    ),
    (
        "error.txt is a FIFO",
        _trial_file(1, "error.txt", "fifo"),
        RESTORE,
        ConfigError,
        ["error.txt", "not a regular file"],
    ),
    (
        "error.txt is 1 GiB",
        _trial_file(1, "error.txt", "sparse"),
        RESTORE,
        ConfigError,
        ["error.txt", "1,073,741,824 bytes", "at most 1,048,576"],
    ),
    # ------------------------------------------------ result.json
    (
        "a result.json line nested 200,000 deep",
        _trial_file(0, "result.json", DEEP + "\n"),
        RESTORE,
        ConfigError,
        ["result.json", "nested deeper than 64"],
    ),
    (
        "a running trial's result.json nested 200,000 deep",
        _trial_file(2, "result.json", GOOD_LINE + "\n" + DEEP + "\n" + GOOD_LINE + "\n"),
        RESTORE,
        ConfigError,
        ["result.json", "nested deeper than 64"],
    ),
    (
        "result.json is 1 GiB",
        _trial_file(0, "result.json", "sparse"),
        RESTORE,
        ConfigError,
        ["result.json", "1,073,741,824 bytes", "at most 268,435,456"],
    ),
    (
        "result.json links to a secret",
        _trial_file(0, "result.json", "secret"),
        RESTORE,
        ConfigError,
        ["result.json", "leads outside its trial directory"],
    ),
    (
        "result.json links to another run's",
        _trial_file(2, "result.json", "other"),
        RESTORE,
        ConfigError,
        ["result.json", "leads outside"],
    ),
    (
        "result.json is a FIFO",
        _trial_file(2, "result.json", "fifo"),
        RESTORE,
        ConfigError,
        ["result.json", "not a regular file"],
    ),
    (
        "result.json holds a line of text",
        _trial_file(0, "result.json", SECRET + "\n" + GOOD_LINE + "\n"),
        RESTORE,
        ConfigError,
        ["result.json", "line 1 is not JSON"],
    ),
    (
        "result.json holds a list",
        _trial_file(0, "result.json", "[1, 2]\n" + GOOD_LINE + "\n"),
        RESTORE,
        ConfigError,
        ["result.json", "line 1 is not a JSON object"],
    ),
    # ------------------------------------------------ rljax tune --resume
    (
        "--resume into a trial directory that links to another run",
        _resume_experiment(link=True),
        RESUME,
        ConfigError,
        LINKED,
    ),
    (
        "--resume over a result.json nested 200,000 deep",
        _resume_experiment(link=False),
        RESUME,
        ConfigError,
        ["result.json", "nested deeper than 64"],
    ),
    # ------------------------------------------------ variants counted before they are made
    (
        "a 16 KB tune file of three 1,000-value grids",
        _tune_file(THREE_GRIDS),
        TUNE_FILE,
        ConfigError,
        ["1,000,000,000 trials", "at most 100,000", "param_space['lr']: 1,000"],
    ),
    (
        "a tune file with num_samples 10^9",
        _tune_file(BILLION_SAMPLES),
        TUNE_FILE,
        ConfigError,
        ["1,000,000,000 trials", "num_samples=1,000,000,000", "at most 100,000"],
    ),
    (
        "a param_space of three 1,000-value grids",
        lambda w, n: {k: tune.grid_search(list(range(1000))) for k in ("a", "b", "c")},
        PYTHON,
        ConfigError,
        ["1,000,000,000 trials", "param_space['c']: 1,000", "at most 100,000"],
    ),
    (
        "a grid of 1,000 values, each a grid of 1,000",
        lambda w, n: {"a": tune.grid_search([{"b": tune.grid_search(list(range(1000)))}] * 1000)},
        PYTHON,
        ConfigError,
        ["1,000,000 trials", "at most 100,000"],
    ),
    (
        "a choice of a 1,000 x 1,000 grid",
        lambda w, n: {
            "a": tune.choice(
                [
                    1,
                    {
                        "b": tune.grid_search(list(range(1000))),
                        "c": tune.grid_search(list(range(1000))),
                    },
                ]
            )
        },
        PYTHON,
        ConfigError,
        ["1,000,000 trials", "at most 100,000"],
    ),
    (
        "num_samples 10^9",
        lambda w, n: ({"a": tune.uniform(0, 1)}, 10**9),
        PYTHON,
        ConfigError,
        ["1,000,000,000 trials", "at most 100,000"],
    ),
]


def _fingerprint(*roots: Path) -> dict[str, object]:
    """Every entry under ``roots`` (links not followed): its kind, link target, size, and the
    hash of each regular file under 1 MiB."""
    found: dict[str, object] = {}
    for root in roots:
        if not os.path.lexists(root):
            continue
        if root.is_file() and not root.is_symlink():
            found[str(root)] = hashlib.sha256(root.read_bytes()).hexdigest()
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for entry in dirnames + filenames:
                p = Path(dirpath) / entry
                st = p.lstat()
                if p.is_symlink():
                    found[str(p)] = ("link", os.readlink(p))
                elif p.is_file():
                    small = st.st_size < (1 << 20)
                    digest = hashlib.sha256(p.read_bytes()).hexdigest() if small else None
                    found[str(p)] = ("file", st.st_size, digest)
                else:
                    found[str(p)] = ("other", st.st_mode)
    return found


def _use(kind: str, made) -> None:
    if kind == RESTORE:
        tune.Tuner.restore(made, trainable=trainable).fit()
    else:
        space, samples = made if isinstance(made, tuple) else (made, 1)
        tune.Tuner(
            trainable, param_space=space, tune_config=tune.TuneConfig(num_samples=samples)
        ).fit()


@pytest.mark.parametrize("name, make, kind, error, words", CASES, ids=[c[0] for c in CASES])
def test_a_crafted_experiment_or_space_is_refused_plainly_and_safely(
    world, capsys, name, make, kind, error, words
):
    made = make(world, "".join(c if c.isalnum() else "-" for c in name))
    watched = [world["root"] / "crafted", world["other"], world["secret"]]
    before = _fingerprint(*watched)
    CALLS.clear()
    capsys.readouterr()
    with measured() as cost:
        if kind in (RESUME, TUNE_FILE):  # the CLI reports the error and exits with 2
            from rljax.cli import main

            argv = ["tune", "--config", str(made)] + (["--resume"] if kind == RESUME else [])
            assert main(argv) == 2
            message = capsys.readouterr().err
            assert "rljax: error:" in message
        else:
            with pytest.raises(error) as info:
                _use(kind, made)
            message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert SECRET not in message and SECRET not in capsys.readouterr().out
    assert CALLS == [], f"{name}: a trial ran"
    cost.check(name)
    assert _fingerprint(*watched) == before, f"{name}: a file changed"


def test_at_least_twenty_five_crafted_inputs():
    assert len(CASES) >= 25


def test_the_untouched_experiment_restores_and_finishes(world):
    """The rows' base is a good experiment: its copy restores, runs the running trial on from
    its checkpoint, and keeps the finished and errored trials' files."""
    path = _copy(world, "untouched")
    CALLS.clear()
    grid = tune.Tuner.restore(path, trainable=trainable).fit()
    assert CALLS == [(2, 2)]
    assert [r.metrics.get("score") for r in grid] == [2, None, 4]
    assert isinstance(grid[1].error, es.TrialError)
    assert "ValueError: trial a=3 fails at its first step" in str(grid[1].error)
    statuses = [t["status"] for t in es.ExperimentState.load(path).trials]
    assert statuses == [es.TERMINATED, es.ERROR, es.TERMINATED]


def test_a_long_error_is_kept_short_enough_to_read_back(world, tmp_path):
    def fails(config):
        raise ValueError("x" * (4 << 20))

    grid = tune.Tuner(
        fails, run_config=tune.RunConfig(name="long", storage_path=str(tmp_path), verbose=0)
    ).fit()
    written = (Path(grid[0].path) / "error.txt").stat().st_size
    assert 100_000 < written <= es.MAX_ERROR_BYTES
    restored = tune.Tuner.restore(tmp_path / "long", trainable=fails).fit()
    assert str(restored[0].error).startswith("ValueError: xxx")


def test_files_a_restore_writes_replace_links_and_never_write_through_them(world):
    """A running trial's params.json, progress.csv and result.json links (kept inside the
    trial directory, so allowed to be read) are replaced by the trial's own files; the files
    they led to are not changed."""
    path = _copy(world, "written-links")
    trial = _trial_dir(path, 2)
    decoys = {}
    for filename in ("params.json", "progress.csv", "result.json"):
        decoy = trial / f"decoy-{filename}"
        (trial / filename).rename(decoy)
        os.symlink(decoy.name, trial / filename)
        decoys[decoy] = decoy.read_bytes()
    grid = tune.Tuner.restore(path, trainable=trainable).fit()
    assert grid[2].error is None and [h["score"] for h in grid[2].history] == [2, 4]
    for filename in ("params.json", "progress.csv", "result.json"):
        assert not (trial / filename).is_symlink() and (trial / filename).is_file()
    assert {d: d.read_bytes() for d in decoys} == decoys


def test_a_refused_trial_directory_leaves_no_listing_open(tmp_path):
    """check_trial_dir stops at the first linked checkpoint directory; the directory listing
    it was reading is closed then, not left to the garbage collector."""
    trial = tmp_path / "trial"
    trial.mkdir()
    (tmp_path / "elsewhere").mkdir()
    for i in range(1, 51):  # every entry a link: the first one read stops the loop
        os.symlink(tmp_path / "elsewhere", trial / f"checkpoint_{i:06d}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            es.check_trial_dir(tmp_path, trial)
        except ConfigError as e:
            assert "is a symbolic link" in str(e)
        else:
            raise AssertionError("a linked checkpoint directory was not refused")
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
