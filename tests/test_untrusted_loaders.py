"""Every loader of a checkpoint or an exported policy treats its files as someone else's.

The inference loaders (``RLModule.from_checkpoint``, ``rljax export``) check a checkpoint as
``Algorithm.from_checkpoint`` does: the config validated and its memory estimated, the spaces it
describes bounded, the state file checked against the shapes the networks would have, all
before anything compiles. ``rljax.policy.load_exported`` reads only the files ``policy.json``
names inside the directory. The table's style is ``tests/test_untrusted_files.py``'s: each
crafted file, loaded as a user would, must raise the named error with the named words within
2 seconds, compile nothing (counted through ``jax.monitoring``), allocate no large array (the
process's peak memory stays put), and quote no secret the file holds.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import resource
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import flax.serialization
import gymnasium as gym
import jax
import numpy as np
import pytest

import rljax
from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.ppo import PPOConfig
from rljax.cli import main
from rljax.core.rl_module.rl_module import RLModule
from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole
from rljax.examples.policy_mapping import policy_per_agent
from rljax.policy import ExportedPolicyError, load_exported
from rljax.utils.errors import CheckpointError

COMPILES = {"n": 0}


def _count(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES["n"] += 1


jax.monitoring.register_event_duration_secs_listener(_count)

ENV = "untrusted-loaders-cartpole"
rljax.register_env(ENV, lambda config: gym.make("CartPole-v1"))
SECRET = "rljax-test-secret-value-5d07"
OBS = np.zeros((3, 4), np.float32)


def _tiny(config: PPOConfig) -> PPOConfig:
    return (
        config.env_runners(num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=32, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )


class CliError(Exception):
    """``rljax ...`` exited with status 2; the message is what it printed to stderr."""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("loaders")
    algo = _tiny(PPOConfig().environment(ENV)).build_algo()
    good = Path(algo.save_to_path(root / "good"))
    exported = Path(algo.export_policy(root / "exported", platforms=("cpu",)))
    multi = _tiny(
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies=["p0", "p1"], policy_mapping_fn=policy_per_agent)
    ).build_algo()
    multi_agent = Path(multi.save_to_path(root / "multi-agent"))
    multi.stop()
    # Loaded once here: the inference programs of this process compile before any case runs.
    RLModule.from_checkpoint(good).forward_inference({"obs": OBS})
    load_exported(exported)(OBS)
    yield {
        "algo": algo,
        "good": good,
        "exported": exported,
        "multi_agent": multi_agent,
        "root": root,
    }
    algo.stop()


# ---------------------------------------------------------------------- crafting helpers
def _copy(w, source: str, name: str) -> Path:
    dst = w["root"] / name
    shutil.copytree(w[source], dst, symlinks=True)
    return dst


def _version(path: Path) -> Path:
    return path / (path / "LATEST").read_text()


def _edit_meta(fn: Callable[[dict], None], source: str = "good") -> Callable:
    def make(w, name):
        path = _copy(w, source, name)
        meta_file = _version(path) / "rljax_checkpoint.json"
        meta = json.loads(meta_file.read_text())
        fn(meta)
        meta_file.write_text(json.dumps(meta))
        return path

    return make


def _edit_config(**changes) -> Callable:
    return _edit_meta(lambda meta: meta["config"].update(changes))


def _observation_space(data: dict) -> Callable:
    return _edit_meta(lambda meta: meta["spaces"].update(observation=data))


def _nested_dict(depth: int) -> dict:
    space: dict = {"type": "Discrete", "n": 2}
    for _ in range(depth):
        space = {"type": "Dict", "spaces": {"a": space}}
    return space


def _other_policies(meta: dict) -> None:
    """The multi-agent checkpoint with policies 'a' and 'b', which the saved mapping function
    (agent i -> 'p{i}') never returns."""
    meta["policy_ids"] = ["a", "b"]
    meta["config"]["policies"] = {"a": {"config": {}}, "b": {"config": {}}}


def _edit_state(fn: Callable[[dict], None]) -> Callable:
    def make(w, name):
        path = _copy(w, "good", name)
        state_file = _version(path) / "state.msgpack"
        state = flax.serialization.msgpack_restore(state_file.read_bytes())  # our own file
        fn(state)
        state_file.write_bytes(flax.serialization.msgpack_serialize(state))
        return path

    return make


def _leaves(tree: dict, prefix: tuple = ()):
    for k, v in tree.items():
        if isinstance(v, dict):
            yield from _leaves(v, (*prefix, k))
        else:
            yield (*prefix, k), v


def _set(tree: dict, path: tuple, value) -> None:
    for k in path[:-1]:
        tree = tree[k]
    tree[path[-1]] = value


def _wrong_kernel(state: dict) -> None:
    path = next(p for p, v in _leaves(state["params"]) if getattr(v, "ndim", 0) == 2)
    _set(state["params"], path, np.zeros((3, 3), np.float32))


def _nan_weights(state: dict) -> None:
    for path, v in list(_leaves(state["params"])):
        if v.dtype == np.float32:
            _set(state["params"], path, np.full_like(v, np.nan))


def _rllib_path(tail: str) -> Callable:
    return lambda w, name: Path(f"{w['good']}/learner_group/learner/rl_module/{tail}")


def _existing_file(w, name):
    out = w["root"] / f"{name}.txt"
    out.write_text(SECRET)
    return w["good"], out


def _exported(fn: Callable[[Path], None]) -> Callable:
    """A copy of the exported policy, changed by ``fn(directory)``."""

    def make(w, name):
        path = _copy(w, "exported", name)
        fn(path)
        return path

    return make


def _names(file: str) -> Callable:
    def edit(path):
        meta = json.loads((path / "policy.json").read_text())
        meta["files"]["greedy"] = file
        (path / "policy.json").write_text(json.dumps(meta))

    return _exported(edit)


def _program(kind: str) -> Callable:
    def edit(path):
        target = path / "policy_greedy.stablehlo"
        target.unlink()
        if kind == "zero":
            os.symlink("/dev/zero", target)
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "huge":
            with open(target, "wb") as f:
                f.truncate(2 << 30)  # sparse: no disk used
        else:
            target.write_bytes(b"\x00garbage" + SECRET.encode())

    return _exported(edit)


def _policy_json(data: bytes) -> Callable:
    return _exported(lambda path: (path / "policy.json").write_bytes(data))


def _meta_field(**changes) -> Callable:
    def edit(path):
        meta = json.loads((path / "policy.json").read_text())
        meta.update(changes)
        (path / "policy.json").write_text(json.dumps(meta))

    return _exported(edit)


MODULE, LOAD, EXPORT, EVALUATE, EXPORTED = (
    "RLModule.from_checkpoint",
    "Algorithm.from_checkpoint",
    "rljax export",
    "rljax evaluate",
    "load_exported",
)


def _cli(argv: list[str]) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    if code == 2:
        raise CliError(err.getvalue())
    raise AssertionError(f"rljax {argv[0]} exited with {code}: {err.getvalue()[-500:]}")


def _load(kind: str, w, made) -> None:
    if kind == MODULE:
        RLModule.from_checkpoint(made)
    elif kind == LOAD:
        Algorithm.from_checkpoint(made).stop()
    elif kind == EXPORT:
        checkpoint, out = made if isinstance(made, tuple) else (made, w["root"] / "out")
        _cli(["export", str(checkpoint), str(out)])
    elif kind == EVALUATE:
        _cli(["evaluate", str(made), "--episodes", "1"])
    else:
        load_exported(made)(OBS)


# (name, how to make the file, how to load it, error, words the message must hold)
CASES = [
    # ---- 1. the inference loaders check sizes and settings as the full loader does
    (
        "inference: layers of 65536 units",
        _edit_config(model_config={"fcnet_hiddens": [65536, 65536]}),
        MODULE,
        CheckpointError,
        ["would need about", "fcnet_hiddens=[65536, 65536]", "lower these"],
    ),
    (
        "export: layers of 65536 units",
        _edit_config(model_config={"fcnet_hiddens": [65536, 65536]}),
        EXPORT,
        CliError,
        ["rljax: error:", "would need about", "fcnet_hiddens=[65536, 65536]"],
    ),
    (
        "inference: a billion epochs",
        _edit_config(num_epochs=10**9),
        MODULE,
        CheckpointError,
        ["num_epochs=1000000000 (int)", "an int in [1, 1000]"],
    ),
    (
        "inference: layer widths as a string",
        _edit_config(model_config={"fcnet_hiddens": "64"}),
        MODULE,
        CheckpointError,
        ["fcnet_hiddens='64' (str)", "list of ints"],
    ),
    (
        "inference: a Box of 2**24 x 8 numbers",
        _observation_space(
            {"type": "Box", "shape": [2**24, 8], "dtype": "float32", "low": -1, "high": 1}
        ),
        MODULE,
        CheckpointError,
        ["spaces.observation", "[16777216, 8]", "more than 4,194,304 numbers"],
    ),
    (
        "full loader: a Box of 2**24 x 8 numbers",
        _observation_space(
            {"type": "Box", "shape": [2**24, 8], "dtype": "float32", "low": -1, "high": 1}
        ),
        LOAD,
        CheckpointError,
        ["spaces.observation", "more than 4,194,304 numbers"],
    ),
    (
        "inference: a Dict of 20,000 subspaces",
        _observation_space(
            {
                "type": "Dict",
                "spaces": {f"k{i}": {"type": "Discrete", "n": 2} for i in range(20_000)},
            }
        ),
        MODULE,
        CheckpointError,
        ["spaces.observation", "more than 256 subspaces"],
    ),
    (
        # within the bounds: the state file is checked against the traced shapes, and refused
        # before a program is compiled for each of the 200 inputs
        "inference: a Dict of 200 Boxes the state does not fit",
        _observation_space(
            {
                "type": "Dict",
                "spaces": {
                    f"k{i:03d}": {
                        "type": "Box",
                        "shape": [i + 1],
                        "dtype": "float32",
                        "low": -1,
                        "high": 1,
                    }
                    for i in range(200)
                },
            }
        ),
        MODULE,
        CheckpointError,
        ["state.msgpack", "does not match this algorithm", "expected keys"],
    ),
    (
        "inference: Dict spaces nested 9 deep",
        _observation_space(_nested_dict(9)),
        MODULE,
        CheckpointError,
        ["nested deeper than 8 levels"],
    ),
    (
        "inference: a MultiBinary of 4096 x 4096",
        _observation_space({"type": "MultiBinary", "n": [4096, 4096]}),
        MODULE,
        CheckpointError,
        ["MultiBinary space of shape [4096, 4096]", "more than 4,194,304 numbers"],
    ),
    (
        "inference: two Boxes of 3 million numbers each",
        _observation_space(
            {
                "type": "Tuple",
                "spaces": [
                    {"type": "Box", "shape": [3_000_000], "dtype": "uint8", "low": 0, "high": 1}
                ]
                * 2,
            }
        ),
        MODULE,
        CheckpointError,
        ["more than 4,194,304 numbers in all"],
    ),
    (
        "inference: possible agents of the wrong form",
        _edit_meta(lambda m: m["spaces"].update(possible_agents=[[1], [1]])),
        MODULE,
        CheckpointError,
        ["possible_agents must be null or a list"],
    ),
    (
        "inference: a kernel of the wrong shape",
        _edit_state(_wrong_kernel),
        MODULE,
        CheckpointError,
        ["/params/default_policy/params/pi/kernel has shape (3, 3)", "expects (8, 2)"],
    ),
    (
        "export: a kernel of the wrong shape",
        _edit_state(_wrong_kernel),
        EXPORT,
        CliError,
        ["has shape (3, 3)"],
    ),
    # ---- 4. named errors, not tracebacks
    (
        "export to an existing file",
        _existing_file,
        EXPORT,
        CliError,
        ["exists and is not a directory", ".txt"],
    ),
    (
        "policies the mapping function does not return",
        _edit_meta(_other_policies, source="multi_agent"),
        LOAD,
        CheckpointError,
        ["maps the agents [0, 1] to 'p0', 'p1'", "policies are ['a', 'b']"],
    ),
    (
        "evaluate: policies the mapping function does not return",
        _edit_meta(_other_policies, source="multi_agent"),
        EVALUATE,
        CliError,
        ["rljax: error:", "'p0', 'p1'", "['a', 'b']"],
    ),
    (
        "RLlib module path ending in ../..",
        _rllib_path("../.."),
        MODULE,
        CheckpointError,
        ["takes one policy id", "'../..'"],
    ),
    (
        "RLlib module path going on past the policy",
        _rllib_path("default_policy/../../../.."),
        MODULE,
        CheckpointError,
        ["takes one policy id"],
    ),
    (
        "RLlib module path naming another policy",
        _rllib_path("p7"),
        MODULE,
        CheckpointError,
        ["has no policy 'p7'", "['default_policy']"],
    ),
    # ---- 2. exported policies
    (
        "exported: policy.json names ../../dev/zero",
        _names("../../dev/zero"),
        EXPORTED,
        ExportedPolicyError,
        ["'../../dev/zero'", "bare names of files in the policy's directory"],
    ),
    (
        "exported: policy.json names an absolute path",
        _names("/etc/passwd"),
        EXPORTED,
        ExportedPolicyError,
        ["'/etc/passwd'", "bare names"],
    ),
    (
        "exported: policy.json names a number",
        _names(7),
        EXPORTED,
        ExportedPolicyError,
        ["names the file '7'"],
    ),
    (
        "exported: the program links to /dev/zero",
        _program("zero"),
        EXPORTED,
        ExportedPolicyError,
        ["policy_greedy.stablehlo", "not a regular file"],
    ),
    (
        "exported: the program is a FIFO",
        _program("fifo"),
        EXPORTED,
        ExportedPolicyError,
        ["not a regular file"],
    ),
    (
        "exported: a 2 GiB program",
        _program("huge"),
        EXPORTED,
        ExportedPolicyError,
        ["2,147,483,648 bytes", "at most 1,073,741,824"],
    ),
    (
        "exported: the program is garbage",
        _program("garbage"),
        EXPORTED,
        ExportedPolicyError,
        ["not a program jax.export wrote"],
    ),
    (
        "exported: policy.json over 1 MiB",
        _policy_json(b" " * (2 << 20) + b"{}"),
        EXPORTED,
        ExportedPolicyError,
        ["policy.json", "at most 1,048,576"],
    ),
    (
        "exported: policy.json nested 100,000 deep",
        _policy_json(b"[" * 100_000 + b"]" * 100_000),
        EXPORTED,
        ExportedPolicyError,
        ["not valid JSON (RecursionError)"],
    ),
    (
        "exported: policy.json is not JSON",
        _policy_json(f"aws_secret = {SECRET}".encode()),
        EXPORTED,
        ExportedPolicyError,
        ["not valid JSON"],
    ),
    (
        "exported: policy.json is a list",
        _policy_json(b"[1]"),
        EXPORTED,
        ExportedPolicyError,
        ["'files' names a 'greedy' file"],
    ),
    (
        "exported: another format version",
        _meta_field(format_version=99),
        EXPORTED,
        ExportedPolicyError,
        ["format_version 99", "this loader reads 1"],
    ),
    (
        "exported: an object observation dtype",
        _meta_field(observation_dtype="object"),
        EXPORTED,
        ExportedPolicyError,
        ["observation_dtype 'object'", "numbers or booleans"],
    ),
    (
        "exported: policy.json links outside",
        _exported(
            lambda p: ((p / "policy.json").unlink(), os.symlink("/etc/hostname", p / "policy.json"))
        ),
        EXPORTED,
        ExportedPolicyError,
        ["policy.json", "not a regular file"],
    ),
    (
        "exported: not a directory",
        lambda w, name: w["good"] / "LATEST",
        EXPORTED,
        ExportedPolicyError,
        ["not a directory"],
    ),
]


@pytest.mark.parametrize("name, make, kind, error, words", CASES, ids=[c[0] for c in CASES])
def test_a_crafted_file_is_refused_plainly_by_every_loader(world, name, make, kind, error, words):
    made = make(world, "".join(c if c.isalnum() else "-" for c in name))
    compiles = COMPILES["n"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    start = time.perf_counter()
    with pytest.raises(error) as info:
        _load(kind, world, made)
    elapsed = time.perf_counter() - start
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert SECRET not in message
    assert elapsed < 2.0, f"{name}: {elapsed:.2f} s"
    assert COMPILES["n"] == compiles, f"{name}: compiled before failing"
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    assert grown < 300_000, f"{name}: peak memory grew by {grown} KiB"


def test_the_good_files_still_load(world):
    """The table's files are copies of these, which load and act as the algorithm."""
    expected = world["algo"].compute_actions(OBS)
    np.testing.assert_array_equal(
        RLModule.from_checkpoint(world["good"]).forward_inference({"obs": OBS})["actions"], expected
    )
    np.testing.assert_array_equal(load_exported(world["exported"])(OBS), expected)
    rllib = f"{world['good']}/learner_group/learner/rl_module/default_policy"
    np.testing.assert_array_equal(
        RLModule.from_checkpoint(rllib).forward_inference(OBS)["actions"], expected
    )
    p1 = RLModule.from_checkpoint(f"{world['multi_agent']}/learner_group/learner/rl_module/p1")
    assert p1.forward_inference(OBS)["actions"].shape == (3,)


