"""``benchmarks/sync_vs_async.py --quick`` and ``notebooks/sync_vs_async.ipynb`` run end to end.

The benchmark runs as a command, as a user would; its JSON must hold all three parts with
positive throughputs, ASYNC well ahead of SYNC when every observation costs 5 ms (part a), and
first-ready batches ahead of lock-step ASYNC when one sub-env is 10x slower (part c). The notebook
runs in a Jupyter kernel on this interpreter (as in ``test_notebooks.py``) and must show the plot.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "sync_vs_async.py"
NOTEBOOK = ROOT / "notebooks" / "sync_vs_async.ipynb"
KERNEL_NAME = "rljax-sync-vs-async-test"
CELL_TIMEOUT_S = 300
PARTS = ("a_cartpole_5ms", "b_envpool_atari", "c_uneven_sub_envs")


def _kernel_manager(tmp_path: Path) -> KernelManager:
    """A kernel on the interpreter running pytest, whatever kernel specs the machine has."""
    kernels = tmp_path / "kernels"
    env = {"JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"), "PYTHONUNBUFFERED": "1"}
    write_kernel_spec(kernels / KERNEL_NAME, overrides={"display_name": KERNEL_NAME, "env": env})
    spec_manager = KernelSpecManager(kernel_dirs=[str(kernels)])
    assert spec_manager.get_kernel_spec(KERNEL_NAME).argv[0] == sys.executable
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=spec_manager)


def test_notebook_is_saved_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert code_cells
    for cell in code_cells:
        assert cell.outputs == [], cell.source[:80]
        assert cell.execution_count is None, cell.source[:80]


@pytest.mark.slow
def test_quick_benchmark_writes_all_parts(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report == json.loads((out / "sync_vs_async.json").read_text())
    assert report["quick"] is True
    assert (out / "sync_vs_async.png").stat().st_size > 10_000
    with (out / "sync_vs_async.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {r["part"] for r in rows} == {"a", "b", "c"}

    results = report["results"]
    assert set(results) == set(PARTS)
    for part in PARTS:
        assert results[part]["status"] == "ok", results[part]
        assert results[part]["runs"]
        for key, run in results[part]["runs"].items():
            assert run["status"] == "ok", (part, key, run)
            assert run["env_steps_per_s"] > 0, (part, key)
            assert run["env_calls_per_s"] >= run["env_steps_per_s"], (part, key)

    a = results["a_cartpole_5ms"]["runs"]
    assert {"SYNC", "ASYNC", "ASYNC_sample_async"} <= set(a)
    sync = a["SYNC"]["env_steps_per_s"]
    assert a["SYNC"]["ideal_env_steps_per_s"] == pytest.approx(200.0)
    for key in ("ASYNC", "ASYNC_sample_async"):
        assert a[key]["ideal_env_steps_per_s"] == pytest.approx(1200.0)
        assert a[key]["env_steps_per_s"] > 2 * sync, (key, a[key]["env_steps_per_s"], sync)
    assert a["ASYNC_sample_async"]["sample_async"] is True
    reference = results["a_cartpole_5ms"]["rllib_reference"]
    assert reference["env_steps_per_s"] == {"SYNC": 152.0, "ASYNC": 772.0}
    assert "not by this script" in reference["source"]

    b = results["b_envpool_atari"]["runs"]
    assert {run["gym_env_vectorize_mode"] for run in b.values()} == {"SYNC", "ASYNC"}

    c = results["c_uneven_sub_envs"]["runs"]
    first_ready = c["ASYNC_first_ready"]["env_steps_per_s"]
    lock_step = c["ASYNC_lock_step"]["env_steps_per_s"]
    assert first_ready > lock_step, (first_ready, lock_step)
    assert c["ASYNC_first_ready"]["async_batch_size"] == 4
    assert c["ASYNC_lock_step"]["async_batch_size"] is None


@pytest.mark.slow
def test_notebook_runs_and_shows_the_plot(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    client = NotebookClient(
        nb,
        km=_kernel_manager(tmp_path),
        timeout=CELL_TIMEOUT_S,
        startup_timeout=120,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell

    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code_cells)
    errors = [o for c in code_cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    images = [
        o
        for c in code_cells
        for o in c.outputs
        if o.output_type in ("display_data", "execute_result") and "image/png" in o.get("data", {})
    ]
    assert len(images) == 1, "the plot cell should display exactly one PNG"
    assert len(images[0].data["image/png"]) > 10_000
    stdout = "".join(
        o.get("text", "") for c in code_cells for o in c.outputs if o.output_type == "stream"
    )
    assert "env steps/s" in stdout
    assert (workdir / "results" / "sync_vs_async_quick" / "sync_vs_async.json").is_file()
