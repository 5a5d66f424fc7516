import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rljax.cli import TrainProgressBar, main
from rljax.utils.errors import ConfigError

TUNED = Path(__file__).parents[1] / "rljax" / "tuned_examples" / "ppo_cartpole.yaml"


# The CLI's commands run in this process (main() with the argv a user types); the tests below
# that start ``rljax train`` in a process of its own (Ctrl-C, SIGKILL) test the script's entry.
@pytest.mark.slow
def test_train_to_reward_then_evaluate(tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    argv = ["train", "--config", str(TUNED), "--stop-reward", "450", "--checkpoint-dir", str(ckpt)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["stopped_by"] == "stop-reward" and summary["episode_return_mean"] >= 450
    assert "return=" in captured.err and "steps/s=" in captured.err  # the live progress bar
    # One throughput figure: the summary's is the bar's last one (compilation left out).
    shown = re.findall(r"\bsteps/s=([\d,]+)", captured.err)[-1]
    assert f"{summary['env_steps_per_s']:,.0f}" == shown
    assert (
        summary["env_steps_per_s"]
        > summary["num_env_steps_sampled_lifetime"] / summary["time_total_s"]
    )
    assert main(["evaluate", str(ckpt), "--episodes", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["episodes"] == 3 and out["episode_return_mean"] >= 400


def test_train_flags_override_the_file():
    # What the flags build; that a config file's run trains is test_train_to_reward_then_evaluate.
    from rljax.cli import build_config, make_parser

    argv = ["train", "--config", str(TUNED), "--env", "CartPole-v1"]
    argv += ["--num-envs-per-env-runner", "8", "--stop-iters", "1", "--seed", "3", "--no-progress"]
    config = build_config(make_parser().parse_args(argv))
    # The flags' values, over the file's 16 envs and seed 0; the file's other settings kept.
    assert (config.env, config.num_envs_per_env_runner, config.seed) == ("CartPole-v1", 8, 3)
    assert (config.train_batch_size_per_learner, config.num_epochs, config.lr) == (4000, 6, 3e-4)
    assert config.model_config.fcnet_hiddens == (64, 64)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["train", "--algo", "PPP", "--env", "CartPole-v1"],
            "unknown algorithm 'PPP'; did you mean 'PPO'?",
        ),
        (["train", "--env", "CartPol-v1"], "did you mean 'CartPole-v1'"),
        (["train", "--env", "CartPole-v1", "--num-learners", "-1"], "num_learners=-1"),
        (
            ["train", "--env", "CartPole-v1", "--vectorize-mode", "FAST"],
            "gym_env_vectorize_mode='FAST'",
        ),
        (["train", "--config", "/no/such.yaml"], "no such file"),
        (["evaluate", "/no/such/ckpt"], "not a checkpoint"),
    ],
)
def test_bad_input_exits_nonzero_with_a_clear_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_bad_yaml_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("env: CartPole-v1\nnum_sgd_iter: 3\n")
    assert main(["train", "--config", str(bad)]) == 2
    assert "num_epochs" in capsys.readouterr().err


@pytest.mark.parametrize(
    "algo, env", [("DQN", "CartPole-v1"), ("sac", "Pendulum-v1"), ("td3", "Pendulum-v1")]
)
@pytest.mark.slow
def test_off_policy_algorithms_train_and_evaluate_from_the_cli(tmp_path, capsys, algo, env):
    ckpt = tmp_path / "ckpt"
    code = main(
        [
            "train",
            "--algo",
            algo,
            "--env",
            env,
            "--stop-iters",
            "1",
            "--no-progress",
            "--checkpoint-dir",
            str(ckpt),
            "--seed",
            "0",
            # A small network (the defaults are 256 to 400 units wide, which this test does
            # not need: it checks training, saving and evaluating through the CLI).
            "--set",
            "model_config.fcnet_hiddens=[32]",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["training_iteration"] == 1 and summary["num_env_steps_sampled_lifetime"] > 0
    assert main(["evaluate", str(ckpt), "--episodes", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 2


@pytest.mark.slow
def test_multi_agent_dqn_config_file_trains_a_policy_per_agent(capsys):
    tuned = TUNED.parent / "dqn_multi_agent_cartpole.yaml"
    assert main(["train", "--config", str(tuned), "--stop-iters", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["module_episode_returns_mean"]) == {"p0", "p1"}
    assert summary["num_env_steps_sampled_lifetime"] > 900


@pytest.mark.slow
def test_multi_agent_config_file_trains_checkpoints_and_evaluates(tmp_path, capsys):
    tuned = TUNED.parent / "ppo_multi_agent_cartpole.yaml"
    ckpt = tmp_path / "ckpt"
    argv = ["train", "--config", str(tuned), "--stop-iters", "2", "--checkpoint-dir", str(ckpt)]
    argv += ["--checkpoint-freq", "1", "--checkpoint-num-to-keep", "2"]
    # A smaller batch than the file's 4,000 x 6 epochs: what is checked is the file's multi-agent
    # setup, the checkpoints and the per-policy figures, not learning.
    argv += ["--set", "train_batch_size_per_learner=512", "--set", "num_epochs=1"]
    assert main(argv) == 0
    # Saved after iterations 1 and 2, and not again at the end (iteration 2 is saved).
    assert sorted(p.name for p in ckpt.iterdir() if p.name.startswith("v-")) == [
        "v-000001",
        "v-000002",
    ]
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    returns = summary["module_episode_returns_mean"]
    assert set(returns) == {"p0", "p1"}
    assert summary["episode_return_mean"] == pytest.approx(sum(returns.values()), rel=1e-5)
    assert "p0=" in captured.err and "p1=" in captured.err  # per-policy returns in the bar
    assert main(["evaluate", str(ckpt), "--episodes", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["episodes"] == 2 and set(out["module_episode_returns_mean"]) == {"p0", "p1"}


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--stop-iters", "0"], "--stop-iters 0; use a positive number"),
        (["--stop-iters", "-2"], "--stop-iters -2; use a positive number"),
        (["--stop-timesteps", "0"], "--stop-timesteps 0; use a positive number"),
        (["--stop-reward", "nan"], "--stop-reward nan; use a finite number"),
        (["--stop-reward=-inf"], "--stop-reward -inf; use a finite number"),
        (
            ["--checkpoint-freq", "-1"],
            "--checkpoint-freq -1; use a positive number of iterations, or 0",
        ),
        (["--checkpoint-freq", "2"], "--checkpoint-freq 2 without --checkpoint-dir"),
        (["--checkpoint-num-to-keep", "0"], "--checkpoint-num-to-keep 0; use a positive number"),
        (["--wandb-project", "p"], "--wandb-project p without --logdir"),
        (["--logdir", "/proc/version"], "--logdir /proc/version: a file is there"),
    ],
)
def test_bad_train_flags_are_refused_before_anything_is_built(flags, message, capsys, monkeypatch):
    import rljax.cli

    def build_config(args):
        raise AssertionError("the flags must be checked before the config is built")

    monkeypatch.setattr(rljax.cli, "build_config", build_config)
    assert main(["train", "--env", "CartPole-v1", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rljax: error: {message}") and err.count("\n") == 1, err


def _checkpoint_dir_error(path, capsys, monkeypatch) -> str:
    import rljax.cli

    def build_config(args):
        raise AssertionError("--checkpoint-dir must be checked before the config is built")

    monkeypatch.setattr(rljax.cli, "build_config", build_config)
    assert main(["train", "--env", "CartPole-v1", "--checkpoint-dir", str(path)]) == 2
    return capsys.readouterr().err


def test_a_checkpoint_dir_that_is_a_file_is_refused_up_front(tmp_path, capsys, monkeypatch):
    (tmp_path / "f").write_text("x")
    err = _checkpoint_dir_error(tmp_path / "f", capsys, monkeypatch)
    assert f"--checkpoint-dir {tmp_path / 'f'} is a file" in err
    err = _checkpoint_dir_error(tmp_path / "f" / "ckpt", capsys, monkeypatch)
    assert f"cannot be created: {tmp_path / 'f'} is a file" in err


def test_a_checkpoint_dir_with_other_files_is_refused(tmp_path, capsys, monkeypatch):
    # A save removes old versions from the directory; mixing checkpoints with other files there
    # (--checkpoint-dir . in a project, or the home directory) is refused.
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "LATEST").write_text("v-000001")
    err = _checkpoint_dir_error(tmp_path, capsys, monkeypatch)
    assert "holds files that are not part of an rljax checkpoint (notes.txt)" in err


def _iteration(i, steps, seconds, lifetime, ret):
    """A fake ``train()`` result: ``steps`` env steps sampled in ``seconds``."""
    return {
        "training_iteration": i,
        "time_this_iter_s": seconds,
        "num_env_steps_sampled_lifetime": lifetime,
        "num_env_steps_sampled_per_second": steps / seconds,
        "env_runners": {
            "episode_return_mean": ret,
            "num_env_steps_sampled": steps,
            "num_env_steps_sampled_per_second": steps / seconds,
        },
    }


def _last_line(out):
    return out.getvalue().replace("\n", "\r").rstrip("\r").rsplit("\r", 1)[-1]


@pytest.mark.parametrize("total", [None, 20_000])
def test_the_progress_bar_shows_one_steps_per_second_figure_without_the_first_iteration(total):
    out = io.StringIO()
    bar = TrainProgressBar(total, file=out)
    bar._bar.mininterval = 0  # tqdm draws on every change, as when iterations take >= 0.1 s
    # Iteration 1 compiles: 4,000 env steps in 8 s. Its rate would count the compilation.
    bar.update(_iteration(1, 4000, 8.0, 4000, 20.0))
    line = _last_line(out)
    assert "iter=1 return=20.0" in line and "/s" not in line and bar.steps_per_second() is None
    # Then 4,000 in 0.1 s and 4,000 in 0.3 s: 8,000 / 0.4 s = 20,000 steps/s. The result dict's
    # figure of the last iteration alone is 13,333; over all three iterations 12,000 / 8.4 s.
    bar.update(_iteration(2, 4000, 0.1, 8000, 35.5))
    bar.update(_iteration(3, 4000, 0.3, 12000, 60.3))
    line = _last_line(out)
    assert len(re.findall(r"/s", line)) == 1, line  # tqdm's own rate is not shown
    assert re.search(r"\bsteps/s=([\d,]+)", line).group(1) == "20,000"
    assert bar.steps_per_second() == pytest.approx(20_000)
    assert "iter=3 return=60.3" in line
    assert ("12000/20000" if total else "12000steps") in line
    # Each draw shows an iteration's count with its own figures, never the last one's.
    draws = [d for d in out.getvalue().replace("\n", "\r").split("\r") if "iter=" in d]
    assert [re.search(r"(\d+)(?:/20000|steps)", d).group(1) for d in draws] == [
        "4000",
        "8000",
        "12000",
    ]
    assert all(f"iter={i}" in d for i, d in zip((1, 2, 3), draws, strict=True))
    bar.close()
    quiet = io.StringIO()
    bar = TrainProgressBar(total, disable=True, file=quiet)  # --no-progress
    bar.update(_iteration(1, 4000, 8.0, 4000, 20.0))
    bar.close()
    assert quiet.getvalue() == ""


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_unwritable_checkpoint_dir_is_refused_up_front(capsys, monkeypatch):
    # /proc refuses new entries even to root (a chmod-ed directory would not stop root).
    err = _checkpoint_dir_error("/proc/rljax-test/ckpt", capsys, monkeypatch)
    assert (
        "--checkpoint-dir /proc/rljax-test/ckpt is not writable (nothing can be created in /proc)"
        in err
    )


def test_checking_a_checkpoint_dir_leaves_nothing_behind(tmp_path):
    from rljax.cli import check_train_flags, make_parser

    for target in (tmp_path / "new" / "ckpt", tmp_path):  # missing, and existing and empty
        check_train_flags(make_parser().parse_args(["train", "--checkpoint-dir", str(target)]))
        assert list(tmp_path.iterdir()) == []
    # A directory rljax saved to passes with --force, leftovers of an interrupted save
    # included; without it the earlier run's checkpoint is not replaced (it was, unsaid).
    for name in ("LATEST", "v-000003", ".tmp-v-000004-0a1b2c3d", ".LATEST.0a1b2c3d"):
        (tmp_path / name).mkdir()
    with pytest.raises(ConfigError, match="holds an earlier run's checkpoint.*--force"):
        check_train_flags(make_parser().parse_args(["train", "--checkpoint-dir", str(tmp_path)]))
    argv = ["train", "--checkpoint-dir", str(tmp_path), "--force"]
    check_train_flags(make_parser().parse_args(argv))
    assert len(list(tmp_path.iterdir())) == 4


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_unwritable_export_dir_is_refused_before_anything_loads():
    """Was: a PermissionError traceback after the checkpoint had been loaded."""
    from rljax.policy.export import check_export_dir

    with pytest.raises(ConfigError, match=r"cannot export to '/proc/rljax-test/x': not writable"):
        check_export_dir("/proc/rljax-test/x")


# ``rljax train`` as the rljax script runs it (main() with the process's own argv), with SIGINT's
# default handler even if this test runner was started with SIGINT ignored.
TRAIN_BOOT = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv = ['rljax', *sys.argv[1:]]; "
    "runpy.run_module('rljax.cli', run_name='__main__', alter_sys=True)"
)
TINY = """
env: CartPole-v1
num_envs_per_env_runner: 4
train_batch_size_per_learner: 256
minibatch_size: 64
num_epochs: 1
model_config: {fcnet_hiddens: [8]}
seed: 0
"""


class _Train:
    """``rljax train --config TINY ...`` in a process group of its own, as a terminal runs a
    foreground job (so that a signal to the group reaches what it starts, as Ctrl-C does)."""

    def __init__(self, tmp_path: Path, *args: str):
        config = tmp_path / "tiny.yaml"
        config.write_text(TINY)
        self.out_path, self.err_path = tmp_path / "out.txt", tmp_path / "err.txt"
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", TRAIN_BOOT, "train", "--config", str(config), *args],
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def wait_until(self, ready, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, self.err_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.05)

    def signal_and_wait(self, sig: int, timeout: float = 120) -> tuple[int, str, str]:
        os.killpg(self.proc.pid, sig)
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        return code, self.out_path.read_text(), self.err_path.read_text()


def _messages(err: str) -> list[str]:
    """rljax's own lines of stderr (the progress bar's redraws left out)."""
    return [line for line in err.replace("\r", "\n").splitlines() if line.startswith("rljax:")]


@pytest.mark.slow
def test_ctrl_c_while_the_first_iteration_compiles_exits_130_with_one_line(tmp_path):
    # The progress bar appears just before the first train() call, which compiles first. XLA
    # goes on compiling in a native thread after Ctrl-C; tearing the interpreter down under it
    # used to crash (exit 139, a segfault) instead of exiting.
    run = _Train(tmp_path, "--stop-iters", "3")
    run.wait_until(lambda: "0steps" in run.err_path.read_text())
    time.sleep(0.3)
    code, out, err = run.signal_and_wait(signal.SIGINT)
    assert code == 130, err[-3000:]
    # In iteration 1, or, when the signal lands in a garbage-collection callback (where Python
    # ignores exceptions), after it: the request is kept and the loop stops the run.
    messages = _messages(err)
    assert messages in (
        ["rljax: interrupted in iteration 1"],
        ["rljax: interrupted after iteration 1"],
    )
    assert "Traceback" not in err
    if messages == ["rljax: interrupted in iteration 1"]:
        assert out == ""
    else:  # the finished iteration's summary
        assert json.loads(out)["stopped_by"] == "interrupt"


@pytest.mark.slow
def test_sigkill_or_ctrl_c_at_random_moments_leaves_a_loadable_checkpoint(tmp_path):
    import random

    from rljax.algorithms.algorithm import Algorithm
    from rljax.utils import checkpoint as ckpt

    rng = random.Random(0)
    for k, sig in enumerate([signal.SIGINT, signal.SIGKILL, signal.SIGINT]):
        where = tmp_path / f"run{k}"
        where.mkdir()
        ckpt_dir = where / "ckpt"
        saving = ("--checkpoint-dir", str(ckpt_dir), "--checkpoint-freq", "1")
        # Far more iterations than can finish before the signal, on however fast a machine.
        run = _Train(where, "--stop-iters", "1000000", *saving, "--checkpoint-num-to-keep", "2")
        run.wait_until(lambda d=ckpt_dir: (d / "LATEST").exists())  # iteration 1 is saved
        time.sleep(rng.uniform(0.0, 2.0))  # anywhere in a later iteration or save
        code, out, err = run.signal_and_wait(sig)
        meta, _ = ckpt.load_metadata(ckpt_dir)
        iteration = meta["counters"]["training_iteration"]
        if sig == signal.SIGINT:
            # The iteration in flight ends and is saved; one line says so, no traceback.
            assert code == 130, err[-3000:]
            assert _messages(err) == [
                "rljax: interrupted; saving a checkpoint when this iteration ends (Ctrl-C again "
                "to stop at once)",
                f"rljax: interrupted after iteration {iteration}; saved its checkpoint to "
                f"{ckpt_dir}",
            ]
            assert "Traceback" not in err
            summary = json.loads(out)
            assert summary["stopped_by"] == "interrupt"
            assert summary["training_iteration"] == iteration
        else:
            assert code == -signal.SIGKILL
        restored = Algorithm.from_checkpoint(ckpt_dir)
        try:
            assert restored.iteration == iteration >= 1
        finally:
            restored.stop()


def test_set_reaches_every_setting_through_the_same_checks(tmp_path):
    from rljax.cli import build_config, make_parser

    def config(*args):
        return build_config(make_parser().parse_args(["train", *args]))

    path = tmp_path / "c.yaml"
    path.write_text("lr: 0.001\nmodel_config: {fcnet_hiddens: [32], vf_share_layers: false}\n")
    c = config(
        "--config", str(path),
        "--set", "lr=0.0005",
        "--set", "model_config.fcnet_hiddens=[64, 64]",
        "--set", "clip_param=0.1",
        "--num-envs-per-env-runner", "4",
    )  # fmt: skip
    assert (c.lr, c.clip_param, c.num_envs_per_env_runner) == (0.0005, 0.1, 4)
    assert c.model_config.fcnet_hiddens == (64, 64) and c.model_config.vf_share_layers is False
    # The same refusals and hints as a config file.
    with pytest.raises(ConfigError, match="'num_epochs'"):
        config("--set", "num_sgd_iter=3")
    with pytest.raises(ConfigError, match="fcnet_hiddens='64' \\(str\\)"):
        config("--set", "model_config.fcnet_hiddens='64'")
    with pytest.raises(ConfigError, match="use --set key=value"):
        config("--set", "lr")
    with pytest.raises(ConfigError, match="not a YAML value"):
        config("--set", "lr=[1, 2")
    with pytest.raises(ConfigError, match="lr='fast'"):
        config("--set", "lr=fast").validate()


# ---------------------------------------------------------------------- rljax tune
TUNE_EXAMPLE = Path(__file__).parents[1] / "rljax" / "tuned_examples" / "tune_ppo_cartpole.yaml"

TINY_SWEEP = """\
algo: PPO
param_space:
  env: CartPole-v1
  num_envs_per_env_runner: 4
  rollout_fragment_length: 64
  train_batch_size_per_learner: 256
  minibatch_size: 64
  num_epochs: 1
  model_config: {fcnet_hiddens: [8]}
  lr: {grid_search: [0.001, 0.0003]}
tune_config: {metric: env_runners/episode_return_mean, mode: max}
run_config:
  name: sweep
  stop: {training_iteration: 1}
  checkpoint_config: {checkpoint_at_end: true}
"""


def _sweep(tmp_path, text=TINY_SWEEP, name="sweep.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (16 s alone)
def test_tune_runs_a_sweep_file_and_resumes_it(tmp_path, capsys):
    sweep = _sweep(tmp_path)
    assert main(["tune", "--config", sweep, "--storage-path", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # stdout holds the JSON alone
    assert summary["experiment_path"] == str(tmp_path / "out" / "sweep")
    assert summary["num_trials"] == 2 and summary["num_errors"] == 0
    best = summary["best_trial"]
    assert best["config"]["lr"] in (0.001, 0.0003) and best["training_iteration"] == 1
    assert isinstance(best["env_runners/episode_return_mean"], float)
    assert Path(best["checkpoint"]).name == "checkpoint_000001"
    assert "| TERMINATED |" in captured.err  # the table of trials, on stderr
    assert (tmp_path / "out" / "sweep" / "experiment_state.json").is_file()

    # --resume: the finished experiment is loaded back, nothing trains again.
    def no_build(self):
        raise AssertionError("built")

    from rljax.algorithms.algorithm_config import AlgorithmConfig

    original = AlgorithmConfig.build_algo
    AlgorithmConfig.build_algo = no_build
    try:
        argv = ["tune", "--config", sweep, "--storage-path", str(tmp_path / "out"), "--resume"]
        assert main([*argv, "--verbose", "0"]) == 0
    finally:
        AlgorithmConfig.build_algo = original
    captured = capsys.readouterr()
    assert json.loads(captured.out)["best_trial"] == best and captured.err == ""

    # An interrupted trial (marked RUNNING) continues from its checkpoint; the other is kept.
    state_path = tmp_path / "out" / "sweep" / "experiment_state.json"
    state = json.loads(state_path.read_text())
    state["trials"][1]["status"] = "RUNNING"
    state_path.write_text(json.dumps(state))
    trial_dirs = [tmp_path / "out" / "sweep" / t["dir"] for t in state["trials"]]
    first_line = (trial_dirs[1] / "result.json").read_text()
    _sweep(tmp_path, TINY_SWEEP.replace("training_iteration: 1", "training_iteration: 2"))
    assert main([*argv, "--verbose", "0"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["num_trials"] == 2 and summary["num_errors"] == 0
    from rljax.tune import experiment_state as es

    assert [r["training_iteration"] for r in es.read_history(trial_dirs[0])] == [1]
    assert [r["training_iteration"] for r in es.read_history(trial_dirs[1])] == [1, 2]
    # Its first result kept as it was (not computed again), the second appended.
    assert (trial_dirs[1] / "result.json").read_text().startswith(first_line)

    # --resume continues storage_path/name: a name is needed.
    no_name = _sweep(tmp_path, TINY_SWEEP.replace("  name: sweep\n", ""), "no_name.yaml")
    assert main(["tune", "--config", no_name, "--resume"]) == 2
    assert "give run_config.name (or --name)" in capsys.readouterr().err


def test_the_tune_example_file_checks_out():
    from rljax.tune.experiment_file import read_experiment_file, tuner_from_data

    tuner = tuner_from_data(read_experiment_file(TUNE_EXAMPLE))
    assert [c.lr for c in tuner._algo_configs] == [0.001, 0.0003, 0.0001]
    assert all(
        c.env == "CartPole-v1" and c.train_batch_size_per_learner == 4000
        for c in tuner._algo_configs
    )
    assert tuner.run_config.stop == {
        "training_iteration": 30,
        "env_runners/episode_return_mean": 450,
    }


def test_the_readme_experiment_file_checks_out(tmp_path):
    import re

    import yaml

    from rljax.tune.experiment_file import tuner_from_data

    readme = (Path(__file__).parents[1] / "docs" / "tuning.md").read_text()  # the Tuning guide
    section = readme[readme.index("**`rljax tune --config sweep.yaml") :]
    text = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    tuner = tuner_from_data(yaml.safe_load(text), storage_path=str(tmp_path))
    configs = tuner._algo_configs
    assert [c.lr for c in configs] == [0.001, 0.0003]
    assert all(0 <= c.entropy_coeff < 0.01 and c.env == "CartPole-v1" for c in configs)
    assert {c.model_config.fcnet_hiddens for c in configs} <= {(32,), (64, 64)}


def test_experiment_files_take_a_failure_config(tmp_path):
    from rljax import tune
    from rljax.tune.experiment_file import tuner_from_data

    data = {
        "algo": "PPO",
        "param_space": {"env": "CartPole-v1"},
        "run_config": {
            "stop": {"training_iteration": 1},
            "failure_config": {"max_failures": 2, "fail_fast": True},
        },
    }
    tuner = tuner_from_data(data, storage_path=str(tmp_path))
    assert tuner.run_config.failure_config == tune.FailureConfig(max_failures=2, fail_fast=True)
    data["run_config"]["failure_config"] = {"max_failure": 2}
    with pytest.raises(ConfigError, match="max_failure"):
        tuner_from_data(data, storage_path=str(tmp_path))
    data["run_config"]["failure_config"] = 2
    with pytest.raises(ConfigError, match=r"run_config.failure_config=2: give a mapping"):
        tuner_from_data(data, storage_path=str(tmp_path))


def test_search_spaces_in_files_map_onto_tune():
    from rljax import tune
    from rljax.tune.experiment_file import search_spaces_from_data

    space = search_spaces_from_data(
        {
            "a": {"loguniform": [1e-5, 1e-2]},
            "b": {"uniform": {"lower": 0, "upper": 1}},
            "c": {"choice": [[32], {"grid_search": [1, 2]}]},
            "d": {"nested": {"randint": [1, 5]}, "plain": {"x": [1, 2]}},
            "e": [{"quniform": [0, 1, 0.25]}, {"qrandint": [0, 10, 5]}, {"randn": [0, 1]}],
            "f": {"grid_search": [1, 2]},
        }
    )
    assert repr(space["a"]) == repr(tune.loguniform(1e-5, 1e-2))
    assert repr(space["b"]) == repr(tune.uniform(0, 1))
    assert isinstance(space["c"], tune.Categorical)
    assert isinstance(space["c"].categories[1], tune.GridSearch)
    assert isinstance(space["d"]["nested"], tune.Integer) and space["d"]["plain"] == {"x": [1, 2]}
    assert [type(d).__name__ for d in space["e"]] == ["Float", "Integer", "Normal"]
    variants = tune.generate_variants({k: v for k, v in space.items() if k != "c"}, seed=0)
    assert [v["f"] for v in variants] == [1, 2]
    assert all(1 <= v["d"]["nested"] < 5 and v["e"][1] in (0, 5, 10) for v in variants)
    logs = search_spaces_from_data(
        {
            "g": {"qloguniform": [0.1, 10, 0.1]},
            "h": {"lograndint": {"lower": 1, "upper": 100}},
            "i": {"qlograndint": [2, 64, 2]},
            "j": {"qrandn": [0, 1, 0.5]},
        }
    )
    assert [repr(d) for d in logs.values()] == [
        "qloguniform(0.1, 10, 0.1)",
        "lograndint(1, 100)",
        "qlograndint(2, 64, 2)",
        "qrandn(0, 1, 0.5)",
    ]


_SWEEP_HEAD = (
    "algo: PPO\nrun_config: {stop: {training_iteration: 1}}\nparam_space:\n  env: CartPole-v1\n"
)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            _SWEEP_HEAD + "  lr: {grid_search: []}\n",
            "param_space['lr']: grid_search([]) has no values",
        ),
        (
            _SWEEP_HEAD + "  lr: {loguniform: [0, 0.01]}\n",
            "param_space['lr']: loguniform(0, 0.01) needs positive bounds",
        ),
        (
            _SWEEP_HEAD + "  lr: {log_uniform: [0.0001, 0.01]}\n",
            "param_space['lr']: 'log_uniform' is not a search-space kind a file can use; did you "
            "mean 'loguniform'?; allowed: {grid_search: [value, ...]}",
        ),
        (_SWEEP_HEAD + "  lr: {sample_from: [1]}\n", "'sample_from' is not a search-space kind"),
        (
            _SWEEP_HEAD + "  lr: {uniform: [1]}\n",
            "{uniform: [1]}: write its arguments as {uniform: [lower, upper]}",
        ),
        (
            _SWEEP_HEAD + "  learning_rat: {grid_search: [0.001]}\n",
            "unknown key 'learning_rat'; did you mean 'lr'",
        ),
        (_SWEEP_HEAD + "  lrr: 0.001\n", "unknown config key 'lrr'; did you mean 'lr'?"),
        (
            _SWEEP_HEAD.replace("PPO", "PPOO"),
            "unknown algorithm 'PPOO'; did you mean 'PPO'?; available: PPO",
        ),
        (_SWEEP_HEAD + "tune_cfg: {}\n", "unknown key 'tune_cfg'; did you mean 'tune_config'?"),
        (_SWEEP_HEAD + "tune_config: {scheduler: asha}\n", "tune_config: unknown key 'scheduler'"),
        (_SWEEP_HEAD.replace("{stop: {training_iteration: 1}}", "{}"), "trains until stopped"),
        (
            _SWEEP_HEAD + "  env_config: {grid_search: [{map: /etc/passwd}]}\n",
            "trial 0 ({'env_config': {'map': '/etc/passwd'}}): env_config 'map' is a path",
        ),
        ("- a list\n", "an experiment file is a mapping"),
        ("algo: PPO\nparam_space: {lr: &x 1, gamma: *x}\n", "aliases"),
    ],
)
def test_tune_refuses_bad_files_before_building(text, message, tmp_path, capsys, monkeypatch):
    from rljax.algorithms.algorithm_config import AlgorithmConfig

    def no_build(self):
        raise AssertionError("built")

    monkeypatch.setattr(AlgorithmConfig, "build_algo", no_build)
    sweep = _sweep(tmp_path, text)
    assert main(["tune", "--config", sweep, "--storage-path", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rljax: error: {sweep}") and message in err
    assert not (tmp_path / "out").exists()


def test_tune_help_documents_the_file(capsys):
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    out = capsys.readouterr().out
    for text in ("param_space", "{loguniform: [lower, upper]}", "--resume", "Exit status"):
        assert text in out


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (7 s alone)
def test_train_logdir_writes_tensorboard_csv_json_wandb_and_the_curve(
    tmp_path, capsys, monkeypatch
):
    pytest.importorskip("wandb")
    from log_readers import tensorboard_scalars, wandb_offline_run

    from rljax.utils.result_loggers import numeric_leaves

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logdir = tmp_path / "logs"
    argv = ["train", "--env", "CartPole-v1", "--stop-iters", "2", "--no-progress"]
    argv += ["--set", "train_batch_size_per_learner=256", "--set", "minibatch_size=128"]
    argv += ["--logdir", str(logdir), "--wandb-project", "rljax-test"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["logdir"] == str(logdir)
    assert f"rljax: logs in {logdir}" in err and "learning_curve.png" in err
    results = [json.loads(line) for line in (logdir / "result.json").read_text().splitlines()]
    assert [r["training_iteration"] for r in results] == [1, 2]
    expected = [numeric_leaves(r) for r in results]
    steps = [r["num_env_steps_sampled_lifetime"] for r in results]
    scalars = tensorboard_scalars(logdir)
    for key in ("env_runners/episode_return_mean", "learners/default_policy/total_loss"):
        assert scalars[key] == [
            (s, pytest.approx(e[key], rel=1e-6)) for s, e in zip(steps, expected, strict=True)
        ]
    assert set(scalars) == set(expected[0])  # every numeric leaf, nothing else
    config, history = wandb_offline_run(logdir)
    assert config["env"] == "CartPole-v1" and config["train_batch_size_per_learner"] == 256
    assert [s for s, _ in history] == steps
    assert history[1][1] == pytest.approx(expected[1])
    assert (logdir / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (logdir / "progress.csv").read_text().count("\n") == 3  # header and two rows
