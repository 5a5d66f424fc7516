"""Runs a notebook in a Jupyter kernel on the interpreter running pytest (shared by the tests)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from ipykernel.kernelspec import write_kernel_spec
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

KERNEL_NAME = "rljax-notebook-test"
CELL_TIMEOUT_S = 300


def _kernel_manager(tmp_path: Path) -> KernelManager:
    """A kernel on this interpreter, whatever kernel specs the machine has."""
    kernels = tmp_path / "kernels"
    scratch = tmp_path / "tmp"  # the notebook's tempfile directories (the tuning trials' files)
    scratch.mkdir()
    env = {
        "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": str(scratch),
    }
    write_kernel_spec(kernels / KERNEL_NAME, overrides={"display_name": KERNEL_NAME, "env": env})
    spec_manager = KernelSpecManager(kernel_dirs=[str(kernels)])
    assert spec_manager.get_kernel_spec(KERNEL_NAME).argv[0] == sys.executable
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=spec_manager)


def execute_notebook(
    path: Path, tmp_path: Path, extra_cells: tuple[str, ...] = ()
) -> tuple[list[nbformat.NotebookNode], Path]:
    """Executes the notebook (plus ``extra_cells``, in memory only) in ``tmp_path/cwd``.

    Raises on the first failing cell; returns the executed code cells and the working directory.
    """
    nb = nbformat.read(path, as_version=4)
    for source in extra_cells:
        nb.cells.append(nbformat.v4.new_code_cell(source.strip()))
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    client = NotebookClient(
        nb,
        km=_kernel_manager(tmp_path),
        timeout=CELL_TIMEOUT_S,
        startup_timeout=120,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code_cells)
    errors = [o for c in code_cells for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    return code_cells, workdir


def png_outputs(code_cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    return [
        o
        for c in code_cells
        for o in c.outputs
        if o.output_type in ("display_data", "execute_result") and "image/png" in o.get("data", {})
    ]


def stdout(cells: list[nbformat.NotebookNode]) -> str:
    return "".join(
        o.get("text", "")
        for c in cells
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )


def assert_saved_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert code_cells
    for cell in code_cells:
        assert cell.outputs == [], cell.source[:80]
        assert cell.execution_count is None, cell.source[:80]
