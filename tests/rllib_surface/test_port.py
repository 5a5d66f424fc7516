"""``rljax port``: an RLlib script's imports rewritten to rljax's, and nothing else."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from rljax.utils.port import port_source

SCRIPT = '''"""Docs live at https://docs.ray.io/en/latest/rllib (left alone)."""
import ray
from ray import air, tune
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS
from ray.tune.registry import register_env, get_trainable_cls
from ray.air.constants import TRAINING_ITERATION
import ray.rllib.algorithms.dqn as dqn

ray.init(
    num_cpus=2,
    local_mode=True,
)


def main():
    config = ray.rllib.algorithms.ppo.PPOConfig()
    tuner = tune.Tuner("PPO", run_config=air.RunConfig(stop={TRAINING_ITERATION: 1}))
    ray.shutdown()
    return config, tuner, dqn
'''


def test_port_rewrites_imports_and_drops_ray_init():
    ported = port_source(SCRIPT)
    lines = ported.source.splitlines()
    assert "from rljax import tune as air, tune" in lines
    assert "from rljax.algorithms.ppo import PPOConfig" in lines
    assert "from rljax.utils.metrics import ENV_RUNNER_RESULTS" in lines
    assert "from rljax.tune.registry import register_env, get_trainable_cls" in lines
    assert "from rljax.tune.result import TRAINING_ITERATION" in lines
    assert "import rljax.algorithms.dqn as dqn" in lines
    assert "    config = rljax.algorithms.ppo.PPOConfig()" in lines
    # ray.init(...) over four lines and ray.shutdown() become one `pass` each; `import ray`
    # is `import rljax` (the dotted name above needs it), since nothing of ray is left.
    assert lines.count("pass") == 1 and lines.count("    pass") == 1
    assert "import rljax  # (rljax port)" in lines
    assert "ray.init" not in ported.source and "import ray\n" not in ported.source
    assert "https://docs.ray.io/en/latest/rllib" in ported.source
    assert ported.notes == []
    ast.parse(ported.source)


def test_port_maps_ray_train_names_to_rljax_tune_and_the_port_runs():
    source = (
        "from ray import train\n"
        "from ray.train import RunConfig, FailureConfig\n"
        "a = train.RunConfig(failure_config=train.FailureConfig(max_failures=2))\n"
        "b = RunConfig(failure_config=FailureConfig(fail_fast=True))\n"
    )
    ported = port_source(source)
    lines = ported.source.splitlines()
    assert lines[:2] == [
        "from rljax import tune as train",
        "from rljax.tune import RunConfig, FailureConfig",
    ]
    assert ported.notes == []
    names: dict = {}
    exec(compile(ported.source, "<ported>", "exec"), names)  # noqa: S102 - our own test text
    assert names["a"].failure_config.max_failures == 2
    assert names["b"].failure_config.fail_fast is True


def test_port_notes_what_rljax_has_no_counterpart_for():
    ported = port_source("import ray\nimport ray.data\nds = ray.data.range(3)\n")
    assert "import ray\n" in ported.source  # still used: kept
    assert ported.notes == [
        "line 2: `import ray.data` has no rljax counterpart",
        "line 3: `ray.data.range` has no rljax counterpart",
    ]


def test_port_rewrites_statements_not_lines():
    source = (
        "import ray\n"
        "ray.init(); x = 1\n"
        "if x: ray.init(num_cpus=2)\n"
        "from ray import tune  # Ray's Tune\n"
        "from ray import (\n"
        "    tune as t,\n"
        "    rllib,\n"
        ")\n"
        "print(x, tune, t, rllib)\n"
    )
    ported = port_source(source)
    assert ported.source == (
        "import rljax  # (rljax port)\n"
        "pass; x = 1\n"
        "if x: pass\n"
        "from rljax import tune  # Ray's Tune\n"
        "from rljax import tune as t; import rljax as rllib\n"
        "print(x, tune, t, rllib)\n"
    )
    assert ported.notes == []
    namespace: dict = {}
    exec(compile(ported.source, "ported.py", "exec"), namespace)
    assert namespace["x"] == 1 and namespace["t"] is namespace["tune"]


@pytest.mark.slow
def test_rljax_port_cli_writes_the_file_and_refuses_what_is_not_python(tmp_path):
    src = tmp_path / "script.py"
    src.write_text("from ray.rllib.algorithms.ppo import PPOConfig\nprint(PPOConfig.__module__)\n")
    out = tmp_path / "ported.py"
    run = [sys.executable, "-m", "rljax.cli", "port"]
    done = subprocess.run([*run, str(src), "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    executed = subprocess.run([sys.executable, str(out)], capture_output=True, text=True)
    assert executed.stdout.strip() == "rljax.algorithms.ppo.ppo", executed.stderr
    src.write_text("def broken(:\n")
    bad = subprocess.run([*run, str(src)], capture_output=True, text=True)
    assert bad.returncode == 2 and "is not valid Python" in bad.stderr


def test_port_names_torch_initializers_and_drops_the_import_they_needed():
    source = (
        "from torch import nn\n"
        "import torch.nn as tnn\n"
        "import torch\n"
        "from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig\n"
        "m = DefaultModelConfig(\n"
        "    fcnet_kernel_initializer=nn.init.xavier_uniform_,\n"
        "    head_fcnet_kernel_initializer=tnn.init.orthogonal_,\n"
        "    fcnet_bias_initializer=torch.nn.init.zeros_,\n"
        ")\n"
    )
    ported = port_source(source)
    lines = ported.source.splitlines()
    assert lines[:3] == ["pass", "pass", "pass"]  # no torch left to import
    assert "    fcnet_kernel_initializer='xavier_uniform_'," in lines
    assert "    head_fcnet_kernel_initializer='orthogonal_'," in lines
    assert "    fcnet_bias_initializer='zeros_'," in lines
    assert any("`nn.init.xavier_uniform_` -> 'xavier_uniform_'" in n for n in ported.notes)
    namespace: dict = {}
    exec(compile(ported.source, "ported", "exec"), namespace)  # runs without torch
    config = namespace["m"]
    assert config.fcnet_kernel_initializer == "xavier_uniform"
    assert config.head_fcnet_kernel_initializer == "orthogonal"
    # torch used for anything else keeps its import (guarded: PyTorch where installed, else
    # the stand-in that names each use); only the initializer names change.
    kept = port_source(
        "import torch\nx = torch.zeros(2)\ny = dict(bias_initializer=torch.nn.init.ones_)\n"
    ).source
    assert kept.splitlines()[:2] == ["try:", "    import torch"]
    assert kept.splitlines()[-2:] == [
        "x = torch.zeros(2)",
        "y = dict(bias_initializer='ones_')",
    ]
    # Only a model config's initializer setting is rewritten: calls and other uses stay.
    calls = (
        "import functools\nfrom torch import nn\n"
        "nn.init.xavier_uniform_(w)\n"
        "init = functools.partial(nn.init.normal_, std=0.01)\n"
        "c = {'fcnet_kernel_initializer': nn.init.orthogonal_}\n"
    )
    lines = port_source(calls).source.splitlines()
    assert lines[1:4] == [
        "from torch import nn",
        "nn.init.xavier_uniform_(w)",
        "init = functools.partial(nn.init.normal_, std=0.01)",
    ]
    assert lines[4] == "c = {'fcnet_kernel_initializer': 'orthogonal_'}"
    untouched = "from torch import nn\nlayer = nn.Linear(2, 2)\n"
    assert port_source(untouched).source == untouched
