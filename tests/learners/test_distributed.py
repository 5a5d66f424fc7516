"""Learners across processes (``rljax.distributed``): the one-process hooks change nothing, the
settings are checked, and (slow tier, local processes with gloo) 2 processes x 2 CPU devices
train PPO and DQN to the same parameters as 1 process x 4 devices; a process that dies ends the run
with ``ProcessGroupError``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rljax import distributed
from rljax.algorithms.ppo import PPOConfig
from rljax.utils.errors import ConfigError
from rljax.utils.xla_options import with_host_devices

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("distributed_worker.py")
TIMEOUT_S = 240


# ---------------------------------------------------------------------- one process
def test_one_process_hooks_change_nothing() -> None:
    assert not distributed.is_multi_process()
    assert distributed.is_writer()
    assert distributed.env_share(6, 11) == (6, 11)
    assert distributed.common_seed(1234) == 1234
    tree = {"a": jnp.arange(3)}
    assert distributed.local_copy(tree) is tree
    host = [({"loss": 1.0}, {"returns": np.zeros(2), "num_valid": 5})]
    assert distributed.gather_episodes(host) is host

    def policy(params, obs, key):
        return obs, {}

    assert distributed.same_actions_as_one_process(policy) is policy


def test_same_actions_wrapper_keeps_this_process_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    # As process 1 of 2: the policy sees a batch twice as wide and this process's rows come back.
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    seen = []

    def policy(params, obs, key):
        seen.append(obs.shape)
        return obs * 10 + jnp.arange(obs.shape[0])[:, None], {"v": jnp.arange(obs.shape[0])}

    act = distributed.same_actions_as_one_process(policy)
    action, extras = act(None, jnp.ones((3, 1)), None)
    assert seen == [(6, 1)]
    np.testing.assert_array_equal(np.asarray(action)[:, 0], [13, 14, 15])
    np.testing.assert_array_equal(np.asarray(extras["v"]), [3, 4, 5])


def test_env_share_and_learner_devices_across_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    # Process 1 of 2 samples sub-envs 4..7 of 8, seeded as those are in one process.
    assert distributed.env_share(8, 100) == (4, 104)
    with pytest.raises(ConfigError, match="num_envs_per_env_runner=5 across 2 processes"):
        distributed.env_share(5, 0)

    class Dev:
        def __init__(self, p: int, i: int):
            self.process_index, self.id = p, i

    pool = [Dev(0, 0), Dev(0, 1), Dev(1, 2), Dev(1, 3)]
    got = distributed.learner_devices(pool, 2)  # type: ignore[arg-type]
    assert [(d.process_index, d.id) for d in got] == [(0, 0), (1, 2)]
    with pytest.raises(ConfigError, match="num_learners=3 across 2 processes"):
        distributed.learner_devices(pool, 3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="process 0 has 2"):
        distributed.learner_devices(pool, 6)  # type: ignore[arg-type]


def test_process_settings_checked() -> None:
    config = PPOConfig().learners(
        num_processes=2, process_id=1, coordinator_address="10.0.0.1:1234", process_timeout_s=5
    )
    assert (config.num_processes, config.process_id, config.coordinator_address) == (
        2,
        1,
        "10.0.0.1:1234",
    )
    assert PPOConfig().num_processes is None and PPOConfig().process_timeout_s == 60.0
    for bad in ("10.0.0.1", "host:port", 1234):
        with pytest.raises(ConfigError, match="host:port"):
            PPOConfig().learners(coordinator_address=bad).validate()
    with pytest.raises(ConfigError, match="num_processes"):
        PPOConfig().learners(num_processes=0).validate()


def test_wanted_reads_config_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("JAX_NUM_PROCESSES", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert not distributed.wanted(PPOConfig())
    assert distributed.wanted(PPOConfig().learners(num_processes=2))
    monkeypatch.setenv("SLURM_NTASKS", "4")
    assert distributed.wanted(PPOConfig())
    assert not distributed.wanted(PPOConfig().learners(num_processes=1))  # the config decides
    monkeypatch.setenv("JAX_NUM_PROCESSES", "1")
    assert not distributed.wanted(PPOConfig())
    monkeypatch.setenv("JAX_NUM_PROCESSES", "two")
    with pytest.raises(ConfigError, match="JAX_NUM_PROCESSES='two'"):
        distributed.wanted(PPOConfig())


def test_launcher_ends_the_others_when_one_fails() -> None:
    # Child 1 fails at once; child 0 would sleep a minute: it is ended, and the error names 1.
    code = "import os, sys, time; sys.exit(5) if os.environ['JAX_PROCESS_ID'] == '1' else time.sleep(60)"
    t0 = time.monotonic()
    with pytest.raises(distributed.ProcessGroupError, match="process 1 of 2 exited with status 5"):
        distributed.launch_local([sys.executable, "-c", code], 2, grace_s=5)
    assert time.monotonic() - t0 < 30


def test_launcher_gives_each_child_its_process_settings(tmp_path: Path) -> None:
    code = (
        "import os, pathlib; e = os.environ; pathlib.Path(e['OUT'], e['JAX_PROCESS_ID']).write_text("
        "e['JAX_NUM_PROCESSES'] + ' ' + e['JAX_COORDINATOR_ADDRESS'])"
    )
    distributed.launch_local(
        [sys.executable, "-c", code], 3, env={**os.environ, "OUT": str(tmp_path)}
    )
    texts = sorted(p.read_text() for p in tmp_path.iterdir())
    assert len(texts) == 3 and len(set(texts)) == 1
    count, address = texts[0].split()
    assert count == "3" and address.startswith("127.0.0.1:")


# ---------------------------------------------------------------------- several processes
def _env(devices: int) -> dict[str, str]:
    env = dict(os.environ)
    env["XLA_FLAGS"] = with_host_devices(devices)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for var in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        env.pop(var, None)
    return env


def _saved_buffer(ckpt: Path) -> dict:
    import flax.serialization

    data = (ckpt / "v-000001" / "state.msgpack").read_bytes()
    return flax.serialization.msgpack_restore(data)["state"]["buffer"]


def _at(tree: dict, path: tuple) -> np.ndarray:
    for key in path:
        tree = tree[key.key]
    return np.asarray(tree)


def _load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_two_processes_match_one_process(tmp_path: Path, algo: str) -> None:
    # PPO: 3 iterations of 32 env steps. DQN: each process's transitions reach every process's
    # replay buffer, so its minibatches are the one-process run's (22 updates in 3 iterations).
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    # The reference (1 process x 4 devices) runs alongside the two processes (2 x 2 devices).
    ref = subprocess.Popen(
        [sys.executable, str(WORKER), algo, str(one), "3"], env=_env(4), cwd=ROOT
    )
    try:
        distributed.launch_local(
            [sys.executable, str(WORKER), algo, str(two), "3"], 2, env=_env(2), timeout_s=TIMEOUT_S
        )
        assert ref.wait(TIMEOUT_S) == 0
    finally:
        ref.kill()
    a = _load(one / "result_0.npz")
    assert a["process_count"] == 1 and a["device_count"] == 4
    params = [k for k in a if k.startswith("[")]
    assert len(params) == 6
    expected = {"ppo": (96, 32), "dqn": (115, 40)}[algo]
    assert (a["num_env_steps_sampled_lifetime"], a["num_env_steps_sampled"]) == expected
    if algo == "dqn":
        assert a["num_updates"] == 22
    for p in (0, 1):
        b = _load(two / f"result_{p}.npz")
        assert b["process_count"] == 2 and b["device_count"] == 4
        # Env steps summed over the processes, episodes of both.
        assert (b["num_env_steps_sampled_lifetime"], b["num_env_steps_sampled"]) == expected
        assert b["num_episodes"] == a["num_episodes"] and b["num_updates"] == a["num_updates"]
        assert b["buffer_split"] == (algo == "dqn") and a["buffer_split"] == 0
        for k in params:
            np.testing.assert_allclose(b[k], a[k], atol=1e-5, rtol=0, err_msg=k)
    if algo == "dqn":  # process 0 wrote the checkpoint, with every process's replay rows
        assert (two / "ckpt" / "LATEST").exists()
        one_buf, two_buf = _saved_buffer(one / "ckpt"), _saved_buffer(two / "ckpt")
        assert one_buf["storage"]["obs"].shape == (4, 256, 4)
        assert int(np.sum(one_buf["size"])) > 100
        for path, x in jax.tree_util.tree_leaves_with_path(one_buf):
            name = jax.tree_util.keystr(path)
            if "storage" in name or not np.issubdtype(np.asarray(x).dtype, np.floating):
                np.testing.assert_array_equal(x, _at(two_buf, path), err_msg=name)
            else:  # priorities: each run's own update program computed them from its TD errors
                # (one program over 4 devices, the other over 2 x 2), so float32 rounding may
                # differ by an ulp (it does with --xla_cpu_use_fusion_emitters=false)
                np.testing.assert_allclose(x, _at(two_buf, path), rtol=1e-6, err_msg=name)


@pytest.mark.slow
def test_killed_process_ends_the_run_with_process_group_error(tmp_path: Path) -> None:
    # Process 1 dies once built, before its first iteration (no iteration to compile or run);
    # the launcher ends process 0 wherever it is (building, or waiting in the first collective).
    # test_survivor_of_a_dead_process_raises_and_ends has a process die mid-run.
    t0 = time.monotonic()
    with pytest.raises(distributed.ProcessGroupError, match="process 1 of 2 exited with status 3"):
        distributed.launch_local(
            [sys.executable, str(WORKER), "ppo", str(tmp_path), "3", "0"],
            2,
            env=_env(2),
            timeout_s=TIMEOUT_S,
        )
    assert time.monotonic() - t0 < TIMEOUT_S
    assert not list(tmp_path.glob("result_*.npz"))


def test_cli_refuses_a_bad_process_count(capsys: pytest.CaptureFixture[str]) -> None:
    from rljax.cli import main

    assert main(["train", "--env", "CartPole-v1", "--num-processes", "0"]) == 2
    assert "--num-processes 0; use a positive number of processes" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_trains_in_processes_and_one_process_restores(tmp_path: Path) -> None:
    # rljax train --num-processes 2: process 0 writes the checkpoint and the logs; the
    # checkpoint then loads in one process (its launch settings are the restoring run's).
    ckpt, logs = tmp_path / "ckpt", tmp_path / "logs"
    argv = [
        sys.executable, "-m", "rljax.cli", "train", "--env", "CartPole-v1",
        "--num-processes", "2", "--num-learners", "2", "--num-env-runners", "0",
        "--num-envs-per-env-runner", "4", "--stop-iters", "2", "--seed", "1",
        "--set", "train_batch_size=64", "--set", "minibatch_size=32", "--set", "num_epochs=1",
        "--checkpoint-dir", str(ckpt), "--logdir", str(logs), "--no-progress",
    ]  # fmt: skip
    out = subprocess.run(
        argv, env=_env(1), cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert out.returncode == 0, out.stderr[-3000:]
    summary = out.stdout[out.stdout.index("{") : out.stdout.rindex("}") + 1]
    assert out.stdout.count('"stopped_by"') == 1  # one summary: process 0's
    assert '"num_env_steps_sampled_lifetime": 128' in summary  # 2 iterations x 64, both processes
    assert (ckpt / "LATEST").exists() and (logs / "progress.csv").exists()
    code = (
        "from rljax.algorithms.algorithm import Algorithm\n"
        f"a = Algorithm.from_checkpoint({str(ckpt)!r})\n"
        "print('restored', a.iteration, a.num_env_steps_sampled_lifetime, a.config.num_processes)\n"
        "a.stop()\n"
    )
    back = subprocess.run(
        [sys.executable, "-c", code], env=_env(2), capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert "restored 2 128 None" in back.stdout, back.stderr[-3000:]


def test_launch_settings_cleared_keeps_the_rest() -> None:
    config = PPOConfig().learners(num_learners=2, num_processes=2, process_id=1)
    config.learners(coordinator_address="10.0.0.1:1234", process_timeout_s=7)
    distributed.launch_settings_cleared(config)
    assert (config.num_processes, config.process_id, config.coordinator_address) == (None,) * 3
    assert (config.num_learners, config.process_timeout_s) == (2, 7)


@pytest.mark.slow
def test_survivor_of_a_dead_process_raises_and_ends(tmp_path: Path) -> None:
    # Without the launcher (as under srun): process 1 dies at iteration 2; process 0's
    # collective fails with ProcessGroupError, and JAX's heartbeat timeout (process_timeout_s
    # 10 in the worker) ends it rather than letting it wait.
    address = f"127.0.0.1:{distributed.free_port()}"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "ppo", str(tmp_path), "3", "1"],
            env=distributed.process_env(i, 2, address, _env(2)),
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    try:
        errs = [p.communicate(timeout=TIMEOUT_S)[1] for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert procs[1].returncode == 3
    assert procs[0].returncode != 0
    assert "ProcessGroupError: process 0 of 2: a collective failed" in errs[0], errs[0][-3000:]
