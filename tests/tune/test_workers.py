"""Batches of trials that cannot share one program train at once in worker processes when
``max_concurrent_trials`` leaves room: the same numbers as in this process, checkpoints written
by the workers, and a worker that dies fails its own trial only."""

from __future__ import annotations

import contextlib
import os
import signal

import numpy as np
import pytest

from rljax import tune
from rljax.algorithms.algorithm import Algorithm
from rljax.tune import experiment_state as es

SPACE = {
    "env": "CartPole-v1",
    "num_envs_per_env_runner": 4,
    "rollout_fragment_length": 16,
    "train_batch_size_per_learner": 64,
    "minibatch_size": 32,
    "num_epochs": 1,
    "seed": 0,
    # Two network sizes: two programs, so two batches of one trial.
    "model_config": {"fcnet_hiddens": tune.grid_search([[8], [16]])},
}


def _fit(tmp_path, name, cap, stop, checkpoint_config=None):
    return tune.Tuner(
        "PPO",
        param_space=SPACE,
        tune_config=tune.TuneConfig(max_concurrent_trials=cap),
        run_config=tune.RunConfig(
            name=name,
            storage_path=str(tmp_path),
            stop=stop,
            checkpoint_config=checkpoint_config,
            verbose=0,
        ),
    ).fit()


@pytest.mark.slow  # two Tuner runs, four compilations
def test_other_shapes_train_at_once_in_workers_with_this_process_numbers(tmp_path):
    at_end = tune.CheckpointConfig(checkpoint_at_end=True)
    stop = {"training_iteration": 2}
    here = _fit(tmp_path, "here", None, stop, at_end)
    workers = _fit(tmp_path, "workers", 2, stop, at_end)
    assert here.num_errors == 0 and workers.num_errors == 0, (here.errors, workers.errors)
    assert {r.metrics["pid"] for r in here} == {os.getpid()}
    pids = [r.metrics["pid"] for r in workers]
    assert os.getpid() not in pids and len(set(pids)) == 2
    for mine, theirs in zip(here, workers, strict=True):
        assert mine.config == theirs.config
        for a, b in zip(mine.history, theirs.history, strict=True):
            assert a["num_env_steps_sampled_lifetime"] == b["num_env_steps_sampled_lifetime"]
            np.testing.assert_allclose(
                a["env_runners"]["episode_return_mean"], b["env_runners"]["episode_return_mean"]
            )
            np.testing.assert_allclose(
                a["learners"]["default_policy"]["total_loss"],
                b["learners"]["default_policy"]["total_loss"],
                rtol=1e-5,
            )
    # The worker saved the checkpoint where the trial's files are; it loads here.
    checkpoint = workers[1].checkpoint
    assert checkpoint is not None and os.path.basename(checkpoint.path) == "checkpoint_000002"
    algo = Algorithm.from_checkpoint(checkpoint.path)
    try:
        assert algo.iteration == 2
        assert list(algo.config.model_config.fcnet_hiddens) == [16]
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_worker_that_dies_fails_its_own_trial_and_the_other_finishes(tmp_path):
    killed = []

    def stop(trial_id, result):  # the first trial's worker is killed after its first result
        if trial_id.endswith("_00000") and not killed:
            killed.append(result["pid"])
            os.kill(result["pid"], signal.SIGKILL)
        return result["training_iteration"] >= 2

    grid = _fit(tmp_path, "dies", 2, stop)
    assert killed and killed[0] != os.getpid()
    assert isinstance(grid[0].error, RuntimeError) and "exited" in str(grid[0].error)
    assert grid[1].error is None and grid[1].metrics["training_iteration"] == 2
    state = es.ExperimentState.load(tmp_path / "dies")
    assert [t["status"] for t in state.trials] == [es.ERROR, es.TERMINATED]


