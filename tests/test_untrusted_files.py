"""Checkpoints and config files from someone else: loading never runs their code, never hangs,
never exhausts memory, and every malformed file gets a clear error before anything changes.

One table of crafted files. Each row makes a file (a copy of a good checkpoint with one thing
changed, or a YAML config), loads it as a user would (``algo.restore_from_path`` into a built
algorithm, ``Algorithm.from_checkpoint`` or ``PPOConfig.from_yaml``), and must raise the named
error with the named words within 2 seconds, compile nothing (counted through
``jax.monitoring``), allocate no large array (the process's peak memory stays put), leave the
built algorithm as it was, and never import a canary module on ``sys.path`` whose import
writes a file.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import envpool
import flax.linen as nn
import flax.serialization
import gymnasium as gym
import jax
import msgpack
import numpy as np
import pytest
from refusal_cost import measured

import rljax
from rljax.algorithms import registry
from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.dqn import DQNConfig
from rljax.algorithms.ppo import PPOConfig
from rljax.core.rl_module.rl_module import RLModuleSpec
from rljax.env.vector import _envpool_ids
from rljax.utils.errors import CheckpointError, ConfigError

ENV = "untrusted-files-cartpole"
rljax.register_env(ENV, lambda config: gym.make("CartPole-v1"))
SECRET = "rljax-test-secret-value-81c2"


def _config():
    return (
        PPOConfig()
        .environment(ENV)  # gymnasium's CartPole: the checkpoint holds runners.json
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=16)
        .training(train_batch_size_per_learner=32, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("untrusted")
    canary_dir = root / "canary"
    canary_dir.mkdir()
    marker = root / "canary-imported"
    (canary_dir / "rljax_canary.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\n"
        "import gymnasium as gym\n"
        "class Env(gym.Env):\n    pass\n"
        "def creator(config):\n    return Env()\n"
    )
    sys.path.insert(0, str(canary_dir))
    os.environ["RLJAX_TEST_SECRET"] = SECRET
    algo = _config().build_algo()
    good = Path(algo.save_to_path(root / "good"))
    _envpool_ids()  # EnvPool lists its ids once per process, in ~2 s: not part of any check
    for task in ("Ant-v4", "Pong-v5"):  # and loads a family's module once, MuJoCo's in ~2 s
        envpool.make_spec(task)
    yield {"algo": algo, "good": good, "root": root, "marker": marker}
    algo.stop()
    sys.path.remove(str(canary_dir))
    os.environ.pop("RLJAX_TEST_SECRET", None)


# ---------------------------------------------------------------------- crafting helpers
def _copy(w, name: str) -> Path:
    dst = w["root"] / name
    shutil.copytree(w["good"], dst, symlinks=True)
    return dst


def _version(path: Path) -> Path:
    return path / (path / "LATEST").read_text()


def _edit_meta(fn: Callable[[dict], object]) -> Callable:
    """A crafted checkpoint whose metadata ``fn`` changed (in place, or replaced by its result)."""

    def make(w, name):
        path = _copy(w, name)
        meta_file = _version(path) / "rljax_checkpoint.json"
        meta = json.loads(meta_file.read_text())
        out = fn(meta)
        meta_file.write_text(json.dumps(meta if out is None else out))
        return path

    return make


def _edit_config(**changes) -> Callable:
    def fn(meta):
        meta["config"].update(changes)

    return _edit_meta(fn)


def _replace_file(filename: str, make_bytes: Callable[[Path], bytes]) -> Callable:
    def make(w, name):
        path = _copy(w, name)
        target = _version(path) / filename
        _WORLD.update(w)
        data = make_bytes(target)
        target.unlink(missing_ok=True)
        target.write_bytes(data)
        return path

    return make


_WORLD: dict = {}  # the module's fixture, for the state-crafting helpers


def _sparse_state(size: int) -> Callable:
    """A state file of ``size`` bytes (sparse: no disk used)."""

    def make(w, name):
        path = _copy(w, name)
        with open(_version(path) / "state.msgpack", "r+b") as f:
            f.truncate(size)
        return path

    return make


def _special_file(filename: str, kind: str) -> Callable:
    """``filename`` replaced by a FIFO, a link to /dev/zero, or a link outside the checkpoint."""

    def make(w, name):
        path = _copy(w, name)
        target = path / filename if filename == "LATEST" else _version(path) / filename
        target.unlink(missing_ok=True)
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "zero":
            os.symlink("/dev/zero", target)
        else:  # a link to a copy of the real file outside the checkpoint directory
            outside = w["root"] / f"{name}-outside"
            source = (
                w["good"] / filename if filename == "LATEST" else _version(w["good"]) / filename
            )
            outside.write_bytes(source.read_bytes())
            os.symlink(outside, target)
        return path

    return make


def _state_dict() -> dict:
    raw = (_version(_WORLD["good"]) / "state.msgpack").read_bytes()
    return flax.serialization.msgpack_restore(raw)  # our own file: trusted here


def _kernel_path(tree, prefix=()):
    for k, v in tree.items():
        if isinstance(v, dict):
            found = _kernel_path(v, (*prefix, k))
            if found:
                return found
        elif getattr(v, "ndim", 0) == 2 and v.dtype == np.float32:
            return (*prefix, k)
    return None


def _edit_state(fn: Callable[[dict, tuple], None]) -> Callable:
    def make_bytes(target):
        state = _state_dict()
        fn(state, _kernel_path(state))
        return flax.serialization.msgpack_serialize(state)

    return _replace_file("state.msgpack", make_bytes)


def _set_leaf(tree, path, value):
    for k in path[:-1]:
        tree = tree[k]
    tree[path[-1]] = value


def _get_leaf(tree, path):
    for k in path:
        tree = tree[k]
    return tree


def _ext_array(shape, dtype_name: str, buffer: bytes) -> msgpack.ExtType:
    return msgpack.ExtType(1, msgpack.packb((list(shape), dtype_name, buffer), use_bin_type=True))


def _raw_state(fn: Callable[[dict, tuple], None]) -> Callable:
    """A state file re-packed by hand, for leaves Flax would not write."""

    def make_bytes(target):
        state = _state_dict()
        kernel = _kernel_path(state)
        fn(state, kernel)

        def default(x):
            if isinstance(x, (np.ndarray, np.generic)):
                x = np.asarray(x)
                return _ext_array(x.shape, x.dtype.name, x.tobytes())
            if isinstance(x, msgpack.ExtType):
                return x
            raise TypeError(type(x))

        return msgpack.packb(state, default=default, use_bin_type=True)

    return _replace_file("state.msgpack", make_bytes)


def _edit_runners(fn: Callable[[dict], object]) -> Callable:
    def make_bytes(target):
        runners = json.loads(target.read_text())
        out = fn(runners)
        return json.dumps(runners if out is None else out).encode()

    return _replace_file("runners.json", make_bytes)


def _set_path(tree, path, value):
    for k in path[:-1]:
        tree = tree[k]
    tree[path[-1]] = value
    return None


def _edit_env_attr(name: str, fn: Callable) -> Callable:
    """runners.json with attribute ``name`` of the first sub-env's CartPoleEnv layer replaced by
    ``fn(old value)`` (``fn`` returning None edits the value in place)."""

    def edit(runners):
        layers = runners["runners"][0]["env"]["envs"][0]
        attrs = next(layer for layer in layers if layer["class"] == "CartPoleEnv")["attrs"]
        old = copy.deepcopy(attrs.get(name))
        new = fn(attrs.get(name))
        attrs[name] = attrs.get(name) if new is None and old is not None else new

    return _edit_runners(edit)


def _yaml(text: str) -> Callable:
    def make(w, name):
        path = w["root"] / f"{name}.yaml"
        path.write_text(text)
        return path

    return make


def _yaml_special(kind: str) -> Callable:
    def make(w, name):
        path = w["root"] / f"{name}.yaml"
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.write_text("lr: 0.001\n" + "# padding\n" * 200_000)
        return path

    return make


def _meta_of_dqn(capacity: int) -> Callable:
    def fn(meta):
        meta["algo"] = "DQN"
        meta["config"] = DQNConfig().environment(ENV).to_dict()
        meta["config"]["replay_buffer_config"]["capacity"] = capacity

    return _edit_meta(fn)


def _meta_of_dqn_with(**changes) -> Callable:
    """A DQN checkpoint's metadata on the same env, with ``changes`` to its config."""

    def fn(meta):
        meta["algo"] = "DQN"
        meta["config"] = DQNConfig().environment(ENV).to_dict()
        meta["config"].update(changes)

    return _edit_meta(fn)


