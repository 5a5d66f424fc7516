"""rljax's own example scripts, in RLlib's style, each run for one iteration with its own
flags as a user would (``python -m rljax.examples...``), in this process."""

from __future__ import annotations

import runpy
import sys

import pytest

from rljax.utils import once

SCRIPTS = [
    ("rljax.examples.algorithms.ppo.cartpole_ppo", ["--no-tune"]),
    ("rljax.examples.algorithms.dqn.cartpole_dqn", ["--verbose=0"]),
    ("rljax.examples.evaluation.custom_evaluation", ["--no-tune"]),
    ("rljax.examples.evaluation.evaluation_parallel_to_training", ["--no-tune"]),
    ("rljax.examples.curriculum.curriculum_learning", ["--no-tune"]),
    ("rljax.examples.checkpoints.continue_training_from_checkpoint", []),
    ("rljax.examples.fault_tolerance.crashing_cartpole", ["--no-tune", "--num-env-runners=1"]),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "flags"), SCRIPTS, ids=[m.rsplit(".", 1)[1] for m, _ in SCRIPTS]
)
def test_example_script_runs_one_iteration(module, flags, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RLJAX_RESULTS_DIR", str(tmp_path))
    monkeypatch.setitem(once.SAID, "rllib_only", set())
    monkeypatch.setattr(sys, "argv", [module, "--stop-iters=1", *flags])
    runpy.run_module(module, run_name="__main__", alter_sys=False)
    out = capsys.readouterr().out
    if "--no-tune" in flags:
        assert "iter=0 R=" in out and "Stop criterium (training_iteration=1) fulfilled!" in out
    if module.endswith("continue_training_from_checkpoint"):
        assert "continued: iteration 2" in out
    if module.endswith("evaluation_parallel_to_training"):
        assert "evaluation: " in out  # the script's own callback checked the counts


def test_every_example_script_is_in_the_list():
    from pathlib import Path

    import rljax.examples

    root = Path(rljax.examples.__file__).parent
    found = {
        "rljax.examples." + ".".join(p.relative_to(root).with_suffix("").parts)
        for p in root.rglob("*.py")
        if "add_rllib_example_script_args(" in p.read_text()
    }
    assert found == {m for m, _ in SCRIPTS}
