"""``set_xla_cpu_threads`` / ``RLJAX_XLA_CPU_THREADS``: the CPU client's pool sized through
``PJRT_NPROC`` (checked in a fresh process), and clear errors for bad values or a late call.
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

from rljax.utils.jit import set_xla_cpu_threads, xla_cpu_threads_from_env

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