def _envpool_fifo(w, name):
    """A checkpoint whose config names a FIFO as the MuJoCo model file of EnvPool's Ant-v4."""
    fifo = w["root"] / f"{name}-model.xml"
    os.mkfifo(fifo)
    return _edit_config(env="Ant-v4", env_config={"xml_file": str(fifo)})(w, name)


def _alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append("lr: 0.001")
    return "\n".join(lines) + "\n"


RESTORE, LOAD, YAML = "restore", "from_checkpoint", "from_yaml"

# (name, how to make the file, how to load it, error, words the message must hold)
CASES = [
    # ---- code named by the file: never imported or called without the caller's opt-in
    (
        "env imports subprocess.run",
        _edit_config(env={"import": "subprocess:run"}),
        LOAD,
        CheckpointError,
        ["env names code to import", "'subprocess:run'", "allow_imports", "env=..."],
    ),
    (
        "env imports the canary",
        _edit_config(env={"import": "rljax_canary:creator"}),
        LOAD,
        CheckpointError,
        ["'rljax_canary:creator'", "--allow-import rljax_canary"],
    ),
    (
        "module class by an unregistered name",
        _edit_config(rl_module_spec={"module_class": "environ", "model_config": {}}),
        LOAD,
        CheckpointError,
        ["module_class", "registered", "register_module_class"],
    ),
    (
        "module class os.environ as a string",
        _edit_config(rl_module_spec={"module_class": "os:environ", "model_config": {}}),
        LOAD,
        CheckpointError,
        ["module_class names code to import", "'os:environ'"],
    ),
    (
        "module class import os.environ",
        _edit_config(rl_module_spec={"module_class": {"import": "os:environ"}, "model_config": {}}),
        LOAD,
        CheckpointError,
        ["module_class names code to import", "'os:environ'"],
    ),
    (
        "mapping fn imports eval",
        _edit_config(policy_mapping_fn={"import": "builtins:eval"}),
        LOAD,
        CheckpointError,
        ["policy_mapping_fn names code to import", "'builtins:eval'"],
    ),
    (
        "mapping fn imports the canary",
        _edit_config(policy_mapping_fn={"import": "rljax_canary:creator"}),
        LOAD,
        CheckpointError,
        ["policy_mapping_fn", "rljax_canary"],
    ),
    (
        "dunder attribute chain under an allowed prefix",
        _edit_config(
            env={"import": "rljax.examples.envs.classes.multi_agent:MultiAgentCartPole.__init__"}
        ),
        LOAD,
        CheckpointError,
        ["not of the form", "public names only"],
    ),
    (
        "attribute chain out of an example module into subprocess",
        _edit_config(
            env={
                "import": "rljax.examples.envs.classes.multi_agent.tic_tac_toe:"
                "np.f2py.subprocess.call"
            },
            env_config={"sh": None, "-c": None, "touch /tmp/rljax-pwned": None},
        ),
        LOAD,
        CheckpointError,
        ["env names code to import", "allow_imports"],
    ),
    (
        "import reference with extra keys",
        _edit_config(env={"import": "a:b", "call": "x"}),
        LOAD,
        CheckpointError,
        ["env must be a registered name or"],
    ),
    (
        "gymnasium module:id env string",
        _edit_config(env="rljax_canary:Env-v0"),
        LOAD,
        CheckpointError,
        ["unknown env 'rljax_canary:Env-v0'"],
    ),
    (
        "config_module names the canary",
        _edit_meta(lambda m: m.update(config_module="rljax_canary:Env", algo="EVIL")),
        LOAD,
        CheckpointError,
        ["field 'algo'", "'EVIL'"],
    ),
    # ---- files that are not regular files inside the checkpoint
    (
        "metadata is a FIFO",
        _special_file("rljax_checkpoint.json", "fifo"),
        LOAD,
        CheckpointError,
        ["not a regular file"],
    ),
    (
        "state is a FIFO",
        _special_file("state.msgpack", "fifo"),
        RESTORE,
        CheckpointError,
        ["state.msgpack", "not a regular file"],
    ),
    (
        "runners.json is a FIFO",
        _special_file("runners.json", "fifo"),
        RESTORE,
        CheckpointError,
        ["runners.json", "not a regular file"],
    ),
    (
        "metadata links to /dev/zero",
        _special_file("rljax_checkpoint.json", "zero"),
        LOAD,
        CheckpointError,
        ["leads outside its directory"],
    ),
    (
        "state links to /dev/zero",
        _special_file("state.msgpack", "zero"),
        RESTORE,
        CheckpointError,
        ["leads outside its directory"],
    ),
    (
        "state links outside the checkpoint",
        _special_file("state.msgpack", "out"),
        RESTORE,
        CheckpointError,
        ["leads outside its directory"],
    ),
    (
        "LATEST links outside the checkpoint",
        _special_file("LATEST", "out"),
        LOAD,
        CheckpointError,
        ["LATEST", "leads outside its directory"],
    ),
    (
        "LATEST is a FIFO",
        _special_file("LATEST", "fifo"),
        LOAD,
        CheckpointError,
        ["LATEST", "not a regular file"],
    ),
    (
        "LATEST names a path outside",
        lambda w, n: _write(_copy(w, n), "LATEST", b"../../etc"),
        LOAD,
        CheckpointError,
        ["LATEST is corrupt"],
    ),
    (
        "LATEST is huge",
        lambda w, n: _write(_copy(w, n), "LATEST", b"v" * 100_000),
        LOAD,
        CheckpointError,
        ["LATEST", "at most 64 are read"],
    ),
    (
        "LATEST names a version that is not there",
        lambda w, n: _write(_copy(w, n), "LATEST", b"v-999999"),
        LOAD,
        CheckpointError,
        ["LATEST file names version 'v-999999', which is not there"],
    ),
    (
        "version directory links outside",
        lambda w, n: _link_version_outside(w, n),
        LOAD,
        CheckpointError,
        ["must be a real directory inside", "not a link"],
    ),
    # ---- sizes and nesting
    (
        "metadata over its size cap",
        _replace_file("rljax_checkpoint.json", lambda t: b" " * (5 << 20) + t.read_bytes()),
        LOAD,
        CheckpointError,
        ["at most 4,194,304 are read"],
    ),
    (
        "metadata nested 100,000 deep",
        _replace_file("rljax_checkpoint.json", lambda t: b"[" * 100_000 + b"]" * 100_000),
        LOAD,
        CheckpointError,
        ["nested deeper than 64 levels"],
    ),
    (
        "state far larger than the algorithm's arrays",
        _sparse_state(3 << 30),
        RESTORE,
        CheckpointError,
        ["state.msgpack", "at most"],
    ),
    (
        "state nested 100,000 deep",
        _replace_file("state.msgpack", lambda t: b"\x91" * 100_000 + b"\xc0"),
        RESTORE,
        CheckpointError,
        ["not a valid state file"],
    ),
    (
        "runners.json nested 100,000 deep",
        _replace_file("runners.json", lambda t: b"[" * 100_000 + b"]" * 100_000),
        RESTORE,
        CheckpointError,
        ["runners.json", "nested deeper"],
    ),
    # ---- metadata fields of the wrong form
    (
        "metadata is a list",
        _edit_meta(lambda m: [m]),
        LOAD,
        CheckpointError,
        ["expected a JSON object of metadata", "list"],
    ),
    (
        "format version is a string",
        _edit_meta(lambda m: m.update(format_version="2")),
        LOAD,
        CheckpointError,
        ["checkpoint format '?'", "reads format 2"],
    ),
    (
        "config is a string",
        _edit_meta(lambda m: m.update(config="lr=1")),
        LOAD,
        CheckpointError,
        ["field 'config'", "a JSON object of settings", "str"],
    ),
    (
        "counters are strings",
        _edit_meta(lambda m: m["counters"].update(training_iteration="7")),
        RESTORE,
        CheckpointError,
        ["counters.training_iteration", "an int in [0, 2**62]", "str"],
    ),
    (
        "counter beyond int64",
        _edit_meta(lambda m: m["counters"].update(num_env_steps_sampled_lifetime=2**80)),
        RESTORE,
        CheckpointError,
        ["counters.num_env_steps_sampled_lifetime"],
    ),
    (
        "negative counter",
        _edit_meta(lambda m: m["counters"].update(num_evaluations=-1)),
        RESTORE,
        CheckpointError,
        ["counters.num_evaluations", "-1"],
    ),
    (
        "time is NaN",
        _edit_meta(lambda m: m["counters"].update(time_total_s=float("nan"))),
        RESTORE,
        CheckpointError,
        ["counters.time_total_s", "finite"],
    ),
    (
        "a module's counter is negative",
        _edit_meta(
            lambda m: m["counters"].update(num_module_steps_trained_lifetime={"default_policy": -3})
        ),
        RESTORE,
        CheckpointError,
        ["counters.num_module_steps_trained_lifetime", "'default_policy'", "[0, 2**62]", "-3"],
    ),
    (
        "a module's counter for a module the checkpoint does not have",
        _edit_meta(
            lambda m: m["counters"].update(num_module_steps_trained_lifetime={"x" * 500: 1})
        ),
        RESTORE,
        CheckpointError,
        ["counters.num_module_steps_trained_lifetime", "is not one of the modules"],
    ),
    (
        "an agent's counter is negative",
        _edit_meta(
            lambda m: m["counters"].update(num_agent_steps_sampled_lifetime={"agent_0": -2})
        ),
        RESTORE,
        CheckpointError,
        ["counters.num_agent_steps_sampled_lifetime", "'agent_0'", "[0, 2**62]", "-2"],
    ),
    (
        "an agent's counter has thousands of digits",
        _edit_meta(
            lambda m: m["counters"].update(num_agent_steps_sampled_lifetime={"a": 10**4000})
        ),
        RESTORE,
        CheckpointError,
        ["counters.num_agent_steps_sampled_lifetime", "'a'", "an int of 13288 bits"],
    ),
    (
        "a module's sampled counter for a module the checkpoint does not have",
        _edit_meta(lambda m: m["counters"].update(num_module_steps_sampled_lifetime={"q": 1})),
        RESTORE,
        CheckpointError,
        ["counters.num_module_steps_sampled_lifetime", "'q' is not one of the modules"],
    ),
    (
        "counters are a list",
        _edit_meta(lambda m: m.update(counters=[1, 2])),
        RESTORE,
        CheckpointError,
        ["field 'counters'"],
    ),
    (
        "unknown algorithm",
        _edit_meta(lambda m: m.update(algo="EVIL")),
        LOAD,
        CheckpointError,
        ["field 'algo'", str(registry.algorithm_names())],
    ),
    (
        "another algorithm's checkpoint",
        _edit_meta(lambda m: m.update(algo="DQN")),
        RESTORE,
        CheckpointError,
        ["holds a DQN checkpoint", "this is PPO"],
    ),
    (
        "policy ids of the wrong form",
        _edit_meta(lambda m: m.update(policy_ids="p0")),
        RESTORE,
        CheckpointError,
        ["field 'policy_ids'"],
    ),
    (
        "other policies",
        _edit_meta(lambda m: m.update(policy_ids=["p0", "p1"])),
        RESTORE,
        CheckpointError,
        ["holds policies ['p0', 'p1']"],
    ),
    (
        "replay flag is a string",
        _edit_meta(lambda m: m.update(includes_replay_buffer="yes")),
        RESTORE,
        CheckpointError,
        ["includes_replay_buffer", "true or false"],
    ),
    (
        "seed is a string",
        _edit_meta(lambda m: m.update(seed="3")),
        RESTORE,
        CheckpointError,
        ["field 'seed'"],
    ),
    # ---- configs that would build something else than they seem, or too much
    (
        "unknown config key",
        _edit_config(num_gpus_total=8),
        LOAD,
        CheckpointError,
        ["config: unknown config key 'num_gpus_total'"],
    ),
    (
        "layers of 65536 units",
        _edit_config(model_config={"fcnet_hiddens": [65536, 65536]}),
        LOAD,
        CheckpointError,
        ["would need about", "fcnet_hiddens=[65536, 65536]", "lower these"],
    ),
    (
        "two million envs",
        # minibatch_size keeps the 32,000,000-row batch under the cap on updates per iteration
        _edit_config(num_envs_per_env_runner=2_000_000, minibatch_size=512),
        LOAD,
        CheckpointError,
        ["would need about", "num_envs_per_env_runner=2000000"],
    ),
    (
        "a trillion-row replay buffer",
        _meta_of_dqn(10**12),
        LOAD,
        CheckpointError,
        ["would need about", "capacity=1,000,000,000,000"],
    ),
    (
        "conv filters of 4096 channels on Pong's frames",
        _edit_config(env="Pong-v5", model_config={"conv_filters": [[4096, 1, 1]]}),
        LOAD,
        CheckpointError,
        ["would need about", "conv_filters=[[4096, [1, 1], 1]]", "lower these"],
    ),
    (
        "DQN with 100,000 atoms",
        _meta_of_dqn_with(num_atoms=100_000),
        LOAD,
        CheckpointError,
        ["would need about", "num_atoms=100,000"],
    ),
    (
        "DQN with 100,000,000-step returns",
        _meta_of_dqn_with(
            n_step=100_000_000,
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": 100_000_010},
        ),
        LOAD,
        CheckpointError,
        ["would need about", "n_step=100000000 (windows of [batch, 100,000,000])"],
    ),
    (
        "4,000 ASYNC sub-env processes",
        _edit_config(gym_env_vectorize_mode="ASYNC", num_envs_per_env_runner=4000),
        LOAD,
        CheckpointError,
        ["would need about", "gym_env_vectorize_mode='ASYNC': 4,000 env processes"],
    ),
    (
        "5,000 runner threads",
        _edit_config(num_env_runners=5000),
        LOAD,
        CheckpointError,
        ["num_env_runners=5000 (int)", "an int in [0, 1024]"],
    ),
    # ---- settings that would make a run effectively hang
    (
        "a billion epochs",
        _edit_config(num_epochs=10**9),
        LOAD,
        CheckpointError,
        ["num_epochs=1000000000 (int)", "an int in [1, 1000]"],
    ),
    (
        "minibatches of one row",
        _edit_config(rollout_fragment_length=100_000, minibatch_size=1),
        LOAD,
        CheckpointError,
        ["200,000 updates per iteration, more than 100,000", "raise minibatch_size"],
    ),
    (
        "training intensity 1e300",
        _meta_of_dqn_with(training_intensity=1e300),
        LOAD,
        CheckpointError,
        ["training_intensity=1e+300 (float)", "None or a number in (0, 10000]"],
    ),
    (
        "evaluation of 10**18 episodes",
        _edit_config(evaluation_duration=10**18),
        LOAD,
        CheckpointError,
        ["evaluation_duration=1000000000000000000 (int)", "an int in [1, 1000000]"],
    ),
    (
        "rollout fragments of a billion steps",
        _edit_config(rollout_fragment_length=10**9),
        LOAD,
        CheckpointError,
        ["rollout_fragment_length=1000000000 (int)", "'auto' or an int in [1, 1000000]"],
    ),
    # ---- env_config of an EnvPool task: only its numeric settings, checked, and no env built
    (
        "EnvPool model file is a FIFO",
        _envpool_fifo,
        LOAD,
        CheckpointError,
        ["env_config 'xml_file' is a path in a loaded config"],
    ),
    (
        "EnvPool asset directory elsewhere",
        _edit_config(env="Ant-v4", env_config={"base_path": "/etc"}),
        LOAD,
        CheckpointError,
        ["env_config 'base_path' is a path in a loaded config"],
    ),
    (
        "Atari game that does not exist",
        _edit_config(env="Pong-v5", env_config={"task": "nope"}),
        LOAD,
        CheckpointError,
        ["env_config['task'] is a text setting of EnvPool's 'Pong-v5'"],
    ),
    (
        "EnvPool with 2,000 threads",
        _edit_config(env="CartPole-v1", env_config={"num_threads": 2000}),
        LOAD,
        CheckpointError,
        ["env_config['num_threads'] is set by rljax", "remove it"],
    ),
    (
        "Atari frames of 4000x4000",
        _edit_config(env="Pong-v5", env_config={"img_height": 4000, "img_width": 4000}),
        LOAD,
        CheckpointError,
        ["env_config['img_height']=4000 (int)", "an int in [1, 1024]"],
    ),
    (
        "EnvPool setting the task does not have",
        _edit_config(env="CartPole-v1", env_config={"frame_skip": 4}),
        LOAD,
        CheckpointError,
        ["'frame_skip' is not a setting of EnvPool's 'CartPole-v1'", "max_episode_steps"],
    ),
    (
        "EnvPool setting as a string",
        _edit_config(env="Pong-v5", env_config={"frame_skip": "4"}),
        LOAD,
        CheckpointError,
        ["env_config['frame_skip']='4' (str)", "an int in [1, 100]"],
    ),
    (
        "gymnasium env whose package is missing",
        _edit_config(env="GymV26Environment-v0"),
        LOAD,
        CheckpointError,
        ["building the env 'GymV26Environment-v0' failed", "ImportError"],
    ),
    (
        "env_config is a list",
        _edit_config(env_config=[1]),
        LOAD,
        CheckpointError,
        ["env_config=[1] (list)", "a dict with string keys"],
    ),
    (
        "seed beyond any generator",
        _edit_config(seed=2**80),
        LOAD,
        CheckpointError,
        ["seed=1208925819614629174706176", "[0, 2147483647]"],
    ),
    (
        "layer widths as a string",
        _edit_config(model_config={"fcnet_hiddens": "64"}),
        LOAD,
        CheckpointError,
        ["fcnet_hiddens='64' (str)", "list of ints"],
    ),
    (
        "no path at all",
        lambda w, n: None,
        RESTORE,
        CheckpointError,
        ["a checkpoint path must be a str or path", "NoneType"],
    ),
    # ---- state files of the wrong form
    (
        "state file missing",
        lambda w, n: _unlink(_copy(w, n), "state.msgpack"),
        RESTORE,
        CheckpointError,
        ["state.msgpack", "no such file"],
    ),
    (
        "state is a pickle",
        _replace_file("state.msgpack", lambda t: pickle.dumps({"a": 1})),
        RESTORE,
        CheckpointError,
        ["holds a Python pickle, which rljax never loads"],
    ),
    (
        "state is garbage",
        _replace_file("state.msgpack", lambda t: b"\xc1\xff\x00garbage"),
        RESTORE,
        CheckpointError,
        ["not a valid state file"],
    ),
    (
        "state is a list",
        _replace_file("state.msgpack", lambda t: msgpack.packb([1, 2])),
        RESTORE,
        CheckpointError,
        ["does not match this algorithm at /", "a list"],
    ),
    (
        "kernel of int32",
        _edit_state(lambda s, k: _set_leaf(s, k, _get_leaf(s, k).astype(np.int32))),
        RESTORE,
        CheckpointError,
        ["has dtype int32", "expects float32"],
    ),
    (
        "kernel of complex64",
        _raw_state(lambda s, k: _set_leaf(s, k, _get_leaf(s, k).astype(np.complex64))),
        RESTORE,
        CheckpointError,
        ["holds an array of dtype 'complex64'", "numbers and booleans"],
    ),
    (
        "kernel of object dtype",
        _raw_state(lambda s, k: _set_leaf(s, k, _ext_array((2,), "O", b"\x00" * 16))),
        RESTORE,
        CheckpointError,
        ["holds an array of dtype 'O'"],
    ),
    (
        "kernel is a string",
        _raw_state(lambda s, k: _set_leaf(s, k, "weights")),
        RESTORE,
        CheckpointError,
        ["holds a str", "expects an array of shape"],
    ),
    (
        "array shape that does not fit its bytes",
        _raw_state(lambda s, k: _set_leaf(s, k, _ext_array((1000, 1000), "float32", b"\x00" * 16))),
        RESTORE,
        CheckpointError,
        ["whose data is 16 bytes, not 4000000"],
    ),
    (
        "float PRNG key",
        _edit_state(lambda s, k: s.update(key=s["key"].astype(np.float32))),
        RESTORE,
        CheckpointError,
        ["/key has dtype float32", "expects uint32"],
    ),
    (
        "kernel of the wrong shape",
        _edit_state(lambda s, k: _set_leaf(s, k, np.zeros((3, 3), np.float32))),
        RESTORE,
        CheckpointError,
        ["has shape (3, 3)"],
    ),
    (
        "state without its optimizer",
        _edit_state(lambda s, k: s.pop("opt_state")),
        RESTORE,
        CheckpointError,
        ["expected keys", "opt_state"],
    ),
    # ---- env runner state of the wrong form
    (
        "runners.json is a list",
        _edit_runners(lambda r: [r]),
        RESTORE,
        CheckpointError,
        ["runners.json", "field '/'"],
    ),
    (
        "runner restarts are a string",
        _edit_runners(lambda r: r.update(num_restarts="1")),
        RESTORE,
        CheckpointError,
        ["runners.json", "num_restarts"],
    ),
    (
        "runner entry without its arrays",
        _edit_runners(lambda r: r["runners"][0].pop("arrays") and None),
        RESTORE,
        CheckpointError,
        ["runners[0]", "env, arrays, num_sub_env_restarts"],
    ),
    (
        "env generator state of the wrong type",
        _edit_env_attr(
            "_np_random", lambda v: _set_path(v, ("__generator__", "state", "state"), "x")
        ),
        RESTORE,
        CheckpointError,
        ["runners.json", "CartPoleEnv._np_random"],
    ),
    (
        "env attribute of another type",
        _edit_env_attr("_np_random", lambda v: 7),
        RESTORE,
        CheckpointError,
        ["runners.json", "holds a number where the env holds a __generator__"],
    ),
    (
        "env array of an object dtype",
        _edit_env_attr("state", lambda v: {**v, "__ndarray__": "|O"}),
        RESTORE,
        CheckpointError,
        ["runners.json", "CartPoleEnv.state", "dtype '|O'"],
    ),
    (
        "env array data that is not base64",
        _edit_env_attr("state", lambda v: {**v, "data": "!!!"}),
        RESTORE,
        CheckpointError,
        ["runners.json", "malformed"],
    ),
    (
        "env render mode switched on",
        _edit_env_attr("render_mode", lambda v: "human"),
        RESTORE,
        CheckpointError,
        ["runners.json", "changes its render_mode"],
    ),
    (
        "env attribute shadowing a method",
        _edit_env_attr("step", lambda v: 1),
        RESTORE,
        CheckpointError,
        ["runners.json", "sets 'step', which is not a data attribute"],
    ),
    (
        "dropped runner index of the wrong form",
        _edit_runners(lambda r: r.update(dropped={"x": 1})),
        RESTORE,
        CheckpointError,
        ["field 'dropped'"],
    ),
    (
        "chunked array without chunks",
        _raw_state(
            lambda s, k: _set_leaf(
                s, k, {"__msgpack_chunked_array__": True, "shape": {"0": 0}, "chunks": {}}
            )
        ),
        RESTORE,
        CheckpointError,
        ["holds a malformed chunked array"],
    ),
    (
        "chunked array whose shape wraps around int64",
        _raw_state(
            lambda s, k: _set_leaf(
                s,
                k,
                {
                    "__msgpack_chunked_array__": True,
                    "shape": {"0": 7, "1": 7905747460161236407},
                    "chunks": {"0": np.zeros(1, np.float32)},
                },
            )
        ),
        RESTORE,
        CheckpointError,
        ["chunks do not fit its shape"],
    ),
    (
        "runners.json far larger than any runner state",
        lambda w, n: _truncated(_copy(w, n), "runners.json", 1 << 30),
        RESTORE,
        CheckpointError,
        ["runners.json", "at most 67,108,864"],
    ),
    (
        "env_config opens a window",
        _edit_config(env="CartPole-v1", env_config={"render_mode": "human"}),
        LOAD,
        CheckpointError,
        ["render_mode='human'", "in a loaded config"],
    ),
    (
        "env_config points the env at a file",
        _edit_config(env="CartPole-v1", env_config={"xml_file": "../../etc/passwd"}),
        LOAD,
        CheckpointError,
        ["env_config 'xml_file' is a path"],
    ),
    # ---- YAML config files
    ("YAML alias bomb", _yaml(_alias_bomb()), YAML, ConfigError, ["YAML aliases"]),
    (
        "YAML python tag",
        _yaml("env: !!python/object/apply:os.system ['true']\n"),
        YAML,
        ConfigError,
        ["is not valid YAML"],
    ),
    (
        "YAML env imports subprocess",
        _yaml('env: {import: "subprocess:run"}\n'),
        YAML,
        ConfigError,
        ["env names code to import", "--allow-import subprocess"],
    ),
    (
        "YAML env imports the canary",
        _yaml('env: {import: "rljax_canary:creator"}\n'),
        YAML,
        ConfigError,
        ["rljax_canary"],
    ),
    (
        "YAML nested 10,000 deep",
        _yaml("lr: " + "[" * 10_000 + "]" * 10_000 + "\n"),
        YAML,
        ConfigError,
        ["nested deeper than 64 levels"],
    ),
    ("YAML is a FIFO", _yaml_special("fifo"), YAML, ConfigError, ["not a regular file"]),
    ("YAML over 64 KiB", _yaml_special("big"), YAML, ConfigError, ["at most 65,536"]),
    ("YAML is a list", _yaml("- lr: 0.001\n"), YAML, ConfigError, ["expected a mapping"]),
    (
        "YAML links into /proc",
        lambda w, n: _link(w["root"] / f"{n}.yaml", "/proc/self/environ"),
        YAML,
        ConfigError,
        ["leads into /proc, /sys or /dev"],
    ),
    (
        "YAML error quotes none of the file",
        _yaml(f"[section]\naws_access_key_id = {SECRET}\n: x\n"),
        YAML,
        ConfigError,
        ["is not valid YAML", "at line"],
    ),
]


