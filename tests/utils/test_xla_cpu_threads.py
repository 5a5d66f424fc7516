"""``RLJAX_XLA_CPU_THREADS`` / ``set_xla_cpu_threads``: the CPU client's pool sized through
``PJRT_NPROC`` (checked in fresh processes), ``auto``'s choice, and clear errors for bad values
or a late call.
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

from rljax.utils import cpu_threads
from rljax.utils.cpu_threads import set_xla_cpu_threads, threads_from_env

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
        threads_from_env(value)
    assert threads_from_env(" 3 ") == 3
    assert threads_from_env("Auto") == "auto" and threads_from_env("default") == "default"


def test_auto_takes_one_thread_on_two_cores_unless_the_user_sized_the_pools(monkeypatch):
    for name in ("PJRT_NPROC", "NPROC", "XLA_FLAGS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cpu_threads, "usable_cores", lambda: 2)
    assert cpu_threads.auto_threads() == 1
    monkeypatch.setattr(cpu_threads, "usable_cores", lambda: 8)  # not measured: JAX's default
    assert cpu_threads.auto_threads() is None
    monkeypatch.setattr(cpu_threads, "usable_cores", lambda: 1)
    for name, value in (("PJRT_NPROC", "4"), ("NPROC", "4"), ("XLA_FLAGS", "--xla_x=1")):
        monkeypatch.setenv(name, value)
        assert cpu_threads.auto_threads() is None, name
        monkeypatch.delenv(name)
    # After JAX's backends exist, auto changes nothing and raises nothing.
    jax.devices()
    monkeypatch.delenv("RLJAX_XLA_CPU_THREADS", raising=False)
    assert cpu_threads.apply_environment() is None and "PJRT_NPROC" not in os.environ


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


def _probe(setting: str | None) -> tuple[int, list[str], str | None]:
    unset = ("PJRT_NPROC", "NPROC", "XLA_FLAGS", "RLJAX_XLA_CPU_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    if setting is not None:
        env["RLJAX_XLA_CPU_THREADS"] = setting
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**env, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    threads, cores, nproc = json.loads(proc.stdout.strip().splitlines()[-1])
    return threads, cores, nproc


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux's /proc")
def test_the_setting_sizes_the_pool_and_leaves_the_cores_alone():
    status = Path("/proc/self/status").read_text()
    mine = {status.split("Cpus_allowed_list:")[1].split()[0]}
    threads, cores, nproc = _probe("1")
    assert threads == 1 and nproc == "1"
    assert set(cores) == mine  # every thread may still run on every core the process may
    # Unset (auto): one thread on a machine of at most 2 cores, JAX's default on more.
    threads, cores, nproc = _probe(None)
    if cpu_threads.usable_cores() <= cpu_threads.AUTO_MAX_CORES:
        assert threads == 1 and nproc == "1"
    else:
        assert threads == cpu_threads.usable_cores() and nproc is None


@pytest.mark.slow  # a third fresh process
@pytest.mark.skipif(
    not os.path.isdir("/proc/self/task") or cpu_threads.usable_cores() < 2,
    reason="reads Linux's /proc; needs 2 cores",
)
def test_default_keeps_jaxs_own_pool():
    threads, _, nproc = _probe("default")
    assert threads == cpu_threads.usable_cores() and nproc is None


def test_a_bad_environment_value_stops_the_import_with_its_message():
    proc = subprocess.run(
        [sys.executable, "-c", "import rljax"],
        env={**os.environ, "RLJAX_XLA_CPU_THREADS": "many"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "RLJAX_XLA_CPU_THREADS='many': expected 'auto' (the default), 'default'" in proc.stderr
