"""Test settings: JAX on the CPU, one device (multi-device tests run in subprocesses)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# Most of the suite's time is XLA compiling thousands of small programs and processes starting
# (subprocesses, notebook kernels, Ray workers), not running programs. Unless the run sets its
# own, every test process (xdist workers and everything they start: they inherit the
# environment) compiles with most of XLA's optimisations off (JAX's
# ``JAX_DISABLE_MOST_OPTIMIZATIONS``: backend optimisation level 0, no expensive LLVM passes;
# JAX reads it at each compilation, so one test can turn it back on) and sizes JAX's CPU thread
# pool to one thread (two workers on two cores gain nothing from a second intra-op thread each).
# Tests whose time is running programs rather than compiling them (long learning runs of large
# networks, the tuning notebook) carry ``@pytest.mark.xla_optimized`` and compile with XLA's
# full optimisation. Measured on the learning files (``tests/algorithms/test_*learning.py``,
# ``test_recurrent.py``, ``test_ppo_jax_env.py``, ``test_impala.py``; ``-n 0``, an AMD
# EPYC machine), cheap compilation cut most tests' time by up to three quarters (IMPALA on the
# JAX CartPole 17 -> 6 s) and raised the long runs' (the LSTM test 67 -> 108 s, TD3 Pendulum
# 16 -> 54 s, SAC Pendulum 59 -> 83 s); the tuning notebook took 60 s with full optimisation
# and 120 s without. Tests compare programs compiled within one run, so neither setting
# changes what they check.
ROOT = Path(__file__).resolve().parents[1]
_CHEAP_COMPILATION = "JAX_DISABLE_MOST_OPTIMIZATIONS"
# Set by the run's first process (pytest's, before the xdist workers start and inherit it), so
# every worker knows the setting is the suite's own and not the run's.
_SET_BY_SUITE = "RLJAX_TESTS_SET_CHEAP_COMPILATION"
if _CHEAP_COMPILATION not in os.environ:
    os.environ[_CHEAP_COMPILATION] = "1"
    os.environ[_SET_BY_SUITE] = "1"
_SET_HERE = os.environ.get(_SET_BY_SUITE) == "1"
os.environ.setdefault("PJRT_NPROC", "1")
# XLA's CPU fusion emitters (its newer code generation for fused operations) take most of the
# compile time of rljax's larger programs: with them off (``--xla_cpu_use_fusion_emitters=false``,
# XLA's older emitters) SAC's fused iteration compiled in 1.8 s instead of 3.2 s and DQN's in
# 1.6 s instead of 2.7 s (the schedules test's configs, cheap compilation, one process each), and
# the fast tier ran in 2:58 instead of 4:34 on this project's 2-core machine. Tests whose time is
# running programs lose nothing measurable (MinAtar PPO 50 -> 46 s, PPO at PureJaxRL's settings
# 20 -> 22 s, TD3 Pendulum 16.4 -> 15.8 s; ``-n 0``). It goes into ``XLA_FLAGS`` (read once, when
# JAX creates its CPU client), so every worker and subprocess inherits it; a run whose
# ``XLA_FLAGS`` names the option keeps its own value. rljax's per-program options
# (``rljax.utils.xla_options``) leave a flag set in ``XLA_FLAGS`` alone, as they do for users.
_FUSION_EMITTERS = "xla_cpu_use_fusion_emitters"
if _FUSION_EMITTERS not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" --{_FUSION_EMITTERS}=false"
    ).strip()
_CACHE_ENV = "RLJAX_COMPILATION_CACHE"
_CACHE_KEY = pytest.StashKey[str]()


def pytest_configure(config):
    """One persistent XLA compilation cache for the whole run (``RLJAX_COMPILATION_CACHE``, set
    before the xdist workers start, so they, the tests' subprocesses, notebook kernels and Ray
    workers inherit it): the tiny programs that many tests build in processes of their own are
    compiled once per run. A run started with the variable set uses that directory instead; the
    cache holds compiled programs only and never changes what a program computes."""
    if os.environ.get(_CACHE_ENV):
        return
    os.environ[_CACHE_ENV] = tempfile.mkdtemp(prefix="rljax-test-xla-")
    config.stash[_CACHE_KEY] = os.environ[_CACHE_ENV]


def pytest_unconfigure(config):
    directory = config.stash.get(_CACHE_KEY, None)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _tempfile_under_pytests_directory(tmp_path_factory):
    """What the tests' own process makes with ``tempfile`` (``algo.save()``'s default
    directory, the example scripts' checkpoints, Jupyter kernels' connection files) goes under
    pytest's temporary directory, which pytest prunes, instead of staying in /tmp after every
    run. Subprocesses keep their ``TMPDIR`` (Ray's socket paths must stay short)."""
    before = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tempfile"))
    yield
    tempfile.tempdir = before


@pytest.fixture
def run_benchmark():
    """Runs ``benchmarks/<script> *args`` as a user would; returns the JSON it printed."""

    def run(script: str, *args: str, timeout: float = 600) -> dict:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / script), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            env={**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout)

    return run


@pytest.fixture
def load_benchmark(monkeypatch):
    """``load_benchmark(name)``: the module ``benchmarks/<name>.py``, imported from its file
    (so a test measures or trains with the benchmark's own settings and envs), with
    ``benchmarks/`` on ``sys.path`` for the test, as ``python benchmarks/<name>.py`` has it (the
    scripts import their sibling ``common``)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def train_until():
    """``train_until(algo, target, max_steps)``: trains until the smoothed return reaches
    ``target`` or ``max_steps`` env steps were sampled; returns the last result."""

    def run(algo, target: float, max_steps: int) -> dict:
        while True:
            result = algo.train()
            ret = result["env_runners"]["episode_return_mean"]
            if ret >= target or result["num_env_steps_sampled_lifetime"] >= max_steps:
                return result

    return run


@pytest.fixture(autouse=True)
def _xla_optimized(request):
    """A test marked ``xla_optimized`` compiles (and its subprocesses compile) with XLA's full
    optimisation, unless the run set ``JAX_DISABLE_MOST_OPTIMIZATIONS`` itself."""
    if not _SET_HERE or request.node.get_closest_marker("xla_optimized") is None:
        yield
        return
    import jax

    before = os.environ.pop(_CHEAP_COMPILATION, None)
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", True)
        if before is not None:
            os.environ[_CHEAP_COMPILATION] = before


def pytest_collection_modifyitems(config, items):
    """Slow tests (learning, notebooks, benchmarks) first. Under xdist's ``worksteal`` the first
    worker's share of the list then starts with all of them, and the other worker, once done
    with its short tests, takes slow ones over from the end of that share. (Dealing the slow
    tests out to the head of every share instead was measured: 24:24 for the whole suite
    against 23:54, no gain, so the simple order stays.)"""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