def _write(path: Path, filename: str, data: bytes) -> Path:
    (path / filename).write_bytes(data)
    return path


def _unlink(path: Path, filename: str) -> Path:
    (_version(path) / filename).unlink()
    return path


def _truncated(path: Path, filename: str, size: int) -> Path:
    """``filename`` grown to ``size`` bytes (sparse: no disk used)."""
    with open(_version(path) / filename, "r+b") as f:
        f.truncate(size)
    return path


def _link(path: Path, target: str) -> Path:
    os.symlink(target, path)
    return path


def _link_version_outside(w, name):
    path = _copy(w, name)
    version = _version(path)
    outside = w["root"] / f"{name}-outside"
    shutil.move(str(version), outside)
    os.symlink(outside, version)
    return path


def _state_fingerprint(algo) -> tuple:
    leaves = [np.asarray(x) for x in jax.tree.leaves(jax.device_get(algo.state))]
    return (
        tuple(leaf.tobytes() for leaf in leaves),
        algo.iteration,
        algo.num_env_steps_sampled_lifetime,
        algo.time_total_s,
        algo._num_evaluations,
    )


def _load(kind: str, w, path: Path):
    if kind == RESTORE:
        return w["algo"].restore_from_path(path)
    if kind == LOAD:
        return Algorithm.from_checkpoint(path)
    return PPOConfig.from_yaml(path)