@pytest.mark.slow
def test_a_stopped_worker_fails_its_own_trial_after_the_heartbeat_timeout(tmp_path, monkeypatch):
    from rljax.tune import worker

    monkeypatch.setattr(worker, "HEARTBEAT_TIMEOUT_S", 10.0)
    stopped: list[int] = []

    def stop(trial_id, result):  # the first trial's worker is stopped after its first result
        if trial_id.endswith("_00000") and not stopped:
            stopped.append(result["pid"])
            os.kill(result["pid"], signal.SIGSTOP)
        return result["training_iteration"] >= 2

    try:
        grid = _fit(tmp_path, "stopped", 2, stop)
    finally:
        for pid in stopped:  # the Tuner ended it; never leave a stopped process behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert stopped and stopped[0] != os.getpid()
    assert isinstance(grid[0].error, worker.WorkerTimeout)
    assert "sent nothing for 10 s" in str(grid[0].error) and "SIGSTOP" in str(grid[0].error)
    assert grid[0].metrics["training_iteration"] == 1
    assert grid[1].error is None and grid[1].metrics["training_iteration"] == 2
    assert not os.path.exists(f"/proc/{stopped[0]}")  # killed and reaped
    state = es.ExperimentState.load(tmp_path / "stopped")
    assert [t["status"] for t in state.trials] == [es.ERROR, es.TERMINATED]


def _fake_payload(train_result: dict) -> bytes:
    """A worker payload whose "algorithm" is a plain object (nothing to build or compile)."""
    import cloudpickle

    class Algo:
        def train(self):
            return dict(train_result)

        def stop(self):
            pass

    class Config:
        def build_algo(self):
            return Algo()

    registries: dict = {"env": {}, "module_class": {}, "policy_mapping_fn": {}}
    return cloudpickle.dumps((registries, [Config()], [None]))


@pytest.mark.slow  # moved out of the fast tier's 4 minutes (9 s alone)
def test_a_worker_that_stops_answering_is_ended_after_its_timeout():
    """The worker's heartbeat keeps an idle worker alive past its timeout; once stopped
    (SIGSTOP) its next request fails with WorkerTimeout and the process is gone."""
    from rljax.tune import worker

    w = worker.Worker(_fake_payload({"x": 1}), timeout_s=3.0)
    try:
        assert w.request("train") == {"x": 1, "pid": w.pid}
        beats = 0
        while beats < 5:  # idle past its timeout (5 x 0.75 s > 3 s), on heartbeats: events only
            assert w._conn.poll(60), "no heartbeat within 60 s"
            assert w._conn.recv() == ("beat", None)
            beats += 1
        assert w.request("train") == {"x": 1, "pid": w.pid}
        os.kill(w.pid, signal.SIGSTOP)
        with pytest.raises(worker.WorkerTimeout, match=r"pid \d+\) sent nothing for 3 s"):
            w.request("train")
        assert not w._process.is_alive()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(w.pid, signal.SIGKILL)
        w.kill()


UNGUARDED = """
import sys
from rljax import tune
space = {space!r}
space["model_config"]["fcnet_hiddens"] = tune.grid_search([[8], [16]])
tune.Tuner("PPO", param_space=space, tune_config=tune.TuneConfig(max_concurrent_trials=2),
           run_config=tune.RunConfig(name="x", storage_path=sys.argv[1],
                                     stop={{"training_iteration": 1}}, verbose=0)).fit()
"""


