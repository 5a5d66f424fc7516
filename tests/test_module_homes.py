"""The jobs ``Algorithm`` hands out live in modules of their own: each imports first (no rljax
module loaded before it), the inference module imports nothing of ``rljax.algorithms`` at
module level, and the names that moved stay importable from ``rljax.algorithms.algorithm`` as
the same objects."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import rljax.algorithms.algorithm as algorithm
from rljax.algorithms import algorithm_evaluation, algorithm_runners
from rljax.callbacks import runner_hooks
from rljax.core.rl_module import inference, inputs, rl_module
from rljax.execution import build as execution_build
from rljax.execution import checkpoints, episode_stats, evaluation, iteration, weights
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
    "empty_outputs": inference,
}

# The ``Algorithm`` class stays RLlib's facade (config + parts + loop, RLlib's public methods),
# and no module grows past what one reads through (issue 28).
MAX_ALGORITHM_CLASS_LINES = 600
MAX_MODULE_LINES = 1200


@pytest.mark.parametrize("name", sorted(MOVED))
def test_moved_names_stay_importable_from_algorithm(name):
    assert getattr(algorithm, name) is getattr(MOVED[name], name)


@pytest.mark.slow  # an interpreter importing each module in turn
def test_each_new_module_imports_first_in_a_fresh_interpreter():
    modules = [
        m.__name__
        for m in (
            rl_module,
            inputs,
            inference,
            checkpoints,
            episode_stats,
            evaluation,
            iteration,
            execution_build,
            weights,
            build,
            algorithm_runners,
            algorithm_evaluation,
        )
    ] + [runner_hooks.__name__]
    # A circular import shows only when that module comes first. One interpreter imports each
    # module in turn, with every ``rljax`` module dropped from ``sys.modules`` before it: each
    # import starts from a fresh interpreter's state of rljax (no rljax module loaded; only
    # third-party packages, which import no rljax, stay), without one interpreter start each.
    script = """
import importlib, sys, traceback
failed = []
for module in sys.argv[1:]:
    for name in [n for n in sys.modules if n == "rljax" or n.startswith("rljax.")]:
        del sys.modules[name]
    try:
        importlib.import_module(module)
        assert sys.modules[module].__name__ == module
    except BaseException:
        failed.append(module + ": " + traceback.format_exc()[-2000:])
    print("imported", module, flush=True)
sys.exit("\\n".join(failed) or None)
"""
    proc = subprocess.run(
        [sys.executable, "-c", script, *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard only
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.split() == [w for m in modules for w in ("imported", m)]


@pytest.mark.parametrize("module", [rl_module, inference], ids=lambda m: m.__name__)
def test_rl_module_imports_no_algorithm_at_module_level(module):
    tree = ast.parse(Path(module.__file__).read_text())
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


def test_algorithm_class_is_a_facade_of_at_most_600_lines():
    tree = ast.parse(Path(algorithm.__file__).read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Algorithm"]
    lines = cls.end_lineno - cls.lineno + 1
    assert 300 < lines <= MAX_ALGORITHM_CLASS_LINES, f"Algorithm is {lines} lines"


def test_no_module_over_1200_lines():
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for path in (ROOT / "rljax").rglob("*.py")
    }
    assert len(sizes) > 100  # the package was found
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_inference_compiles_once_per_inference_function_and_splits_the_hosts_key():
    import types

    import jax
    import jax.numpy as jnp
    import numpy as np
    from gymnasium import spaces

    def greedy(params, obs, key):
        return obs * params, jnp.argmax(obs * params, axis=-1)

    def sampled(params, obs, key):
        return obs * params, jnp.zeros(obs.shape[0], jnp.int32)

    # Two policy ids sharing the greedy function share its compilation.
    fns = {(None, False): greedy, ("b", False): greedy, (None, True): sampled}
    parts = types.SimpleNamespace(
        inference=lambda pid, explore: fns[(pid, explore)],
        inference_params=lambda state, pid: state,
        to_env_action_host=lambda a: a,
    )
    key = jax.random.PRNGKey(3)
    host = types.SimpleNamespace(
        parts=parts,
        state=jnp.float32(2.0),
        _action_key=key,
        observation_space=spaces.Box(-1.0, 1.0, (3,)),
        action_space=spaces.Discrete(3),
        _check_policy_id=lambda pid: None,
        _observation_shape=lambda: (3,),
    )
    inf = inference.Inference(host)
    assert inf.infer_fn(False) is inf.infer_fn(False, "b")
    assert inf.infer_fn(True) is not inf.infer_fn(False)
    assert len(inf.infer_cache) == 2
    action = inf.compute_single_action(np.array([0.1, 0.9, -0.5], np.float32), False, None)
    assert action == 1 and type(action) is int
    got = inf.compute_actions(
        {"a": np.array([1.0, 0.0, 0.0]), "c": np.zeros(3) - [1, 0, 1]}, False, None
    )
    assert {k: int(v) for k, v in got.items()} == {"a": 0, "c": 1}
    # Two forward passes drew two keys from the host's stream.
    expected = jax.random.split(jax.random.split(key)[0])[0]
    np.testing.assert_array_equal(host._action_key, expected)
    inputs, actions = inf.forward(np.zeros((0, 3), np.float32), False)
    assert inputs.shape == (0, 3) and actions.shape == (0,)
    np.testing.assert_array_equal(host._action_key, expected)  # an empty batch draws none
