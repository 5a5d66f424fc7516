import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rljax.utils.xla_options import with_host_devices

# Runs each check script (with its arguments) in turn in this one process, as ``python script
# args...`` would: ``sys.argv`` set, run as ``__main__``; each prints its JSON as its last line.
_DRIVER = """
import json, runpy, sys
for argv in json.loads(sys.argv[1]):
    sys.argv = argv
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stop:
        if stop.code:
            raise
    sys.stdout.flush()
"""


def run_checks(devices: int, *calls: tuple[str, ...]) -> tuple[list[dict], str]:
    """Runs the check scripts (paths from this file's folder; each call ``(script, *args)``)
    one after another in one subprocess with ``devices`` forced host devices, so the imports
    and JAX's start are paid once; the JSON each printed, in order, and the stderr."""
    env = dict(
        os.environ,
        XLA_FLAGS=with_host_devices(devices),
        JAX_PLATFORMS="cpu",
    )
    argvs = [[str(Path(__file__).parent / script), *args] for script, *args in calls]
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(argvs)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    outs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(outs) == len(calls), proc.stdout[-4000:]
    return outs, proc.stderr


@pytest.mark.slow
def test_ppo_updates_on_one_two_and_four_devices_agree():
    """The host path's update (``multidevice_check.py``) and PPO on rljax's JAX CartPole
    (``jax_env_multidevice_check.py``, each device stepping its shard of the envs) on 1, 2 and
    4 devices: one subprocess with 4 host devices runs both."""
    (out, jax_env), _ = run_checks(4, ("multidevice_check.py",), ("jax_env_multidevice_check.py",))
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

    # Each device steps its shard of the JAX envs and learns on it, gradients averaged.
    one = jax_env["runs"]["1"]
    for n in ("2", "4"):
        run = jax_env["runs"][n]
        assert run["episodes"] == one["episodes"]  # the same envs, actions and episodes
        policy_loss, vf_loss = run["losses"]
        assert abs(policy_loss - one["losses"][0]) < 1e-5
        assert vf_loss == pytest.approx(one["losses"][1], rel=1e-4)
        # After 16 Adam steps: its normalised steps turn float noise in near-zero gradient
        # components into differences of up to a step (lr 5e-5); measured 1.7e-4 and 2.0e-4.
        assert jax_env["max_abs_diff"][n] < 5e-4, jax_env


@pytest.mark.slow
def test_off_policy_impala_and_appo_on_two_learners_match_one():
    """DQN and TD3 (``off_policy_multidevice_check.py``), IMPALA and APPO
    (``impala_multidevice_check.py``) with 2 learners against one: one subprocess with 2 host
    devices runs all four."""
    (dqn, td3, out), stderr = run_checks(
        2,
        ("off_policy_multidevice_check.py", "DQN"),
        ("off_policy_multidevice_check.py", "TD3"),
        ("impala_multidevice_check.py",),
    )
    for off in (dqn, td3):
        assert off["all_reduce_in_hlo"], off
        assert off["steps_1"] == off["steps_2"]
        assert off["max_param_diff"] < 1e-5, off
        assert abs(off["loss_1"] - off["loss_2"]) < 1e-5, off

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


@pytest.mark.slow
def test_a_population_splits_its_trials_over_one_two_and_four_devices_alike(tmp_path):
    """A 4-trial population on rljax's JAX CartPole (``population_multidevice_check.py``): its
    trial axis split over 1, 2 and 4 devices gives the same episodes, losses and parameters,
    through PBT's exploit (a copy across devices) and a compaction to one trial (which then
    runs on one device), each layout compiling once per program. The same subprocess runs
    ``benchmarks/population_devices.py --quick`` on 1, 2 and 4 devices."""
    (out, bench), _ = run_checks(
        4,
        ("population_multidevice_check.py",),
        (
            "../../benchmarks/population_devices.py",
            "--quick",
            "--devices",
            "1",
            "2",
            "4",
            "--out",
            str(tmp_path),
        ),
    )
    assert set(bench["layouts"]) == {"1", "2", "4"}
    for n, row in bench["layouts"].items():
        assert row["devices"] == int(n) and row["trials_per_device"] == 4 // int(n), row
        assert row["env_steps_per_s"] > 0 and row["first_call_s"] > 0, row
    assert (tmp_path / "population_devices.json").is_file()
    assert out["default"] == 4  # without devices=..., a population takes every host device
    one = out["runs"]["1"]
    assert one["num_devices"] == [1, 1]
    assert out["runs"]["2"]["num_devices"] == [2, 1]
    assert out["runs"]["4"]["num_devices"] == [4, 1]
    for n in ("2", "4"):
        run = out["runs"][n]
        assert run["num_compilations"] == one["num_compilations"] == 2  # start, compaction
        assert run["cache_sizes"] == [1, 1]  # each program compiled once for its layout
        assert run["state_devices"] == [int(n)]
        # Each trial's own state on one device, its slot's: trials 0-3 in order over n.
        per = 4 // int(n)
        devices = [m[0] for m in run["member_devices"]]
        assert all(len(m) == 1 for m in run["member_devices"]), run["member_devices"]
        assert len(set(devices)) == int(n)
        assert all(devices[i] == devices[i - i % per] for i in range(4)), devices
        assert run["exploit_copied"]
        assert run["final_state_devices"] == [1]
        for stage, (mine, ones) in enumerate(zip(run["results"], one["results"], strict=True)):
            assert [r is None for r in mine] == [r is None for r in ones], stage
            for r, o in zip(mine, ones, strict=True):
                if r is not None:
                    assert r[:2] == o[:2], (n, stage)  # the same episodes and returns
                    assert abs(r[2] - o[2]) < 1e-5, (n, stage)
        # Measured: 1.5e-7 at most (float order); a trial trained on another trial's data, or
        # a wrong copy in the exploit, moves its weights by far more.
        assert max(run["max_abs_diff"]) < 1e-5, run["max_abs_diff"]
    # The exploit copied trial 0's state into trial 3 (before iteration 2); the 4th iteration
    # trained trial 0 alone.
    assert one["exploit_copied"] and one["cache_sizes"] == [1, 1]
    assert one["results"][3][1:] == [None, None, None]
    # 4 multi-agent trials (two policies each) on 1 and 4 devices: the same episodes and,
    # to float order, the same parameters (measured: 0 on the AMD EPYC host).
    ma = out["multi_agent"]
    assert ma["num_devices"] == [1, 4]
    assert ma["returns"][0] == ma["returns"][1]
    assert ma["max_abs_diff"] < 1e-5, ma
