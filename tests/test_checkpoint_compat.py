"""Checkpoints written by an earlier main load and act the same.

The folder ``tests/data/checkpoints_b2758ed`` was written by commit b2758ed (the main the house's second
step started from) with ``make_checkpoints.py`` beside it: PPO and DQN on CartPole and SAC on Pendulum,
each after one ``train()``, plus the greedy actions each took on five fixed observations. Any change to
the code that reads checkpoints must keep these loading and acting identically.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rljax.algorithms.algorithm import Algorithm

DATA = Path(__file__).parent / "data" / "checkpoints_b2758ed"
EXPECTED = json.loads((DATA / "expected_actions.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_checkpoint_from_b2758ed_loads_and_acts_the_same(name: str, tmp_path: Path) -> None:
    # A copy: loading must not need to write, and the repository's files stay as committed.
    shutil.copytree(DATA / name, tmp_path / name)
    algo = Algorithm.from_checkpoint(tmp_path / name)
    try:
        obs = np.asarray(EXPECTED[name]["obs"], dtype=np.float32)
        actions = np.asarray(algo.compute_actions(obs, explore=False))
        expected = np.asarray(EXPECTED[name]["actions"])
        assert actions.shape == expected.shape
        if np.issubdtype(expected.dtype, np.integer):
            np.testing.assert_array_equal(actions, expected)
        else:
            np.testing.assert_allclose(actions, expected, rtol=1e-5, atol=1e-6)
        assert algo.training_iteration == 1
    finally:
        algo.stop()