@pytest.mark.parametrize("name, make, kind, error, words", CASES, ids=[c[0] for c in CASES])
def test_a_crafted_file_is_refused_plainly_and_safely(world, name, make, kind, error, words):
    path = make(world, "".join(c if c.isalnum() else "-" for c in name))
    before = _state_fingerprint(world["algo"])
    with measured() as cost, pytest.raises(error) as info:
        _load(kind, world, path)
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert SECRET not in message
    cost.check(name)
    assert _state_fingerprint(world["algo"]) == before, f"{name}: the algorithm changed"
    assert not world["marker"].exists(), "the canary module was imported"


def test_at_least_forty_crafted_files():
    assert len(CASES) >= 40


# ---------------------------------------------------------------------- the opt-in paths
TRUSTED_MODULE = """
import gymnasium as gym
from os import system as make_env  # re-exported: not defined here

def helper(x):
    return x

class TrustedCartPole(gym.Wrapper):
    def __init__(self, config=None):
        super().__init__(gym.make("CartPole-v1"))


class CliCartPole(TrustedCartPole):  # never registered or passed: only --allow-import opens it
    pass
"""


@pytest.fixture(scope="module")
def code_checkpoint(world):
    """The good checkpoint, with its env named as code: ``rljax_trusted_env:TrustedCartPole``."""
    module_dir = world["root"] / "trusted"
    module_dir.mkdir()
    (module_dir / "rljax_trusted_env.py").write_text(TRUSTED_MODULE)
    sys.path.insert(0, str(module_dir))

    def fn(meta):
        meta["config"]["env"] = {"import": "rljax_trusted_env:TrustedCartPole"}

    path = _edit_meta(fn)(world, "code-env")
    (_version(path) / "runners.json").unlink()  # saved from other env layers
    yield path
    sys.path.remove(str(module_dir))
    sys.modules.pop("rljax_trusted_env", None)


