"""Runs ``notebooks/quickstart.ipynb`` end to end in a Jupyter kernel.

The notebook checks itself with ``assert`` statements (a failing cell fails the test); the test
then reads the kernel's variables through one extra cell and checks the plot was drawn.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from notebook_runner import (
    assert_saved_without_outputs,
    execute_notebook,
    png_outputs,
    stdout,
)

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"
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


def test_quickstart_is_saved_without_outputs():
    assert_saved_without_outputs(NOTEBOOK)


@pytest.mark.slow
def test_quickstart_notebook_runs(tmp_path):
    code_cells, _ = execute_notebook(NOTEBOOK, tmp_path, extra_cells=(SUMMARY_CELL,))
    images = png_outputs(code_cells)
    assert len(images) == 1, "the learning-curve cell should display exactly one PNG"
    assert len(images[0].data["image/png"]) > 1000

    lines = [ln for ln in stdout(code_cells[-1:]).splitlines() if ln.startswith(SUMMARY_MARKER)]
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
    videos = [
        out.data["text/html"]
        for cell in code_cells
        for out in cell.outputs
        if "text/html" in out.get("data", {}) and "<video" in out.data["text/html"]
    ]
    assert len(videos) == 1 and len(videos[0]) > 10_000  # an MP4 embedded inline (base64)


MULTI_AGENT = NOTEBOOK.parent / "multi_agent.ipynb"
MA_SUMMARY_CELL = f"""
import json as _json
print({SUMMARY_MARKER!r} + _json.dumps({{
    "cartpole": {{p: [float(r) for r in c] for p, c in curves.items()}},
    "evaluation": evaluation["module_episode_returns_mean"],
    "rps_learner": [float(r) for r in learner_returns],
    "opponent_unchanged": bool(opponent_unchanged),
    "ttt_games": int(ttt_runners["num_episodes"]),
    "ttt_agents": sorted(ttt_runners["agent_episode_returns_mean"]),
}}))
"""


def test_multi_agent_notebook_is_saved_without_outputs():
    assert_saved_without_outputs(MULTI_AGENT)


@pytest.mark.slow
def test_multi_agent_notebook_runs(tmp_path, monkeypatch):
    """The tutorial's two CartPole agents (a policy each, 4 envs per runner) both reach 400,
    also greedily; the learner beats the frozen rock player; tic-tac-toe games finish (in one
    iteration: the notebook's ``RLJAX_NOTEBOOK_QUICK``)."""
    monkeypatch.setenv("RLJAX_NOTEBOOK_QUICK", "1")  # the kernel inherits the environment
    code_cells, _ = execute_notebook(MULTI_AGENT, tmp_path, extra_cells=(MA_SUMMARY_CELL,))
    assert len(png_outputs(code_cells)) == 1
    lines = [ln for ln in stdout(code_cells[-1:]).splitlines() if ln.startswith(SUMMARY_MARKER)]
    summary = json.loads(lines[0][len(SUMMARY_MARKER) :])
    cartpole = summary["cartpole"]
    assert set(cartpole) == {"policy_1", "policy_2"}
    assert min(curve[-1] for curve in cartpole.values()) >= 400
    assert min(summary["evaluation"].values()) >= 400
    assert summary["rps_learner"][-1] >= 7.0 and summary["opponent_unchanged"]
    assert summary["ttt_games"] > 0 and summary["ttt_agents"] == ["player1", "player2"]


TUNING = NOTEBOOK.parent / "tuning.ipynb"
TUNING_SUMMARY_CELL = f"""
import json as _json
print({SUMMARY_MARKER!r} + _json.dumps({{
    "seed_trials": len(analysis.trials),
    "seed_best_lr": analysis.best_config["lr"],
    "seed_steps": [t.metrics["num_env_steps_sampled_lifetime"] for t in analysis.trials],
    "population_curves": {{k: [float(x) for x in v] for k, v in curves.items()}},
    "population_reached": int(reached),
    "pbt_perturbations": int(pbt.num_perturbations),
    "pbt_lrs": [float(r.config["lr"]) for r in pbt_grid],
    "pbt_finals": [float(x) for x in finals],
}}))
"""


def test_tuning_notebook_is_saved_without_outputs():
    assert_saved_without_outputs(TUNING)


@pytest.mark.xla_optimized
@pytest.mark.slow
def test_tuning_notebook_runs(tmp_path, monkeypatch):
    """The seed's grid gives three trials (capped at 6,000 env steps each by the notebook's
    ``RLJAX_NOTEBOOK_QUICK``); the 8-trial population learns CartPole (most trials reach 450)
    and draws one plot; PBT on Acrobot perturbs and improves on a random policy."""
    monkeypatch.setenv("RLJAX_NOTEBOOK_QUICK", "1")  # the kernel inherits the environment
    code_cells, _ = execute_notebook(TUNING, tmp_path, extra_cells=(TUNING_SUMMARY_CELL,))
    assert len(png_outputs(code_cells)) == 1
    lines = [ln for ln in stdout(code_cells[-1:]).splitlines() if ln.startswith(SUMMARY_MARKER)]
    summary = json.loads(lines[0][len(SUMMARY_MARKER) :])
    assert summary["seed_trials"] == 3 and summary["seed_best_lr"] in (1e-3, 5e-4, 1e-4)
    assert all(0 < s <= 6_000 for s in summary["seed_steps"])  # the quick cap took effect
    curves = summary["population_curves"]
    assert len(curves) == 8
    assert summary["population_reached"] >= 6
    assert summary["pbt_perturbations"] == 3  # after iterations 3, 6, 9 (12 is the last)
    assert len(summary["pbt_lrs"]) == 8
    # A random policy on Acrobot scores about -500; the best trial learned.
    assert max(summary["pbt_finals"]) > -200
