"""``set_xla_cpu_threads`` / ``RLJAX_XLA_CPU_THREADS``: the CPU client's pool sized through
``PJRT_NPROC`` (checked in a fresh process), the choice the first algorithm's build makes when
the variable is unset (one thread for PPO, APPO or DQN with a dense model on a flat EnvPool
task on a machine of at most 2 cores, unless the environment sizes the pools or sets
``XLA_FLAGS``), and clear errors for bad values or a late call.
(``tests/test_benchmarks.py``'s run of ``benchmarks/xla_cpu_threads.py`` compares a process
started each way.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from rljax.algorithms.ppo import PPO, PPOConfig
from rljax.algorithms.sac import SAC
from rljax.utils import xla_threads
from rljax.utils.jit import set_xla_cpu_threads, xla_cpu_threads_from_env
from rljax.utils.xla_threads import (
    auto_xla_cpu_threads,
    choose_at_build,
    dense_on_flat_envpool,
    xla_cpu_threads_at_import,
)

# The CPU client's pool threads (XLA names them) and every thread's allowed cores.
PROBE = """
import json
import os
import rljax
import jax
jax.numpy.ones(3).block_until_ready()
tasks = os.listdir("/proc/self/task")
names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in tasks]
cores = {open(f"/proc/self/task/{t}/status").read().split("Cpus_allowed_list:")[1].split()[0]
         for t in tasks}
