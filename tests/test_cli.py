import json
import subprocess
import sys
from pathlib import Path

import pytest

from rljax.cli import main

TUNED = Path(__file__).parents[1] / "rljax" / "tuned_examples" / "ppo_cartpole.yaml"


def _run(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "rljax.cli", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_train_to_reward_then_evaluate(tmp_path):
    ckpt = tmp_path / "ckpt"
    proc = _run(
        "train", "--config", str(TUNED), "--stop-reward", "450", "--checkpoint-dir", str(ckpt)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["stopped_by"] == "stop-reward" and summary["episode_return_mean"] >= 450
    assert "return=" in proc.stderr and "steps/s=" in proc.stderr  # the live progress bar
    proc = _run("evaluate", str(ckpt), "--episodes", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["episodes"] == 3 and out["episode_return_mean"] >= 400


def test_train_flags_override_the_file(tmp_path):
    proc = _run(
        "train",
        "--config",
        str(TUNED),
        "--env",
        "CartPole-v1",
        "--num-envs-per-env-runner",
        "8",
        "--stop-iters",
        "1",
        "--seed",
        "3",
        "--no-progress",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["training_iteration"] == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["train", "--algo", "PPP", "--env", "CartPole-v1"],
            "unknown algorithm 'PPP'; did you mean 'PPO'?",
        ),
        (["train", "--env", "CartPol-v1"], "did you mean 'CartPole-v1'"),
        (["train", "--env", "CartPole-v1", "--num-learners", "16"], "num_learners=16"),
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
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["training_iteration"] == 1 and summary["num_env_steps_sampled_lifetime"] > 0
    assert main(["evaluate", str(ckpt), "--episodes", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 2


def test_multi_agent_config_file_trains_checkpoints_and_evaluates(tmp_path, capsys):
    tuned = TUNED.parent / "ppo_multi_agent_cartpole.yaml"
    ckpt = tmp_path / "ckpt"
    argv = ["train", "--config", str(tuned), "--stop-iters", "2", "--checkpoint-dir", str(ckpt)]
    argv += ["--checkpoint-freq", "1", "--checkpoint-num-to-keep", "2"]
    assert main(argv) == 0
    # Saved after iterations 1 and 2 and at the end; the newest two stay.
    assert sorted(p.name for p in ckpt.iterdir() if p.name.startswith("v-")) == [
        "v-000002",
        "v-000003",
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