def _loads_and_acts(path: Path, **opt_in) -> None:
    algo = Algorithm.from_checkpoint(path, **opt_in)
    try:
        assert algo.iteration == 0
        obs = np.zeros((3, 4), np.float32)
        np.testing.assert_array_equal(algo.compute_actions(obs), _GOOD_ACTIONS["actions"])
    finally:
        algo.stop()


_GOOD_ACTIONS: dict = {}


def test_code_in_a_checkpoint_loads_only_where_the_caller_opts_in(world, code_checkpoint):
    _GOOD_ACTIONS["actions"] = world["algo"].compute_actions(np.zeros((3, 4), np.float32))
    with pytest.raises(CheckpointError, match="allow_imports=\\['rljax_trusted_env'\\]"):
        Algorithm.from_checkpoint(code_checkpoint)
    assert "rljax_trusted_env" not in sys.modules
    # 1. An allow-listed module prefix.
    _loads_and_acts(code_checkpoint, allow_imports=["rljax_trusted_env"])
    from rljax_trusted_env import TrustedCartPole

    # 2. The object passed in (it replaces whatever the file names).
    _loads_and_acts(code_checkpoint, env=TrustedCartPole)
    # 3. Registered in this process, under any name: found by the import path it was saved as.
    rljax.register_env("trusted-cartpole-for-test", TrustedCartPole)
    _loads_and_acts(code_checkpoint)
    assert not world["marker"].exists()


