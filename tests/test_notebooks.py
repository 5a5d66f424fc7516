"""Runs ``notebooks/quickstart.ipynb`` end to end in a Jupyter kernel.

The notebook checks itself with ``assert`` statements (a failing cell fails the test); the test
then reads the kernel's variables through one extra cell and checks the plot was drawn.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"
KERNEL_NAME = "rljax-notebook-test"
CELL_TIMEOUT_S = 300
SUMMARY_MARKER = "RLJAX_NOTEBOOK_SUMMARY="

# Appended to the in-memory copy only: reports what the notebook computed.
SUMMARY_CELL = f"""
import json as _json
print({SUMMARY_MARKER!r} + _json.dumps({{
    "env_steps": [int(s) for s in env_steps],
    "returns": [float(r) for r in returns],
    "same_actions": bool(np.array_equal(actions, restored_actions)),
    "num_observations": int(len(obs_batch)),
    "restored_iteration": int(restored.iteration),
    "iteration": int(algo.iteration),
    "episode_returns": [float(r) for r in episode_returns],
    "evaluation_return_mean": float(evaluation["env_runners"]["episode_return_mean"]),
}}))
"""


def _kernel_manager(tmp_path: Path) -> KernelManager:
    """A kernel on the interpreter running pytest, whatever kernel specs the machine has."""
    kernels = tmp_path / "kernels"
    env = {"JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"), "PYTHONUNBUFFERED": "1"}
    write_kernel_spec(kernels / KERNEL_NAME, overrides={"display_name": KERNEL_NAME, "env": env})
    spec_manager = KernelSpecManager(kernel_dirs=[str(kernels)])
    assert spec_manager.get_kernel_spec(KERNEL_NAME).argv[0] == sys.executable
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=spec_manager)


def _stdout(cell: nbformat.NotebookNode) -> str:
    return "".join(
        o.get("text", "")
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )


def test_quickstart_is_saved_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert code_cells
    for cell in code_cells:
        assert cell.outputs == [], cell.source[:80]
        assert cell.execution_count is None, cell.source[:80]


@pytest.mark.slow
def test_quickstart_notebook_runs(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(SUMMARY_CELL.strip()))
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
    assert len(images) == 1, "the learning-curve cell should display exactly one PNG"
    assert len(images[0].data["image/png"]) > 1000

    lines = [ln for ln in _stdout(code_cells[-1]).splitlines() if ln.startswith(SUMMARY_MARKER)]
    assert len(lines) == 1, code_cells[-1].outputs
    summary = json.loads(lines[0][len(SUMMARY_MARKER) :])

    steps, returns = summary["env_steps"], summary["returns"]
    assert 1 <= len(returns) == len(steps) <= 60
    assert returns[-1] >= 450.0
    assert all(b > a for a, b in zip(steps, steps[1:], strict=False))
    assert summary["same_actions"] is True
    assert summary["num_observations"] == 256
    assert summary["restored_iteration"] == summary["iteration"] == len(returns)
    assert len(summary["episode_returns"]) == 5
    assert all(0.0 < r <= 500.0 for r in summary["episode_returns"])
    assert math.isfinite(summary["evaluation_return_mean"])
    assert summary["evaluation_return_mean"] >= 300.0
