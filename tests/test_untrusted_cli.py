"""The command line with input from someone else, or used carelessly: ``rljax port``'s script,
env settings in config files, checkpoints and saved experiments, and outputs that exist.

One table of command lines (``rljax.cli.main`` in this process). Each row crafts its input
in a fresh directory and must exit with status 2 and the named words on stderr within 2
seconds, compile nothing (counted through ``jax.monitoring``), keep the process's peak memory,
change no file in the directory (names, bytes and modes), import no GUI library and quote none
of a file's content. The tests after it cover what a row cannot: the restore of a saved
experiment, a checkpoint through ``rljax evaluate``, and what ``--force`` writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import jax
import pytest

from rljax.algorithms.algorithm_config import check_loaded_env_settings
from rljax.algorithms.ppo import PPOConfig
from rljax.cli import main
from rljax.utils import memory
from rljax.utils.errors import ConfigError
from rljax.utils.port import MAX_SCRIPT_BYTES, port_source, write_script

COMPILES = {"n": 0}


def _count(event: str, duration_secs: float, **kwargs: str | int) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES["n"] += 1


jax.monitoring.register_event_duration_secs_listener(_count)

SECRET = "rljax-cli-secret-value-5e1d"
GUI_MODULES = ("pygame", "pyglet", "tkinter")


@contextlib.contextmanager
def _no_window():
    """Fails when the block imports a GUI library, or opens a pygame window where another test
    in this process imported pygame already."""
    already = {m for m in GUI_MODULES if m in sys.modules}
    opened: list[object] = []
    pygame = sys.modules.get("pygame")
    set_mode = pygame.display.set_mode if pygame is not None else None
    if pygame is not None:
        pygame.display.set_mode = lambda *a, **k: opened.append(a)
    try:
        yield
    finally:
        if pygame is not None:
            pygame.display.set_mode = set_mode
    imported = {m for m in GUI_MODULES if m in sys.modules} - already
    assert not imported, f"a GUI library was imported: {sorted(imported)}"
    assert not opened, "a pygame window was opened"


def _snapshot(root: Path) -> dict:
    """Every entry under ``root``: its type, mode and (for files) size and bytes (of the first
    MiB: a crafted sparse file is large)."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = os.lstat(path)
        data = None
        if stat.S_ISREG(st.st_mode):
            with open(path, "rb") as f:
                data = (st.st_size, f.read(1 << 20))
        out[str(path.relative_to(root))] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), data)
    return out


# ---------------------------------------------------------------------- crafting helpers
def _script(text: str | bytes) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        path = d / "script.py"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return ["port", str(path)]

    return make