def test_allow_imports_takes_module_prefixes_only():
    with pytest.raises(ConfigError, match="module prefixes"):
        PPOConfig.from_dict({"lr": 1e-3}, allow_imports=[""])
    with pytest.raises(ConfigError, match="module prefixes"):
        Algorithm.from_checkpoint("/nonexistent", allow_imports=["."])


def test_a_yaml_config_naming_code_loads_with_its_module_allowed(world, code_checkpoint):
    path = world["root"] / "code-env.yaml"
    path.write_text('env: {import: "rljax_trusted_env:TrustedCartPole"}\nlr: 0.0005\n')
    config = PPOConfig.from_yaml(path, allow_imports=["rljax_trusted_env"])
    assert config.env.__name__ == "TrustedCartPole" and config.lr == 5e-4
    assert copy.deepcopy(config).to_dict()["env"] == {"import": "rljax_trusted_env:TrustedCartPole"}


class TinyModule(nn.Module):
    num_outputs: int = 2

    @nn.compact
    def __call__(self, obs):
        return nn.Dense(self.num_outputs)(obs), nn.Dense(1)(obs)[..., 0]


def per_agent(agent_id, episode=None, **kwargs):
    return f"p{agent_id}"


def test_module_classes_and_mapping_fns_load_by_opt_in_only():
    d = (
        PPOConfig()
        .environment("CartPole-v1")
        .rl_module(rl_module_spec=RLModuleSpec(module_class=TinyModule))
        .to_dict()
    )
    d["policy_mapping_fn"] = {"import": f"{__name__}:per_agent"}
    with pytest.raises(ConfigError, match="module_class names code to import"):
        PPOConfig.from_dict(d, policy_mapping_fn=per_agent)
    with pytest.raises(ConfigError, match="policy_mapping_fn names code to import"):
        PPOConfig.from_dict(d, module_class=TinyModule)
    config = PPOConfig.from_dict(d, module_class=TinyModule, policy_mapping_fn=per_agent)
    assert (
        config.rl_module_spec.module_class is TinyModule and config.policy_mapping_fn is per_agent
    )
    # Registered under any name: found by the import path it was saved under, or by that name.
    rljax.register_module_class("tiny-module-for-test", TinyModule)
    rljax.register_policy_mapping_fn("per-agent-for-test", per_agent)
    config = PPOConfig.from_dict(d)
    assert (
        config.rl_module_spec.module_class is TinyModule and config.policy_mapping_fn is per_agent
    )
    d["rl_module_spec"]["module_class"] = "tiny-module-for-test"
    d["policy_mapping_fn"] = "per-agent-for-test"
    config = PPOConfig.from_dict(d)
    assert (
        config.rl_module_spec.module_class is TinyModule and config.policy_mapping_fn is per_agent
    )