print(json.dumps([names.count("tf_XLAEigen"), sorted(cores), os.environ.get("PJRT_NPROC")]))
"""


@pytest.mark.parametrize("n", [0, -1, True, 1.5, "2"])
def test_a_bad_thread_count_is_refused_naming_it(n):
    with pytest.raises(ValueError, match=f"n={n!r}"):
        set_xla_cpu_threads(n)


@pytest.mark.parametrize("value", ["", "abc", "0", "-2", "1.5"])
def test_a_bad_environment_value_is_refused_naming_it(value):
    with pytest.raises(ValueError, match="RLJAX_XLA_CPU_THREADS=" + repr(value)):
        xla_cpu_threads_from_env(value)
    assert xla_cpu_threads_from_env(" 3 ") == 3


@pytest.mark.parametrize(
    "environ, cores, expected",
    [
        ({}, 2, 1),
        ({}, 1, 1),
        ({"XLA_FLAGS": "  "}, 2, 1),  # blank: no flag set
        ({}, 3, None),  # larger machines keep XLA's sizing (not measured there)
        ({"PJRT_NPROC": "4"}, 2, None),  # the environment already sizes the pools
        ({"NPROC": "2"}, 2, None),
        ({"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, 2, None),
    ],
)
def test_the_automatic_choice_is_one_thread_on_two_cores_unless_something_else_decides(
    monkeypatch, environ, cores, expected
):
    monkeypatch.setattr(xla_threads, "_backends_initialized", lambda: False)
    assert auto_xla_cpu_threads(environ, cores=cores) == expected
    monkeypatch.setattr(xla_threads, "_backends_initialized", lambda: True)
    assert auto_xla_cpu_threads(environ, cores=cores) is None  # too late: left as it is


def test_the_import_sets_only_a_number_and_names_a_bad_value():
    assert xla_cpu_threads_at_import({}) is None  # unset: the first build chooses
    assert xla_cpu_threads_at_import({"RLJAX_XLA_CPU_THREADS": " Auto "}) is None
    assert xla_cpu_threads_at_import({"RLJAX_XLA_CPU_THREADS": "xla"}) is None
    assert xla_cpu_threads_at_import({"RLJAX_XLA_CPU_THREADS": "4", "XLA_FLAGS": "-x"}) == 4
    with pytest.raises(ValueError, match=r"RLJAX_XLA_CPU_THREADS='many'.*'auto'.*'xla'"):
        xla_cpu_threads_at_import({"RLJAX_XLA_CPU_THREADS": "many"})


def _ppo(env="CartPole-v1", env_config=None, **model):
    return PPOConfig().environment(env, env_config=env_config).rl_module(model_config=model)


@pytest.fixture
def two_fresh_cores(monkeypatch):
    """This process as a 2-core machine whose JAX client does not exist yet, with nothing in
    the environment that sizes its pools; ``PJRT_NPROC`` is restored afterwards."""
    monkeypatch.setattr(xla_threads, "_backends_initialized", lambda: False)
    monkeypatch.setattr(xla_threads, "usable_cores", lambda: 2)
    for name in ("PJRT_NPROC", "NPROC", "XLA_FLAGS", "RLJAX_XLA_CPU_THREADS"):
        monkeypatch.delenv(name, raising=False)
    yield
    xla_threads.release_choice()


@pytest.mark.parametrize(
    "config, dense",
    [
        (lambda: _ppo(), True),  # RLlib's default 256x256 network on CartPole's 4 numbers
        (lambda: _ppo("Pendulum-v1", fcnet_hiddens=[64, 64]), True),
        (lambda: _ppo(use_lstm=True), False),  # measured slower on one thread
        (lambda: _ppo(conv_filters=[[16, [3, 3], 1]]), False),
        (lambda: _ppo("Pong-v5"), False),  # frames: RLlib's conv encoder
        (lambda: _ppo("FrozenLake-v1"), False),  # EnvPool's, but one discrete state
        (lambda: _ppo("Pendulum-v1", env_config={"no_such_setting": 1}), False),  # refused
        (lambda: _ppo("Pong-v5", env_config={"frameskip": 4}), False),  # ALE's name: frames
        (lambda: _ppo("gymnax:CartPole-v1"), False),  # a JAX env (not measured better)
        (lambda: _ppo().multi_agent(policies={"p0"}, policy_mapping_fn=lambda a, *_: "p0"), False),
    ],
)
def test_the_build_chooses_one_thread_only_for_a_dense_model_on_a_flat_envpool_task(
    monkeypatch, two_fresh_cores, config, dense
):
    config = config()
    assert dense_on_flat_envpool(config) is dense  # raises, rather than answers, on a failure
    assert choose_at_build(config, PPO) == (1 if dense else None)
    assert os.environ.get("PJRT_NPROC") == ("1" if dense else None)
    xla_threads.release_choice()  # what the build does once JAX's client exists
    assert "PJRT_NPROC" not in os.environ  # processes started later choose for themselves
    assert choose_at_build(config, SAC) is None  # measured slower on one thread
    monkeypatch.setenv("RLJAX_XLA_CPU_THREADS", "xla")  # XLA's sizing, whatever the model
    assert choose_at_build(config, PPO) is None
    monkeypatch.setenv("RLJAX_XLA_CPU_THREADS", "auto")
    monkeypatch.setattr(xla_threads, "usable_cores", lambda: 4)  # larger machines: XLA's
    assert choose_at_build(config, PPO) is None
    assert "PJRT_NPROC" not in os.environ


def test_appo_and_dqn_were_measured_faster_on_one_thread_too(two_fresh_cores):
    from rljax.algorithms.appo import APPO, APPOConfig
    from rljax.algorithms.dqn import DQN, DQNConfig

    for algorithm, config in ((APPO, APPOConfig()), (DQN, DQNConfig())):
        assert choose_at_build(config.environment("CartPole-v1"), algorithm) == 1
        xla_threads.release_choice()


def test_the_choice_never_stops_a_build(monkeypatch, two_fresh_cores):
    def broken(config):
        raise RuntimeError("unreadable")

    original = xla_threads.dense_on_flat_envpool
    monkeypatch.setattr(xla_threads, "dense_on_flat_envpool", broken)
    assert choose_at_build(_ppo(), PPO) is None
    monkeypatch.setattr(xla_threads, "dense_on_flat_envpool", original)
    assert choose_at_build(_ppo(), PPO) == 1  # the same config, readable: chosen
    xla_threads.release_choice()
    monkeypatch.setenv("RLJAX_XLA_CPU_THREADS", "many")  # changed after the import read it
    assert choose_at_build(_ppo(), PPO) is None
    assert "PJRT_NPROC" not in os.environ


def test_a_blank_pjrt_nproc_counts_as_unset(monkeypatch):
    monkeypatch.setattr(xla_threads, "_backends_initialized", lambda: False)
    monkeypatch.setenv("PJRT_NPROC", " ")
    assert set_xla_cpu_threads(1) == 1 and os.environ["PJRT_NPROC"] == "1"


def test_a_late_call_is_refused_with_the_fix_and_an_equal_pjrt_nproc_is_kept(monkeypatch):
    jax.devices()  # this process's backends exist
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    with pytest.raises(RuntimeError, match="before the process's first JAX call"):
        set_xla_cpu_threads(1)
    assert "PJRT_NPROC" not in os.environ
    monkeypatch.setenv("PJRT_NPROC", "2")  # inherited from a parent that asked for 2
    assert set_xla_cpu_threads(np.int64(2)) == 2
    with pytest.raises(ValueError, match="PJRT_NPROC='2' is already set"):
        set_xla_cpu_threads(1)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux's /proc")
def test_the_environment_variable_sizes_the_pool_and_leaves_the_cores_alone():
    env = {k: v for k, v in os.environ.items() if k not in ("PJRT_NPROC", "NPROC")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**env, "JAX_PLATFORMS": "cpu", "RLJAX_XLA_CPU_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    threads, cores, nproc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert threads == 1 and nproc == "1"
    status = Path("/proc/self/status").read_text()
    mine = {status.split("Cpus_allowed_list:")[1].split()[0]}
    assert set(cores) == mine  # every thread may still run on every core the process may


BUILD_PROBE = """
import json
import os
import rljax
from rljax.algorithms.dqn import DQN
from rljax.algorithms.ppo import PPO, PPOConfig
before = os.environ.get("PJRT_NPROC")
config = PPOConfig().environment("CartPole-v1").training(
    train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1
)
config.rl_module(model_config={"fcnet_hiddens": [8]}).build_algo()
names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
print(json.dumps([before, names.count("tf_XLAEigen"), os.environ.get("PJRT_NPROC")]))
"""


@pytest.mark.slow  # a fresh process that builds PPO: about 4 s
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux's /proc")
def test_a_fresh_process_gets_its_pool_from_the_first_build():
    cleared = ("PJRT_NPROC", "NPROC", "XLA_FLAGS", "RLJAX_XLA_CPU_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in cleared}
    proc = subprocess.run(
        [sys.executable, "-c", BUILD_PROBE],
        env={**env, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    before, threads, nproc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert before is None and nproc is None  # import alone sizes nothing; the build's choice
    # is taken back out of the environment once the client has read it
    if xla_threads.usable_cores() <= xla_threads.AUTO_ONE_THREAD_MAX_CORES:
        assert threads == 1  # chosen before the build's first JAX call
    else:  # XLA's sizing: one pool thread per core
        assert threads == xla_threads.usable_cores()


def test_a_bad_environment_value_stops_the_import_with_its_message():
    proc = subprocess.run(
        [sys.executable, "-c", "import rljax"],
        env={**os.environ, "RLJAX_XLA_CPU_THREADS": "many"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "RLJAX_XLA_CPU_THREADS='many': expected a whole number" in proc.stderr
