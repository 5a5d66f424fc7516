import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rljax.utils.xla_options import with_host_devices


def run_check(script: str, devices: int, *args: str) -> tuple[dict, str]:
    """Runs ``script`` (beside this file) in a subprocess with ``devices`` forced host devices;
    its last stdout line as JSON, and its stderr."""
    env = dict(
        os.environ,
        XLA_FLAGS=with_host_devices(devices),
        JAX_PLATFORMS="cpu",
    )
    path = Path(__file__).with_name(script)
    proc = subprocess.run(
        [sys.executable, str(path), *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.slow
def test_update_on_one_two_and_four_devices_agrees():
    out, _ = run_check("multidevice_check.py", 4)
    assert out["all_reduce_in_hlo"], (
        "the 4-device update should average gradients with an all-reduce"
    )
    assert out["max_param_change"] > 1e-4  # the update really moved the parameters
    assert out["max_param_diff"] < 1e-5, out
    assert out["max_param_diff_2_devices"] < 1e-5, out
    assert abs(out["policy_loss_4"] - out["policy_loss_1"]) < 1e-5
    # 64 steps x 8 sub-envs, and 2 runners x 4 sub-envs x 16 steps: each row an env step
    assert out["train_steps"] == 512
    assert out["host_train_steps"] == 128


@pytest.mark.slow
def test_jax_env_ppo_on_one_two_and_four_devices_agrees():
    # Each device steps its shard of the JAX envs and learns on it, gradients averaged.
    out, _ = run_check("jax_env_multidevice_check.py", 4)
    one = out["runs"]["1"]
    for n in ("2", "4"):
        run = out["runs"][n]
        assert run["episodes"] == one["episodes"]  # the same envs, actions and episodes
        policy_loss, vf_loss = run["losses"]
        assert abs(policy_loss - one["losses"][0]) < 1e-5
        assert vf_loss == pytest.approx(one["losses"][1], rel=1e-4)
        # After 16 Adam steps: its normalised steps turn float noise in near-zero gradient
        # components into differences of up to a step (lr 5e-5); measured 1.7e-4 and 2.0e-4.
        assert out["max_abs_diff"][n] < 5e-4, out


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["DQN", "TD3"])
def test_off_policy_update_on_two_learners_matches_one(algo):
    out, _ = run_check("off_policy_multidevice_check.py", 2, algo)
    assert out["all_reduce_in_hlo"], out
    assert out["steps_1"] == out["steps_2"]
    assert out["max_param_diff"] < 1e-5, out
    assert abs(out["loss_1"] - out["loss_2"]) < 1e-5, out


@pytest.mark.slow
def test_impala_and_appo_on_two_learners_match_one():
    out, stderr = run_check("impala_multidevice_check.py", 2)
    # Runner threads act while the update (which donates the train state) runs: the weights
    # they hold must be their own copies.
    assert "deleted or donated" not in stderr, stderr[-4000:]
    for name in ("IMPALA", "APPO"):
        # Measured: one weight of the 256x256 encoder differs by 4e-5, every other by under 1e-7;
        # Adam's per-weight normalisation turns float-order noise in a near-zero gradient into
        # a step of that size (a sharding error moves every weight by up to lr = 5e-4).
        assert out[f"{name}_max_param_diff"] < 1e-4, out
        assert out[f"{name}_loss_diff"] < 1e-4, out
        assert out[f"{name}_runner_restarts"] == 0 and out[f"{name}_runner_loss"] > 0, out