def test_an_allowed_module_opens_only_what_it_defines(code_checkpoint):
    """An allowed prefix is not a way into what the module imports: a path must name an object
    defined in that module, under that name, of the field's kind."""
    base = PPOConfig().environment("CartPole-v1").to_dict()
    allowed = {"allow_imports": ["rljax_trusted_env"]}
    for path, words in [
        ("rljax_trusted_env:gym.os.system", "reaches a module"),
        ("rljax_trusted_env:make_env", "which is not defined there"),
        ("rljax_trusted_env:TrustedCartPole.reset", "which is not defined there"),
        ("rljax_trusted_env:gym", "reaches a module"),
    ]:
        with pytest.raises(ConfigError, match=words):
            PPOConfig.from_dict({**base, "env": {"import": path}}, **allowed)
    with pytest.raises(ConfigError, match="which is not a function"):
        PPOConfig.from_dict(
            {**base, "policy_mapping_fn": {"import": "rljax_trusted_env:TrustedCartPole"}},
            **allowed,
        )
    config = PPOConfig.from_dict({**base, "env": {"import": "rljax_trusted_env:helper"}}, **allowed)
    assert config.env.__name__ == "helper"
    assert not Path("/tmp/rljax-pwned").exists()


def test_the_cli_imports_config_code_only_under_allow_import(world, code_checkpoint, capsys):
    from rljax.cli import build_config, main, make_parser

    path = world["root"] / "cli-code-env.yaml"
    path.write_text('env: {import: "rljax_trusted_env:CliCartPole"}\n')
    assert main(["train", "--config", str(path), "--stop-iters", "1"]) == 2
    err = capsys.readouterr().err
    assert "rljax: error:" in err and "--allow-import rljax_trusted_env" in err
    args = make_parser().parse_args(
        ["train", "--config", str(path), "--allow-import", "rljax_trusted_env"]
    )
    assert build_config(args).env.__name__ == "CliCartPole"
    cli_checkpoint = world["root"] / "cli-code-env"
    shutil.copytree(code_checkpoint, cli_checkpoint)
    meta_file = _version(cli_checkpoint) / "rljax_checkpoint.json"
    meta = json.loads(meta_file.read_text())
    meta["config"]["env"] = {"import": "rljax_trusted_env:CliCartPole"}
    meta_file.write_text(json.dumps(meta))
    assert main(["evaluate", str(cli_checkpoint)]) == 2
    assert "--allow-import rljax_trusted_env" in capsys.readouterr().err


