"""``set_xla_cpu_threads`` / ``RLJAX_XLA_CPU_THREADS``: clear errors for bad values or a late
call. (The pool's size and the cores given back are checked in two fresh processes by
``tests/test_benchmarks.py``'s run of ``benchmarks/xla_cpu_threads.py``.)"""

import os
import subprocess
import sys

import jax
import pytest

from rljax.utils.jit import set_xla_cpu_threads, xla_cpu_threads_from_env


@pytest.mark.parametrize("n", [0, -1, True, 1.5, "2"])
def test_a_bad_thread_count_is_refused_naming_it(n):
    with pytest.raises(ValueError, match=f"n={n!r}"):
        set_xla_cpu_threads(n)


@pytest.mark.parametrize("value", ["", "abc", "0", "-2", "1.5"])
def test_a_bad_environment_value_is_refused_naming_it(value):
    with pytest.raises(ValueError, match="RLJAX_XLA_CPU_THREADS=" + repr(value)):
        xla_cpu_threads_from_env(value)
    assert xla_cpu_threads_from_env(" 3 ") == 3


def test_a_call_after_jax_started_is_refused_with_the_fix():
    jax.devices()  # this process's backends exist
    with pytest.raises(RuntimeError, match="RLJAX_XLA_CPU_THREADS=1 in the environment"):
        set_xla_cpu_threads(1)


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
