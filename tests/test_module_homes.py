"""The jobs ``Algorithm`` hands out live in modules of their own: each imports first in a fresh
interpreter, the inference module imports nothing of ``rljax.algorithms`` at module level, and
the names that moved stay importable from ``rljax.algorithms.algorithm`` as the same objects."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import rljax.algorithms.algorithm as algorithm
from rljax.callbacks import runner_hooks
from rljax.core.rl_module import inputs, rl_module
from rljax.execution import checkpoints, episode_stats, evaluation, weights
from rljax.runners import build

ROOT = Path(__file__).resolve().parents[1]

MOVED = {
    "RLModule": rl_module,
    "RecurrentActor": rl_module,
    "rllib_module_path": rl_module,
    "_checked_leaf": inputs,
    "_checked_structure": inputs,
    "EpisodeStats": episode_stats,
    "SavedMetadata": checkpoints,
    "checked_metadata": checkpoints,
    "check_runner_state_schema": checkpoints,
    "_checked_load": checkpoints,
    "_LoadedCheckpoint": checkpoints,
    "_saved_spaces": checkpoints,
    "_check_policy_mapping": checkpoints,
    "_in_saved_policy_order": checkpoints,
    "check_weights_fit": weights,
    "_replace_leaves": weights,
    "needs_x64": build,
}


@pytest.mark.parametrize("name", sorted(MOVED))
def test_moved_names_stay_importable_from_algorithm(name):
    assert getattr(algorithm, name) is getattr(MOVED[name], name)


def test_each_new_module_imports_first_in_a_fresh_interpreter():
    modules = [
        m.__name__
        for m in (rl_module, inputs, checkpoints, episode_stats, evaluation, weights, build)
    ] + [runner_hooks.__name__]
    for module in modules:
        out = subprocess.run(
            [sys.executable, "-c", f"import {module}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, f"import {module}: {out.stderr[-2000:]}"


def test_rl_module_imports_no_algorithm_at_module_level():
    tree = ast.parse(Path(rl_module.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in top
        for a in (n.names if isinstance(n, ast.Import) else [None])
    ]
    assert names and not [m for m in names if m and m.startswith("rljax.algorithms")]


def test_algorithm_reads_checkpoints_through_the_state_hooks():
    hooks = {
        name
        for name, value in vars(checkpoints.StateHooks).items()
        if callable(value) and name.startswith("_") and not name.startswith("__")
    }
    assert hooks == {
        "_checkpoint_state",
        "_check_loaded_state",
        "_restore_state",
        "_inference_target",
    }
    assert all(callable(getattr(algorithm.Algorithm, h)) for h in hooks)