def test_a_checkpoint_with_dropped_runners_does_not_drop_them_here(world, caplog):
    """A saved run's dropped runners are dropped again only where this run drops runners
    (ignore_env_runner_failures); otherwise the envs start new episodes and all runners work."""
    import logging

    _WORLD.update(world)
    path = _edit_runners(lambda r: r.update(dropped={"0": "x" * 100_000}))(world, "dropped-all")
    with caplog.at_level(logging.WARNING, logger="rljax"):
        world["algo"].restore_from_path(path)
    assert "this run does not drop runners" in caplog.text
    assert world["algo"]._runners.num_healthy == 1 and not world["algo"]._runners.dropped


def test_a_replay_buffer_with_impossible_counters_or_priorities_is_refused(tmp_path):
    algo = (
        DQNConfig()
        .environment(ENV)
        .training(replay_buffer_config={"capacity": 64, "type": "PrioritizedEpisodeReplayBuffer"})
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=1)
        .build_algo()
    )
    try:
        good = Path(algo.save_to_path(tmp_path / "dqn", include_replay_buffer=True))
        raw = (_version(good) / "state.msgpack").read_bytes()
        before = [np.asarray(x).tobytes() for x in jax.tree.leaves(jax.device_get(algo.state))]
        cases = {
            "size": lambda b: b.update(size=np.full_like(b["size"], -100)),
            "insert_pos": lambda b: b.update(insert_pos=np.full_like(b["insert_pos"], 10**6)),
            "sum_tree": lambda b: b["sum_tree"].__setitem__(
                "0", np.full_like(b["sum_tree"]["0"], np.nan)
            ),
            "max_priority": lambda b: b.update(max_priority=np.zeros_like(b["max_priority"])),
        }
        for name, edit in cases.items():
            state = flax.serialization.msgpack_restore(raw)
            edit(state["state"]["buffer"])
            bad = tmp_path / f"dqn-{name}"
            shutil.copytree(good, bad)
            (_version(bad) / "state.msgpack").write_bytes(
                flax.serialization.msgpack_serialize(state)
            )
            with pytest.raises(CheckpointError, match=f"replay buffer's {name}"):
                algo.restore_from_path(bad)
        after = [np.asarray(x).tobytes() for x in jax.tree.leaves(jax.device_get(algo.state))]
        assert after == before
    finally:
        algo.stop()
