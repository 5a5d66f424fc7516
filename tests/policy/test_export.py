"""Policies for serving and watching: the exported StableHLO programs loaded with JAX alone give
the algorithm's actions bit for bit; RLModule.from_checkpoint builds no env; evaluation videos
decode and hold each episode's frames."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import rljax.env.vector as vector
from rljax.algorithms.algorithm import Algorithm
from rljax.algorithms.ppo import PPOConfig
from rljax.cli import main
from rljax.core.rl_module.rl_module import RLModule
from rljax.utils.errors import ConfigError


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A PPO CartPole policy after one short iteration on EnvPool, and its checkpoint."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=4, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    algo.train()
    ckpt = algo.save_to_path(tmp_path_factory.mktemp("ckpt") / "ckpt")
    yield algo, ckpt
    algo.stop()


def _loader_source() -> str:
    """The loader module's code below its docstring, as a user copies it into a program that
    has no rljax."""
    import rljax.policy.loader as loader

    source = Path(loader.__file__).read_text()
    return source[source.index('"""', 3) + 3 :]


def _observations(n: int) -> np.ndarray:
    return np.random.default_rng(n).uniform(-0.2, 0.2, (n, 4)).astype(np.float32)


def test_exported_policy_loads_with_jax_alone_and_acts_as_the_algorithm(trained, tmp_path):
    algo, _ = trained
    out = algo.export_policy(tmp_path / "policy")
    meta = json.loads((tmp_path / "policy" / "policy.json").read_text())
    assert meta["observation_space"]["shape"] == [4] and meta["action_space"]["n"] == 2
    assert meta["observation_dtype"] == "float32" and meta["action_dtype"] == "int32"
    expected = {n: algo.compute_actions(_observations(n)).tolist() for n in (1, 5, 9)}
    script = f"""
import builtins, json, sys
real_import = builtins.__import__
def guarded(name, *args, **kwargs):
    if name.split(".")[0] in ("rljax", "flax", "envpool", "optax", "gymnasium"):
        raise ImportError("not allowed here: " + name)
    return real_import(name, *args, **kwargs)
builtins.__import__ = guarded
{_loader_source()}
import jax
import numpy as np
policy = load_exported({out!r})
sample = load_exported({out!r}, explore=True)
out = {{}}
for n in (1, 5, 9):
    obs = np.random.default_rng(n).uniform(-0.2, 0.2, (n, 4)).astype(np.float32)
    out[n] = policy(obs).tolist()
    assert sample(obs, jax.random.PRNGKey(n)).shape == (n,)
try:  # one observation, not a batch: named, with the fix
    policy(obs[0])
    raise AssertionError("an unbatched observation was taken")
except ValueError as e:
    assert "takes a batch of observations, shape (batch, 4); got shape (4,)" in str(e), e
    assert "obs[None]" in str(e), e
print(json.dumps(out))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = {int(k): v for k, v in json.loads(proc.stdout.splitlines()[-1]).items()}
    assert got == expected  # any batch size, the same actions


def test_export_policy_model_is_rllibs_name_of_export_policy(trained, tmp_path):
    algo, _ = trained
    out = algo.export_policy_model(tmp_path / "model")
    assert Path(out, "policy.json").is_file()
    assert json.loads(Path(out, "policy.json").read_text())["action_space"]["n"] == 2
    with pytest.raises(
        ConfigError, match=r"export_policy_model\(onnx=11\): rljax exports StableHLO"
    ):
        algo.export_policy_model(tmp_path / "onnx", onnx=11)
    # False (or 0) asks for no ONNX, as in RLlib (`if onnx:`); it was refused.
    assert Path(algo.export_policy_model(tmp_path / "plain", onnx=False), "policy.json").is_file()


def test_exported_sampling_matches_the_algorithms_sampling_bit_for_bit(trained, tmp_path):
    algo, _ = trained
    from jax import export

    algo.export_policy(tmp_path / "p", platforms=("cpu",))
    program = export.deserialize((tmp_path / "p" / "policy_sample.stablehlo").read_bytes())
    obs = _observations(64)
    key = jax.random.PRNGKey(3)
    infer = jax.jit(algo.parts.inference(None, True))
    params = algo.parts.inference_params(algo.state, None)
    expected = np.asarray(infer(params, obs, key)[1])
    got = np.asarray(program.call(obs, key))
    np.testing.assert_array_equal(got, expected)
    assert 0 < got.mean() < 1  # a sample, not the mode


def test_rl_module_from_checkpoint_builds_no_env(trained, monkeypatch):
    algo, ckpt = trained

    def refuse(*args, **kwargs):
        raise AssertionError("loading a module must not build or inspect an env")

    for name in ("make_envpool", "make_host_env", "env_spaces", "resolve_env"):
        monkeypatch.setattr(vector, name, refuse)
    import rljax.algorithms.algorithm as algorithm_module
    import rljax.execution.evaluation as evaluation_module
    import rljax.runners.build as build_module

    # Each module that builds or inspects envs, as it names the functions.
    for module in (algorithm_module, evaluation_module, build_module):
        for name in ("make_envpool", "env_spaces", "resolve_env", "make_host_env"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, refuse)
    module = RLModule.from_checkpoint(ckpt)
    rllib_path = f"{ckpt}/learner_group/learner/rl_module/default_policy"
    same = RLModule.from_checkpoint(rllib_path)
    obs = _observations(16)
    expected = algo.get_module().forward_inference({"obs": obs})
    for m in (module, same):
        got = m.forward_inference({"obs": obs})
        np.testing.assert_array_equal(got["actions"], expected["actions"])
        np.testing.assert_array_equal(got["action_dist_inputs"], expected["action_dist_inputs"])
    assert isinstance(module, RLModule) and module._algo._runners is None


@pytest.mark.slow
def test_cli_export_and_evaluate_with_video(trained, tmp_path, capsys):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")

    _, ckpt = trained
    assert main(["export", str(ckpt), str(tmp_path / "exp")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["files"] == ["policy.json", "policy_greedy.stablehlo", "policy_sample.stablehlo"]
    videos = tmp_path / "videos"
    assert main(["evaluate", str(ckpt), "--episodes", "2", "--video", str(videos)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["episodes"] == 2 and len(out["videos"]) == 2
    algo = Algorithm.from_checkpoint(ckpt)
    try:
        algo.config = algo.config.copy()  # the built one is read-only, as RLlib's
        algo.config.evaluation_duration = 3  # a video each (the default, 10, renders 10)
        result = algo.evaluate(record_video=tmp_path / "again")
    finally:
        algo.stop()
    lens = result["env_runners"]["episode_lens"]
    assert len(result["videos"]) == algo.config.evaluation_duration == len(lens)
    for path, n in zip(result["videos"], lens, strict=True):
        reader = imageio_ffmpeg.read_frames(path)
        meta = next(reader)  # decoded by ffmpeg: every frame, then their count
        frames = [np.frombuffer(f, np.uint8) for f in reader]
        assert meta["size"] == (600, 400)
        assert len(frames) == n + 1  # the reset's frame, then one per step
        assert frames[0].std() > 0
    assert re.fullmatch(r".*/episode-\d+\.mp4", result["videos"][0])


def test_recording_refuses_what_it_cannot_record(trained, tmp_path):
    algo, _ = trained
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="a file is there"):
        algo.evaluate(record_video=tmp_path / "file")


def test_an_env_that_does_not_render_frames_is_refused_by_name():
    import gymnasium as gym

    from rljax.env.vector import resolve_env
    from rljax.execution.video import rendering_env

    class NoFrames(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, config=None):
            self.render_mode = (config or {}).get("render_mode")

    with pytest.raises(ConfigError, match=r"NoFrames.* has render_mode=None"):
        rendering_env(resolve_env(NoFrames))


@pytest.mark.slow
def test_multi_agent_policies_load_and_export_one_by_one(tmp_path):
    from jax import export

    from rljax.examples.envs.classes.multi_agent import MultiAgentCartPole

    config = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(num_envs_per_env_runner=2, rollout_fragment_length=32)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        # Not in sorted order: the checkpoint's JSON sorts the config's keys, and loading puts
        # the policies back in the run's order (the state stacks them in it).
        .multi_agent(policies=["p1", "p0"], policy_mapping_fn=_policy_of_agent)
        .debugging(seed=0)
    )
    obs = _observations(5)
    with config.build_algo() as algo:
        algo.train()
        ckpt = algo.save_to_path(tmp_path / "ckpt")
        for pid in ("p0", "p1"):
            expected = algo.compute_actions(obs, policy_id=pid)
            module = RLModule.from_checkpoint(f"{ckpt}/learner_group/learner/rl_module/{pid}")
            np.testing.assert_array_equal(module.forward_inference(obs)["actions"], expected)
            out = algo.export_policy(tmp_path / pid, policy_id=pid)
            program = export.deserialize((tmp_path / pid / "policy_greedy.stablehlo").read_bytes())
            np.testing.assert_array_equal(np.asarray(program.call(obs)), expected)
            assert json.loads((tmp_path / pid / "policy.json").read_text())["policy_id"] == pid
            assert out == str(tmp_path / pid)
    restored = Algorithm.from_checkpoint(ckpt, policy_mapping_fn=_policy_of_agent)
    try:
        assert restored._policy_ids() == ["p1", "p0"]
        for pid in ("p0", "p1"):
            np.testing.assert_array_equal(
                restored.get_module(pid).forward_inference(obs)["action_dist_inputs"],
                RLModule.from_checkpoint(ckpt, policy_id=pid).forward_inference(obs)[
                    "action_dist_inputs"
                ],
            )
    finally:
        restored.stop()


def _policy_of_agent(agent_id, episode=None, **kwargs):
    return f"p{agent_id}"
