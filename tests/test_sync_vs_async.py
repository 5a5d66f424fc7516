"""``notebooks/sync_vs_async.ipynb`` and the ``benchmarks/sync_vs_async.py --quick`` run it makes.

The notebook runs in a Jupyter kernel on this interpreter (as in ``test_notebooks.py``) and must
show the plot. It runs the quick benchmark (``run(parse_args(["--quick", ...]))``, the script's
own entry point; one run serves both checks, as it takes about a minute on 2 cores), whose
JSON must hold all three
parts with positive throughputs, ASYNC well ahead of SYNC when every observation costs 5 ms
(part a), and first-ready batches ahead of lock-step ASYNC when one sub-env is 10x slower
(part c).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from notebook_runner import assert_saved_without_outputs, execute_notebook, png_outputs, stdout

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "sync_vs_async.py"
NOTEBOOK = ROOT / "notebooks" / "sync_vs_async.ipynb"
PARTS = ("a_cartpole_5ms", "b_envpool_atari", "c_uneven_sub_envs")


def test_notebook_is_saved_without_outputs():
    assert_saved_without_outputs(NOTEBOOK)


def check_quick_report(out: Path) -> None:
    report = json.loads((out / "sync_vs_async.json").read_text())
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
    # A sleep takes at least what it asks for: the measured ceiling is at most the nominal one.
    measured = results["a_cartpole_5ms"]["measured_step_cost_s"]
    assert 0.005 <= measured < 0.05
    assert results["a_cartpole_5ms"]["async_ceiling_at_measured_step_cost"] == pytest.approx(
        6 / measured
    )
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
def test_notebook_runs_the_quick_benchmark_and_shows_the_plot(tmp_path):
    code_cells, workdir = execute_notebook(NOTEBOOK, tmp_path)
    images = png_outputs(code_cells)
    assert len(images) == 1, "the plot cell should display exactly one PNG"
    assert len(images[0].data["image/png"]) > 10_000
    assert "env steps/s" in stdout(code_cells)
    check_quick_report(workdir / "results" / "sync_vs_async_quick")