def test_non_finite_weights_are_reported_on_load_and_in_each_result(world, caplog):
    path = _edit_state(_nan_weights)(world, "nan-weights")
    weights = sum(
        v.size
        for _, v in _leaves(
            flax.serialization.msgpack_restore(
                (_version(world["good"]) / "state.msgpack").read_bytes()
            )["params"]
        )
    )
    start = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="rljax"):
        module = RLModule.from_checkpoint(path)
    assert time.perf_counter() - start < 2.0
    assert f"{weights} of the {weights} loaded weights are NaN or infinite" in caplog.text
    assert str(_version(path) / "state.msgpack") in caplog.text
    assert (module.forward_inference(OBS)["actions"] == 0).all()  # what NaN weights act
    caplog.clear()
    algo = world["algo"]
    with caplog.at_level(logging.WARNING, logger="rljax"):
        algo.restore_from_path(path)
    assert f"{weights} of the {weights} loaded weights" in caplog.text
    result = algo.train()
    modules = result["learners"]["__all_modules__"]
    assert modules["num_non_finite_weights_loaded"] == weights
    assert modules["num_non_finite_updates"] == 1  # the update from them was skipped
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rljax"):
        algo.restore_from_path(world["good"])
    assert "NaN" not in caplog.text
    assert algo.train()["learners"]["__all_modules__"]["num_non_finite_weights_loaded"] == 0