@pytest.mark.slow  # a script of its own
def test_a_script_without_the_main_guard_stops_saying_so_and_leaves_no_stray_trials(tmp_path):
    import json
    import subprocess
    import sys

    space = {**SPACE, "model_config": {}}
    (tmp_path / "run.py").write_text(UNGUARDED.format(space=space))
    runs = tmp_path / "runs"
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), str(runs)],
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only
    )
    assert proc.returncode == 1
    assert "MainModuleRerun" in proc.stderr
    assert 'if __name__ == "__main__":' in proc.stderr
    # Only the script's own Tuner wrote: one experiment, its two trials, no worker's.
    assert [p.name for p in runs.iterdir()] == ["x"]
    state = json.loads((runs / "x" / es.STATE_FILE).read_text())
    trial_dirs = sorted(p.name for p in (runs / "x").iterdir() if p.is_dir())
    assert trial_dirs == sorted(t["dir"] for t in state["trials"]) and len(trial_dirs) == 2
    assert [t["status"] for t in state["trials"]] == [es.RUNNING, es.RUNNING]
    assert not list((runs / "x").glob("*/result.json")) or all(
        p.read_text() == "" for p in (runs / "x").glob("*/result.json")
    )


SCRIPT = """
import sys
from rljax import tune
space = {space!r}
space["model_config"]["fcnet_hiddens"] = tune.grid_search([[8], [16]])
if __name__ == "__main__":
    tune.Tuner("PPO", param_space=space, tune_config=tune.TuneConfig(max_concurrent_trials=2),
               run_config=tune.RunConfig(name="x", storage_path=sys.argv[1],
                                         stop={{"training_iteration": 10**9}}, verbose=0)).fit()
"""


BLOCKED_SCRIPT = """
import sys, threading
from rljax import tune
from rljax.tune.tuner import Tuner

def blocked(self, fit, batch, remote=False):  # a batch whose worker never answers
    print("started", flush=True)
    threading.Event().wait()

Tuner._run_batch = blocked
space = {space!r}
space["model_config"]["fcnet_hiddens"] = tune.grid_search([[8], [16]])
if __name__ == "__main__":
    tune.Tuner("PPO", param_space=space, tune_config=tune.TuneConfig(max_concurrent_trials=2),
               run_config=tune.RunConfig(name="x", storage_path=sys.argv[1],
                                         stop={{"training_iteration": 1}}, verbose=0)).fit()
"""


@pytest.mark.slow  # a script of its own
def test_ctrl_c_ends_the_script_even_while_a_batch_s_thread_never_returns(tmp_path):
    """Regression: the batches' threads were a ThreadPoolExecutor's, which the interpreter
    joins at exit, so after Ctrl-C a thread still blocked kept the script alive for ever."""
    import subprocess
    import sys

    space = {**SPACE, "model_config": {}}
    (tmp_path / "run.py").write_text(BLOCKED_SCRIPT.format(space=space))
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert [proc.stdout.readline(), proc.stdout.readline()] == ["started\n"] * 2
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)  # a hang guard; it ends in about a second
    finally:
        proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]


@pytest.mark.slow  # a script of its own
def test_ctrl_c_ends_the_workers_at_once_and_leaves_their_trials_running(tmp_path):
    """Waits on events only (the workers' first results, the process's exit, the workers'
    end); the timeouts are hang guards, far above what a loaded machine takes."""
    import json
    import subprocess
    import sys
    import time

    space = {**SPACE, "model_config": {}}
    (tmp_path / "run.py").write_text(SCRIPT.format(space=space))
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        pids: set[int] = set()
        guard = time.monotonic() + 600
        while len(pids) < 2:  # both workers have reported
            assert proc.poll() is None, "the script ended before both workers reported"
            assert time.monotonic() < guard, "the workers did not report within 600 s"
            time.sleep(0.5)
            for path in (tmp_path / "x").glob("*/result.json"):
                line = path.read_text().split("\n", 1)[0]
                if line:
                    pids.add(json.loads(line)["pid"])
        assert os.getpid() not in pids
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    # The workers were killed, not asked to stop: they are gone once the script is.
    guard = time.monotonic() + 60
    while [pid for pid in pids if os.path.exists(f"/proc/{pid}")]:
        assert time.monotonic() < guard, f"workers {pids} still run 60 s after the script ended"
        time.sleep(0.1)
    state = es.ExperimentState.load(tmp_path / "x")
    assert [t["status"] for t in state.trials] == [es.RUNNING, es.RUNNING]