def _special_script(kind: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        path = d / "script.py"
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dev-zero":
            return ["port", "/dev/zero"]
        elif kind == "link-to-dev-zero":
            os.symlink("/dev/zero", path)
        elif kind == "sparse":
            with open(path, "wb") as f:
                f.truncate(1 << 30)  # 1 GiB, no disk used
        return ["port", str(path)]

    return make


def _port_output(kind: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        script = d / "script.py"
        script.write_text("from ray.rllib.algorithms.ppo import PPOConfig\n")
        out = d / "ported.py"
        if kind == "dir":
            out.mkdir()
        elif kind == "exists":
            out.write_text(f"# my own edits {SECRET}\n")
            out.chmod(0o755)
        elif kind == "fifo":
            os.mkfifo(out)
        return ["port", str(script), "-o", str(out)]

    return make


def _logdir(*names: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        logs = d / "logs"
        logs.mkdir()
        for name in names:
            (logs / name).write_text(f"{SECRET}\n")
        return ["train", "--env", "CartPole-v1", "--logdir", str(logs), "--stop-iters", "1"]

    return make


def _train_config(settings: dict, *flags: str) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        path = d / "config.yaml"
        path.write_text(json.dumps(settings))  # JSON is YAML
        return ["train", "--config", str(path), *flags, "--stop-iters", "1", "--no-progress"]

    return make


WINDOW = {"render_mode": "human"}

CASES = [
    # ---- rljax port: the script
    ("script is a FIFO", _special_script("fifo"), ["script.py", "not a regular file"]),
    ("script is /dev/zero", _special_script("dev-zero"), ["/dev/zero", "never read"]),
    ("script links to /dev/zero", _special_script("link-to-dev-zero"), ["never read"]),
    ("script of 1 GiB", _special_script("sparse"), [f"at most {MAX_SCRIPT_BYTES:,}"]),
    (
        "script is binary",
        _script(SECRET.encode() + b"\n\xff\xfe\x00\x81" * 100),
        ["script.py: is not UTF-8 text", "offset"],
    ),
    (
        "script holds a NUL character",
        _script(f"x = '{SECRET}'\0\n"),
        ["script.py", "null bytes"],
    ),
    (
        "script chains 1+1+... 200,000 times",
        _script("x = " + "1+" * 200_000 + "1\n"),
        ["script.py", "deeper than Python's parser allows"],
    ),
    (
        "script is not Python",
        _script(f"def {SECRET.replace('-', '_')}(:\n"),
        ["is not valid Python"],
    ),
    # ---- rljax port: the output
    ("-o is a directory", _port_output("dir"), ["ported.py is a directory"]),
    (
        "-o exists",
        _port_output("exists"),
        ["ported.py exists", "pass --force", "choose another path"],
    ),
    ("-o is a FIFO", _port_output("fifo"), ["ported.py is not a regular file"]),
    # ---- rljax train: an earlier run's logs
    (
        "--logdir holds result.json",
        _logdir("result.json"),
        ["holds an earlier run's result.json", "pass --force", "choose another path"],
    ),
    (
        "--logdir holds progress.csv and the curve",
        _logdir("progress.csv", "learning_curve.png"),
        ["progress.csv, learning_curve.png", "pass --force"],
    ),
    # ---- env settings from a config file, whatever names the env
    (
        "config file's env_config opens a window, env from --env",
        _train_config({"env_config": WINDOW}, "--env", "CartPole-v1"),
        ["env_config render_mode='human' in a loaded config", "set other modes in code"],
    ),
    (
        "config file's evaluation_config opens a window",
        _train_config({"evaluation_config": {"env_config": WINDOW}}, "--env", "CartPole-v1"),
        ["evaluation_config.env_config render_mode='human'"],
    ),
    (
        "config file's env_config names a path, env from --env",
        _train_config({"env_config": {"xml_file": f"../{SECRET}.xml"}}, "--env", "Ant-v4"),
        ["env_config 'xml_file' is a path in a loaded config"],
    ),
    (
        "config file's evaluation env_config names a path, env in the file",
        _train_config(
            {"env": "CartPole-v1", "evaluation_config": {"env_config": {"map": "/etc/passwd"}}}
        ),
        ["evaluation_config.env_config 'map' is a path"],
    ),
]


@pytest.mark.parametrize("name, make, words", CASES, ids=[c[0] for c in CASES])
def test_a_careless_or_crafted_command_line_is_refused_plainly(name, make, words, tmp_path, capsys):
    argv = make(tmp_path)
    before = _snapshot(tmp_path)
    compiles = COMPILES["n"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    capsys.readouterr()
    start = time.perf_counter()
    with _no_window():
        code = main(argv)
    elapsed = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert code == 2, (name, err)
    assert err.startswith("rljax: error: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, (word, err)
    assert SECRET not in err and out == ""
    assert elapsed < 2.0, f"{name}: {elapsed:.2f} s"
    assert COMPILES["n"] == compiles, f"{name}: compiled before failing"
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    assert grown < 300_000, f"{name}: peak memory grew by {grown} KiB"
    assert _snapshot(tmp_path) == before, f"{name}: a file changed"


# ---------------------------------------------------------------------- port: what it writes
def test_port_writes_a_new_file_with_the_umask_mode_and_keeps_a_forced_files_mode(tmp_path, capsys):
    script = tmp_path / "script.py"
    script.write_text("from ray.rllib.algorithms.ppo import PPOConfig\n")
    out = tmp_path / "ported.py"
    previous = os.umask(0o027)
    try:
        assert main(["port", str(script), "-o", str(out)]) == 0
    finally:
        os.umask(previous)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # 0o666 less the umask, as open() makes
    assert out.read_text() == "from rljax.algorithms.ppo import PPOConfig\n"
    out.write_text("# edited\n")
    out.chmod(0o751)
    assert main(["port", str(script), "-o", str(out)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert out.read_text() == "# edited\n"
    assert main(["port", str(script), "-o", str(out), "--force"]) == 0
    assert out.read_text() == "from rljax.algorithms.ppo import PPOConfig\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ported.py", "script.py"]  # no temp
    with pytest.raises(ConfigError, match="exists; pass --force"):
        write_script(out, "x = 1\n")


def test_port_time_is_linear_in_the_script():
    """20,000 names of Ray's that rljax lacks, each noted: once quadratic (minutes)."""
    source = "import ray\n" + "ray.remote_thing()\n" * 20_000
    start = time.perf_counter()
    ported = port_source(source)
    elapsed = time.perf_counter() - start
    assert len(ported.notes) == 20_000
    assert ported.notes[-1] == "line 20001: `ray.remote_thing` has no rljax counterpart"
    assert elapsed < 10.0, f"{elapsed:.2f} s"


# ---------------------------------------------------------------------- train: --force
def test_train_force_replaces_an_earlier_runs_logs_keeping_their_modes(tmp_path):
    from rljax.cli import check_train_flags, make_parser
    from rljax.utils.result_loggers import make_loggers

    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("result.json", "progress.csv"):
        (logs / name).write_text("an earlier run\n")
        (logs / name).chmod(0o640)
    argv = ["train", "--env", "CartPole-v1", "--logdir", str(logs)]
    with pytest.raises(ConfigError, match="pass --force"):
        check_train_flags(make_parser().parse_args(argv))
    check_train_flags(make_parser().parse_args([*argv, "--force"]))
    sinks = make_loggers(logs)
    for sink in sinks:
        sink.log({"training_iteration": 1, "num_env_steps_sampled_lifetime": 8, "x": 2.5})
        sink.close()
    assert json.loads((logs / "result.json").read_text())["x"] == 2.5
    assert (logs / "progress.csv").read_text().splitlines()[0].startswith("training_iteration")
    for name in ("result.json", "progress.csv"):
        assert stat.S_IMODE((logs / name).stat().st_mode) == 0o640


# ---------------------------------------------------------------------- one env check
class _CodeEnv(gym.Wrapper):
    def __init__(self, config=None):
        super().__init__(gym.make("CartPole-v1"))


@pytest.mark.parametrize(
    "settings, words",
    [
        ({"env_config": WINDOW}, "env_config render_mode='human'"),
        ({"env_config": {"data": "./x"}}, "env_config 'data' is a path"),
        (
            {"evaluation_config": {"env_config": {"render_mode": "human_rgb"}}},
            "evaluation_config.env_config render_mode='human_rgb'",
        ),
    ],
)
@pytest.mark.parametrize("env_source", ["none", "id", "object", "code"])
def test_file_env_settings_are_checked_whatever_builds_the_env(settings, words, env_source):
    settings = dict(settings)
    kwargs: dict = {}
    if env_source == "id":
        settings["env"] = "CartPole-v1"
    elif env_source == "object":
        kwargs["env"] = _CodeEnv
    elif env_source == "code":
        settings["env"] = {"import": f"{__name__}:_CodeEnv"}
        kwargs["allow_imports"] = [__name__]
    with pytest.raises(ConfigError, match="in a loaded config") as info:
        PPOConfig.from_dict(settings, **kwargs)
    assert words in str(info.value)
    with pytest.raises(ConfigError, match="trial 3: "):
        check_loaded_env_settings(settings, "trial 3: ")
    fine = {"env_config": {"render_mode": "rgb_array", "size": 4}}
    check_loaded_env_settings({**fine, "evaluation_config": fine})
    assert PPOConfig.from_dict(fine, **kwargs).env_config == fine["env_config"]


# ---------------------------------------------------------------------- a saved experiment
def _experiment(root: Path, variant: dict) -> Path:
    from rljax.tune import experiment_state as es
    from rljax.tune.tune_config import RunConfig, TuneConfig

    base = PPOConfig().environment("CartPole-v1").to_dict()
    root.mkdir()
    es.ExperimentState(
        root=root,
        trainable="PPO",
        kind="algorithm",
        base_config=json.loads(json.dumps(base)),
        variants=[variant],
        variants_exact=True,
        searched=[[next(iter(variant))]],
        tune_config=es.tune_config_data(TuneConfig()),
        run_config=es.run_config_data(RunConfig(stop={"training_iteration": 1})),
        trials=[{"trial_id": "t_00000", "dir": "PPO_t_00000", "status": es.PENDING}],
    ).save()
    return root


@pytest.mark.parametrize(
    "key, words",
    [
        ("env_config", "env_config render_mode='human'"),
        ("evaluation_config", "evaluation_config.env_config render_mode='human'"),
    ],
)
def test_tuner_restore_checks_the_saved_variants_env_settings(tmp_path, key, words):
    from rljax.tune import Tuner

    def variant(mode: str) -> dict:
        env_config = {"render_mode": mode}
        return {key: env_config if key == "env_config" else {"env_config": env_config}}

    good = _experiment(tmp_path / "good", variant("rgb_array"))
    restored = Tuner.restore(good, trainable="PPO")
    assert restored._algo_configs is not None
    config = restored._algo_configs[0]
    env_config = (
        config.env_config if key == "env_config" else (config.evaluation_config or {})["env_config"]
    )
    assert env_config == {"render_mode": "rgb_array"}
    crafted = _experiment(tmp_path / "crafted", variant("human"))
    compiles = COMPILES["n"]
    start = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        Tuner.restore(crafted, trainable="PPO")
    assert time.perf_counter() - start < 2.0
    message = str(info.value)
    assert "experiment_state.json: trial 0: " in message and words in message, message
    assert COMPILES["n"] == compiles
    assert not (crafted / "PPO_t_00000").exists()


# ---------------------------------------------------------------------- a checkpoint
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-checkpoint")
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=32, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
        .build_algo()
    )
    try:
        path = Path(algo.save_to_path(root / "good"))
    finally:
        algo.stop()
    return path


def _with_evaluation_config(checkpoint: Path, dst: Path, overrides: dict) -> Path:
    import shutil

    shutil.copytree(checkpoint, dst, symlinks=True)
    meta_file = dst / (dst / "LATEST").read_text() / "rljax_checkpoint.json"
    meta = json.loads(meta_file.read_text())
    meta["config"]["evaluation_config"] = overrides
    meta_file.write_text(json.dumps(meta))
    return dst


@pytest.mark.slow  # the checkpoint's build, ~10 s; each refusal takes milliseconds
@pytest.mark.parametrize(
    "overrides, words",
    [
        (
            {"env_config": WINDOW},
            ["rljax_checkpoint.json: config: evaluation_config.env_config render_mode='human'"],
        ),
        (
            {"num_envs_per_env_runner": 100_000_000},
            ["would need about", "evaluation_config num_envs_per_env_runner=100000000"],
        ),
    ],
    ids=["window", "evaluation envs beyond memory"],
)
def test_evaluate_checks_a_checkpoints_evaluation_config(
    checkpoint, tmp_path, capsys, overrides, words
):
    crafted = _with_evaluation_config(checkpoint, tmp_path / "crafted", overrides)
    compiles = COMPILES["n"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with _no_window():
        assert main(["evaluate", str(crafted), "--episodes", "1"]) == 2
    elapsed = time.perf_counter() - start
    err = capsys.readouterr().err
    for word in words:
        assert word in err, (word, err)
    assert elapsed < 2.0, f"{elapsed:.2f} s"
    assert COMPILES["n"] == compiles
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 300_000


def test_evaluation_env_copies_are_in_the_memory_estimate():
    obs = gym.spaces.Box(-1.0, 1.0, (4,))
    act = gym.spaces.Discrete(2)

    def evaluation_term(config: PPOConfig) -> tuple[str, int]:
        (term,) = [t for t in config.memory_terms(obs, act) if "evaluation env copies" in t[0]]
        return term

    per_env = memory.PER_ENV_BYTES + 2 * 16
    default = PPOConfig().environment("CartPole-v1")
    assert default.evaluation_num_envs == 8  # min(evaluation_duration=10, 8)
    assert evaluation_term(default)[1] == 8 * per_env
    overridden = PPOConfig().evaluation(evaluation_config={"num_envs_per_env_runner": 3000})
    assert overridden.evaluation_num_envs == 3000
    assert evaluation_term(overridden) == (
        "evaluation_config num_envs_per_env_runner=3000: 3,000 evaluation env copies",
        3000 * per_env,
    )
    runners = (
        PPOConfig().evaluation(evaluation_num_env_runners=4).env_runners(num_envs_per_env_runner=5)
    )
    assert runners.evaluation_num_envs == 20
    assert evaluation_term(runners)[0].startswith(
        "evaluation_num_env_runners=4 x num_envs_per_env_runner=5"
    )
    with pytest.raises(ConfigError, match="num_envs_per_env_runner'\\]=0 .*an int >= 1"):
        PPOConfig().evaluation(evaluation_config={"num_envs_per_env_runner": 0}).validate()
